"""From `bridgepack pack` output to CP shards: inspect, dataset, sampler, collate, zigzag partition."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bridgepack.batching import (
    GlobalBatchSampler,
    PackedCollator,
    PackedDataset,
    partition_packed_batch,
    unpartition_thd,
)
from bridgepack.cli import main
from bridgepack.data.samples import EXAMPLE_EOS_ID, example_dataset_path

PACK, CP = 256, 2


@pytest.mark.slow
def test_packed_example_through_the_whole_batching_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "packed"
    args = [
        "pack",
        str(example_dataset_path()),
        "--out",
        str(out),
        "--pack-size",
        str(PACK),
        "--cp",
        str(CP),
        "-q",
    ]
    assert main(args) == 0
    capsys.readouterr()
    assert main(["inspect", str(out), "--format", "json", "-q"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["metadata"]["status"] == "consistent"

    ds = PackedDataset(out)
    collate = PackedCollator(
        EXAMPLE_EOS_ID, PACK, pad_to_max_length=True, pad_seq_to_mult=2 * CP,
        pad_cu_seqlens=True, metadata=out / f"{PACK}_metadata.jsonl",
    )  # fmt: skip
    sampler = GlobalBatchSampler(
        len(ds), global_batch_size=8, data_parallel_rank=1, data_parallel_size=2, seed=3
    )
    for step, indices in enumerate(sampler):
        batch = collate([ds[i] for i in indices])
        assert batch["tokens"].shape == (4, PACK)
        shards = [partition_packed_batch(batch, CP, r) for r in range(CP)]
        for key in ("tokens", "labels", "loss_mask", "position_ids"):
            for row in range(4):
                cu = batch["cu_seqlens_q_padded"][row].numpy()
                whole = unpartition_thd([s[key][row].numpy() for s in shards], cu, CP)
                assert np.array_equal(whole, batch[key][row].numpy())
        assert shards[0]["tokens"].shape == shards[1]["tokens"].shape == (4, PACK // CP)
        if step == 3:
            break
