"""Bridge 0.6.2's own batching code, loaded by path from its wheel, for index-for-index comparisons.

Stand-ins, and why they are honest:
* ``datasets/gpt_sft.py`` (the base ``GPTSFTDataset`` whose ``_collate_item``/``_ceil_to_nearest`` the packed
  collate uses) is loaded for real; only the imports it needs for *unpacked* data (chat preprocessing, JSONL
  memmap, prompt-completion tokenization, the tokenizer class used as a type) are stand-ins.
* The tokenizer passed in is an object with ``eos_id``: the packed collate reads nothing else from it.
* ``megatron.core.msc_utils`` is the real megatron-core 0.16.1 module (multi-storage client off).
"""

from __future__ import annotations

import functools
import types
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from _support.peers import bridge_wheel_root, load_module_by_path


@dataclass
class EosTokenizer:
    """The one tokenizer attribute Bridge's packed collate reads."""

    eos_id: int


def _unused(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError("not used on the packed path")


@functools.cache
def bridge_packing_modules() -> types.SimpleNamespace:
    """``paths``, ``gpt_sft`` (packed) and ``parquet`` modules of Bridge 0.6.2's ``data/packing``."""
    pytest.importorskip("megatron.core")
    pytest.importorskip("datasets")
    import megatron.core.msc_utils  # noqa: F401  (real; must exist before stand-ins under megatron.*)

    data = bridge_wheel_root() / "megatron" / "bridge" / "data"
    tokenizer_stub = {"megatron.bridge.training.tokenizers.tokenizer": {"MegatronTokenizer": object}}
    state = np.random.get_state()
    try:
        base = load_module_by_path(
            data / "datasets" / "gpt_sft.py",
            "bridge_datasets_gpt_sft",
            stubs={
                "megatron.bridge.data.datasets.utils": dict.fromkeys(
                    [
                        "_chat_preprocess",
                        "_get_samples_mapping",
                        "_JSONLMemMapDataset",
                        "_OnlineSampleMapping",
                        "_preprocess",
                        "_tokenize",
                    ],
                    _unused,
                ),
                "megatron.bridge.data.sft_processing": {
                    "PromptCompletionSFTPreprocessingConfig": object,
                    "sft_example_metadata": _unused,
                    "tokenize_prompt_completion_example": _unused,
                },
                "megatron.bridge.data.token_utils": {"extract_skipped_token_ids": _unused},
                **tokenizer_stub,
            },
        )
        safe_pickle = load_module_by_path(
            bridge_wheel_root() / "megatron" / "bridge" / "utils" / "safe_pickle.py", "bridge_safe_pickle"
        )
        packed = load_module_by_path(
            data / "packing" / "gpt_sft.py",
            "bridge_packing_gpt_sft",
            stubs={
                "megatron.bridge.data.datasets.gpt_sft": {"GPTSFTDataset": base.GPTSFTDataset},
                "megatron.bridge.utils.safe_pickle": {"safe_load_npy": safe_pickle.safe_load_npy},
                **tokenizer_stub,
            },
        )
        paths = load_module_by_path(data / "packing" / "paths.py", "bridge_packing_paths")
        parquet = load_module_by_path(
            data / "packing" / "parquet.py",
            "bridge_packing_parquet",
            stubs={
                "megatron.bridge.data.packing.gpt_sft": {"GPTSFTPackedDataset": packed.GPTSFTPackedDataset},
                "megatron.bridge.data.packing.paths": {
                    "_resolve_parquet_paths": paths._resolve_parquet_paths
                },
            },
        )
    finally:
        np.random.set_state(state)
    return types.SimpleNamespace(paths=paths, gpt_sft=packed, parquet=parquet)


def bridge_parquet_dataset(path: str, eos_id: int, **kwargs: Any) -> Any:
    """Bridge's ``GPTSFTPackedParquetDataset`` over ``path``, built with the builder's defaults."""
    mods = bridge_packing_modules()
    state = np.random.get_state()
    try:
        return mods.parquet.GPTSFTPackedParquetDataset(
            file_path=path,
            tokenizer=EosTokenizer(eos_id),
            prompt_template="{input} {output}",
            label_key="output",
            truncation_field="input",
            **kwargs,
        )
    finally:
        np.random.set_state(state)


def bridge_module(
    relative: str, name: str, stubs: dict[str, dict[str, Any]] | None = None
) -> types.ModuleType:
    """Any other file of the wheel's ``megatron/bridge`` tree, loaded by path."""
    return load_module_by_path(bridge_wheel_root() / "megatron" / "bridge" / relative, name, stubs=stubs)


#: The last release with the legacy collate keys (``cu_seqlens`` padded with -1, ``cu_seqlens_argmin``).
LEGACY_BRIDGE_VERSION = "0.5.1"


@functools.cache
def legacy_packed_dataset_cls(version: str = LEGACY_BRIDGE_VERSION) -> Any:
    """Bridge 0.5.1's (or an earlier ``version``'s) ``GPTSFTPackedDataset`` (``data/datasets/sft.py``), for
    the legacy collate keys.

    That file holds the base dataset too; the imports it needs only for unpacked data are stand-ins.
    """
    pytest.importorskip("megatron.core")
    pytest.importorskip("datasets")
    import megatron.core.msc_utils  # noqa: F401

    path = bridge_wheel_root(version) / "megatron" / "bridge" / "data" / "datasets" / "sft.py"
    utils_names = ["_chat_preprocess", "_get_samples_mapping", "_JSONLMemMapDataset", "_OnlineSampleMapping",
                   "_preprocess", "_tokenize"]  # fmt: skip
    module = load_module_by_path(
        path,
        f"bridge_{version.replace('.', '')}_sft",
        stubs={
            "megatron.bridge.data.datasets.utils": dict.fromkeys(utils_names, _unused),
            "megatron.bridge.training.tokenizers.tokenizer": {"MegatronTokenizer": object},
            "megatron.bridge.utils.safe_pickle": {"safe_load_npy": _unused},
        },
    )
    return module.GPTSFTPackedDataset


def collate_only(
    cls: Any, eos_id: int, metadata: list[dict[str, Any]] | None = None, **attributes: Any
) -> Any:
    """An instance of a Bridge packed dataset class with just what ``collate_fn`` reads set.

    Its ``__init__`` (which opens a data file) is skipped; ``collate_fn`` and the helpers it calls
    (``_build_loss_mask``, ``_collate_item``, ``_ceil_to_nearest``) run unchanged.
    """
    instance = cls.__new__(cls)
    defaults = {
        "ceil_to_power_2": False,
        "return_cu_seqlen": True,
        "answer_only_loss": True,
        "pack_metadata": metadata,
    }
    instance.__dict__.update(tokenizer=EosTokenizer(eos_id), **defaults, **attributes)
    return instance
