"""bridgepack: sequence packing and long-context training checks for Megatron-Bridge users.

The main jobs, as functions with typed arguments and result objects (the way ``pyarrow.parquet`` offers its
jobs)::

    bridgepack.pack(inputs, out_dir, pack_size, ...)      -> PackResult     bridgepack pack
    bridgepack.inspect(path, dp=..., gbs=...)             -> Inspection     bridgepack inspect
    bridgepack.check_config(config, overrides, ...)       -> Report         bridgepack doctor
    bridgepack.compare_curves(reference, *candidates)     -> [Comparison]   bridgepack curves compare
    bridgepack.pack_lengths(lengths, pack_size, ...)      -> PackPlan       the packing algorithms alone

and the batching entry points (``PackedDataset``, ``PackedCollator``, ``GlobalBatchSampler``,
``pack_in_batch``, ``partition_thd``, ``to_packed_seq_params``). They load on first use, so ``import
bridgepack`` (and every command's start-up) stays light; a type checker and an IDE read them from the
``TYPE_CHECKING`` imports below, which say the same as ``_PUBLIC`` (``tests/test_api.py`` holds them equal).
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from bridgepack.errors import BridgepackError, DataError, InputError, UsageError

if TYPE_CHECKING:  # never at run time: each name is loaded on first access (``__getattr__``)
    from bridgepack._api import check_config as check_config
    from bridgepack._api import compare_curves as compare_curves
    from bridgepack._api import inspect as inspect
    from bridgepack._pack import pack as pack
    from bridgepack.batching import GlobalBatchSampler as GlobalBatchSampler
    from bridgepack.batching import PackedCollator as PackedCollator
    from bridgepack.batching import PackedDataset as PackedDataset
    from bridgepack.batching import pack_in_batch as pack_in_batch
    from bridgepack.batching import partition_thd as partition_thd
    from bridgepack.batching import to_packed_seq_params as to_packed_seq_params
    from bridgepack.packing import CostModel as CostModel
    from bridgepack.packing import ModelDims as ModelDims
    from bridgepack.packing import PackPlan as PackPlan
    from bridgepack.packing import pack_lengths as pack_lengths

try:
    __version__ = version("bridgepack")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"

#: Public name -> the module that defines it (loaded on first access).
_PUBLIC = {
    "pack": "bridgepack._pack",
    **dict.fromkeys(("inspect", "check_config", "compare_curves"), "bridgepack._api"),
    **dict.fromkeys(("pack_lengths", "PackPlan", "CostModel", "ModelDims"), "bridgepack.packing"),
    **dict.fromkeys(
        (
            "PackedDataset",
            "PackedCollator",
            "GlobalBatchSampler",
            "pack_in_batch",
            "partition_thd",
            "to_packed_seq_params",
        ),
        "bridgepack.batching",
    ),
}

__all__ = ["DataError", "InputError", "BridgepackError", "UsageError", "__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'bridgepack' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
