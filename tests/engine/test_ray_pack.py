"""``seqpack pack --engine ray`` on a real two-node Ray cluster: the sharded set equals the local pack,
Bridge 0.6.2's reader takes the directory, seqpack's readers read it as they read one file."""

from __future__ import annotations

import itertools
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import seqpack
from _support.pack_inputs import random_examples, write_jsonl
from seqpack.cli import main
from seqpack.data.format import PARQUET_RUN_ID, ROW_GROUP_SIZE, PackingMetadata

PACK = 256


def sequences(files: list[Path]) -> Counter[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The multiset of (ids, mask) sequences of packed files, read with pyarrow alone."""
    found: Counter[tuple[tuple[int, ...], tuple[int, ...]]] = Counter()
    for file in files:
        for row in pq.read_table(file).to_pylist():
            bounds = [*row["seq_start_id"], len(row["input_ids"])]
            for a, b in itertools.pairwise(bounds):
                found[(tuple(row["input_ids"][a:b]), tuple(row["loss_mask"][a:b]))] += 1
    return found


def rejects(path: Path) -> list[tuple[Any, ...]]:
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return sorted((r["source"], r.get("line", r.get("row")), r["reason"], r["action"]) for r in lines)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two JSONL files and a Parquet one of pre-tokenized rows, some too long for the pack."""
    root = tmp_path_factory.mktemp("ray-inputs")
    rng = np.random.default_rng(30)
    files = [write_jsonl(root / f"part{i}.jsonl", random_examples(rng, 700, 300)) for i in range(2)]
    table = pa.Table.from_pylist(random_examples(rng, 600, 300))
    pq.write_table(table, root / "part2.parquet")
    return [*files, root / "part2.parquet"]


@pytest.fixture(scope="module")
def local(inputs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> seqpack.PackResult:
    return seqpack.pack(inputs, tmp_path_factory.mktemp("local"), PACK, pad_seq_to_mult=4)


def test_sharded_set_equals_the_local_pack(
    ray_cluster: Any, inputs: list[Path], local: Any, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = seqpack.pack(inputs, out, PACK, pad_seq_to_mult=4, engine="ray", shards=3)
    shard_dir = out / f"training_{PACK}"
    assert result.packed_path == shard_dir
    # a directory of zero-padded shards only; the sidecar and the rejects beside it; no staging left
    names = sorted(os.listdir(shard_dir))
    assert names == [f"training_{PACK}-{i:05d}.idx.parquet" for i in range(3)]
    assert sorted(os.listdir(out)) == [f"{PACK}_metadata.jsonl", "rejects_training.jsonl", f"training_{PACK}"]
    files = [shard_dir / n for n in names]
    assert sequences(files) == sequences([local.packed_path])
    assert rejects(result.rejects_path) == rejects(local.rejects_path)
    # one run id in every file; row groups as the local writer makes them
    run_ids = {pq.read_metadata(f).metadata[PARQUET_RUN_ID].decode() for f in files}
    entries = PackingMetadata.read(result.metadata_path).entries
    assert len(entries) == 1 and run_ids == {entries[0].run_id}
    lines = result.rejects_path.read_bytes().splitlines()
    assert {orjson.loads(x)["run_id"] for x in lines} == run_ids
    assert all(
        pq.ParquetFile(f).metadata.row_group(i).num_rows <= ROW_GROUP_SIZE
        for f in files
        for i in range(pq.ParquetFile(f).metadata.num_row_groups)
    )
    # each shard (here: one input file) planned alone with the same algorithm as the local pack
    alone = [seqpack.pack(f, tmp_path / f"alone{i}", PACK, pad_seq_to_mult=4) for i, f in enumerate(inputs)]
    assert result.num_packs == sum(r.num_packs for r in alone)
    assert result.num_packs >= -(-result.runtime_tokens // PACK)  # never under the lower bound
    assert result.counts.samples_in == local.counts.samples_in
    assert result.counts.rejected == local.counts.rejected > 0
    # the combined entry is what the rows say (inspect recomputes it), and its fingerprint reads back
    report = seqpack.inspect(shard_dir)
    assert report.ok and report.metadata.status == "consistent"
    assert main(["fingerprint", str(shard_dir), "--check"]) == 0
    assert main(["doctor", "--packed", str(shard_dir)]) in (0, 1)
    assert main(["diff", str(local.packed_path), str(shard_dir), "--quiet"]) in (0, 1)
