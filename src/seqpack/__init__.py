"""seqpack: sequence packing and long-context training checks for Megatron-Bridge users.

The main jobs, as functions with typed arguments and result objects (the way ``pyarrow.parquet`` offers its
jobs)::

    seqpack.pack(inputs, out_dir, pack_size, ...)      -> PackResult     seqpack pack
    seqpack.inspect(path, dp=..., gbs=...)             -> Inspection     seqpack inspect
    seqpack.check_config(config, overrides, ...)       -> Report         seqpack doctor
    seqpack.compare_curves(reference, *candidates)     -> [Comparison]   seqpack curves compare
    seqpack.pack_lengths(lengths, pack_size, ...)      -> PackPlan       the packing algorithms alone

and the batching entry points (``PackedDataset``, ``PackedCollator``, ``GlobalBatchSampler``,
``pack_in_batch``, ``partition_thd``, ``to_packed_seq_params``). They load on first use, so ``import
seqpack`` (and every command's start-up) stays light; a type checker and an IDE read them from the
``TYPE_CHECKING`` imports below, which say the same as ``_PUBLIC`` (``tests/test_api.py`` holds them equal).
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from seqpack.errors import DataError, InputError, SeqpackError, UsageError

if TYPE_CHECKING:  # never at run time: each name is loaded on first access (``__getattr__``)
    from seqpack._api import check_config as check_config
    from seqpack._api import compare_curves as compare_curves
    from seqpack._api import inspect as inspect
    from seqpack._pack import pack as pack
    from seqpack.batching import GlobalBatchSampler as GlobalBatchSampler
    from seqpack.batching import PackedCollator as PackedCollator
    from seqpack.batching import PackedDataset as PackedDataset
    from seqpack.batching import pack_in_batch as pack_in_batch
    from seqpack.batching import partition_thd as partition_thd
    from seqpack.batching import to_packed_seq_params as to_packed_seq_params
    from seqpack.packing import CostModel as CostModel
    from seqpack.packing import ModelDims as ModelDims
    from seqpack.packing import PackPlan as PackPlan
    from seqpack.packing import pack_lengths as pack_lengths

try:
    __version__ = version("seqpack")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"

#: Public name -> the module that defines it (loaded on first access).
_PUBLIC = {
    "pack": "seqpack._pack",
    **dict.fromkeys(("inspect", "check_config", "compare_curves"), "seqpack._api"),
    **dict.fromkeys(("pack_lengths", "PackPlan", "CostModel", "ModelDims"), "seqpack.packing"),
    **dict.fromkeys(
        (
            "PackedDataset",
            "PackedCollator",
            "GlobalBatchSampler",
            "pack_in_batch",
            "partition_thd",
            "to_packed_seq_params",
        ),
        "seqpack.batching",
    ),
}

__all__ = ["DataError", "InputError", "SeqpackError", "UsageError", "__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'seqpack' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
