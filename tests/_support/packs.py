"""Build packed data in Bridge's on-disk layout (bridge-format §3) for tests: Parquet rows and metadata
sidecars."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

Row = dict[str, list[int]]


def make_row(sequences: Sequence[Sequence[int]], masks: Sequence[Sequence[int]] | None = None) -> Row:
    """A pack from stored sequences (each EOS-terminated), with ``seq_start_id`` at each start."""
    starts = np.cumsum([0] + [len(s) for s in sequences[:-1]]).tolist()
    ids = [int(t) for s in sequences for t in s]
    if masks is None:
        mask = [m for s in sequences for m in [1] * (len(s) - 1) + [0]]
    else:
        mask = [int(m) for s in masks for m in s]
    return {"input_ids": ids, "loss_mask": mask, "seq_start_id": [int(x) for x in starts]}


def random_rows(
    rng: np.random.Generator, n: int, pack_size: int, eos: int = 2, max_seqs: int = 4
) -> list[Row]:
    """``n`` valid packs of runtime capacity ``pack_size`` with random tokens (never EOS inside)."""
    rows = []
    for _ in range(n):
        k = int(rng.integers(1, max_seqs + 1))
        budget = pack_size
        seqs, masks = [], []
        for _ in range(k):
            if budget < 1:
                break
            r = int(rng.integers(1, max(2, budget // 2 + 1)))
            budget -= r
            body = rng.integers(3, 50, size=r).tolist()
            seqs.append([*body, eos])
            masks.append([*rng.integers(0, 2, size=r).tolist(), 0])
        rows.append(make_row(seqs, masks))
    return rows


def write_packs(path: Path, rows: Sequence[Row], row_group_size: int = 500) -> Path:
    """Write rows with Bridge's schema: list<int64>, list<int8>, list<int64>; Snappy."""
    table = pa.table(
        {
            "input_ids": pa.array([r["input_ids"] for r in rows], type=pa.list_(pa.int64())),
            "loss_mask": pa.array([r["loss_mask"] for r in rows], type=pa.list_(pa.int8())),
            "seq_start_id": pa.array([r["seq_start_id"] for r in rows], type=pa.list_(pa.int64())),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def bridge_metadata(rows: Sequence[Row], pack_size: int) -> dict[str, int | float]:
    """The six values, computed the plain way (per pack, per sequence) as Bridge's algorithms.py does."""
    runtime = []
    sums = []
    for r in rows:
        bounds = [*r["seq_start_id"], len(r["input_ids"])]
        lens = [bounds[i + 1] - bounds[i] - 1 for i in range(len(bounds) - 1)]
        runtime.extend(lens)
        sums.append(sum(lens))
    return {
        "dataset_max_seqlen": max(runtime),
        "max_samples_per_bin": max(len(r["seq_start_id"]) for r in rows),
        "packing_factor": round(len(runtime) / len(sums), 2),
        "packing_efficiency": round(sum(sums) / len(sums) / pack_size * 100, 2),
        "pack_size": pack_size,
        "min_packed_seqlen": min(sums),
    }


def write_metadata(path: Path, entries: Sequence[dict]) -> Path:
    path.write_text(json.dumps(list(entries)))
    return path
