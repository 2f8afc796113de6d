"""``--bridge-compat`` output equals Megatron-Bridge 0.6.2's own offline packing, row for row.

Bridge's steps run from its wheel: ``_pre_pad_data_point`` (offline.py, for M > 1), then ``create_hist``,
``create_packing_strategy`` and ``fill_packing_strategy`` (algorithms.py) under ``np.random.seed(seed)``,
exactly as ``prepare_gpt_sft_packed_data`` calls them. bridgepack packs the same stored examples from JSONL.
"""

from __future__ import annotations

import copy
import json
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _support.pack_inputs import EOS, random_examples, read_rows, run, write_jsonl
from _support.peers import bridge_algorithms, bridge_wheel_root, load_module_by_path

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def bridge() -> tuple[types.ModuleType, types.ModuleType]:
    algorithms = bridge_algorithms()
    path = bridge_wheel_root() / "megatron" / "bridge" / "data" / "packing" / "offline.py"
    offline = load_module_by_path(
        path,
        "bridge_packing_offline",
        stubs={
            # offline.py imports these at module level; _pre_pad_data_point uses none of them.
            "torch": {},
            "megatron.core.msc_utils": {"MultiStorageClientFeature": object},
            "megatron.bridge.data.packing.algorithms": {
                "create_hist": algorithms.create_hist,
                "create_packing_strategy": algorithms.create_packing_strategy,
                "fill_packing_strategy": algorithms.fill_packing_strategy,
            },
            "megatron.bridge.training.tokenizers.tokenizer": {"MegatronTokenizer": object},
        },
    )
    return algorithms, offline


def bridge_pack(
    bridge: tuple[types.ModuleType, types.ModuleType],
    examples: list[dict[str, Any]],
    pack_size: int,
    max_len: int,
    mult: int,
    algorithm: str,
    seed: int,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Bridge's tokenize_dataset tail + prepare_gpt_sft_packed_data steps on stored examples."""
    algorithms, offline = bridge
    data = copy.deepcopy(examples)
    if mult > 1:
        cap = max_len // mult * mult
        for item in data:
            runtime = max(len(item["input_ids"]) - 1, 0)
            target = min(cap, -(-runtime // mult) * mult)
            offline._pre_pad_data_point(item, max_len, target + 1, EOS)
    sequences, histogram = algorithms.create_hist(data, max_len)
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        assignments, metadata = algorithms.create_packing_strategy(histogram, pack_size, algorithm)
        rows = algorithms.fill_packing_strategy(assignments, sequences, pack_size, EOS)
    finally:
        np.random.set_state(state)
    return rows, metadata


CASES = [
    # (samples, pack size, max length, M, algorithm, seed)
    (300, 64, 64, 1, "first_fit_shuffle", 0),
    (300, 64, 48, 1, "first_fit_decreasing", 3),
    (250, 128, 128, 4, "first_fit_shuffle", 7),
    (250, 128, 100, 8, "first_fit_decreasing", 0),
    (200, 96, 96, 2, "first_fit_shuffle", 1234),
]


@pytest.mark.parametrize(("n", "pack_size", "max_len", "mult", "algorithm", "seed"), CASES)
def test_compat_rows_and_metadata_equal_bridge(
    bridge: tuple[types.ModuleType, types.ModuleType],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    n: int,
    pack_size: int,
    max_len: int,
    mult: int,
    algorithm: str,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed + n)
    examples = random_examples(rng, n, int(max_len * 1.3))  # some longer than the max
    expected_rows, expected_meta = bridge_pack(bridge, examples, pack_size, max_len, mult, algorithm, seed)
    source = write_jsonl(tmp_path / "in.jsonl", examples)
    out = tmp_path / "out"
    args = [str(source), "--out", str(out), "--pack-size", str(pack_size), "--bridge-compat"]
    args += ["--max-seq-length", str(max_len), "--pad-seq-to-mult", str(mult), "--algorithm", algorithm]
    code, _, err = run([*args, "--seed", str(seed), "--workers", "1"], capsys)
    assert code == 0, err
    rows = read_rows(out / f"training_{pack_size}.idx.parquet")
    assert len(rows) == len(expected_rows)
    for got, want in zip(rows, expected_rows, strict=True):
        assert got["input_ids"] == want["input_ids"]
        assert got["loss_mask"] == [int(v) for v in want["loss_mask"]]
        assert got["seq_start_id"] == want["seq_start_id"]
    entry = json.loads((out / f"{pack_size}_metadata.jsonl").read_text())[0]
    assert list(entry)[:6] == list(expected_meta)
    assert {k: entry[k] for k in expected_meta} == expected_meta
    # Every long sample is accounted for in the rejects file.
    long = sum(len(e["input_ids"]) - 1 > max_len // mult * mult for e in examples)
    rejects = (out / f"rejects_training_{pack_size}.jsonl").read_text().splitlines()
    assert len(rejects) == long
    assert entry["bridgepack"]["counts"]["samples_in"] == n
