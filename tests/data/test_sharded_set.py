"""The pieces of a sharded set that need no cluster: shard names, where the sidecar is, how the inputs are
sliced, shard fingerprints merged into the set's, and the two phases around one plan run in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import bridgepack
from _support.pack_inputs import random_examples, write_jsonl
from _support.packs import random_rows, write_packs
from _support.sharded_sets import sharded_pack
from bridgepack.data.packed import PackedSource, fingerprint_packed
from bridgepack.data.packset import (
    ROW_GROUP_SIZE,
    find_metadata,
    is_sharded,
    packed_names,
    shard_filename,
    sharded_dirname,
)
from bridgepack.data.pipeline import slice_inputs
from bridgepack.fingerprint import PackedFingerprinter


def test_shard_names_sort_in_pack_order_and_say_their_split_and_size(tmp_path: Path) -> None:
    names = [shard_filename("training", 4096, i) for i in (10, 2, 0)]
    assert sorted(names) == ["training_4096-00000.idx.parquet", "training_4096-00002.idx.parquet",
                             "training_4096-00010.idx.parquet"]  # fmt: skip
    assert packed_names(names).split == "training" and packed_names(names).pack_size == 4096
    assert is_sharded(names) and not is_sharded(["training_4096.idx.parquet"])
    # the sidecar sits beside the shard directory, not in it
    shard_dir = tmp_path / sharded_dirname("training", 4096)
    shard_dir.mkdir()
    (tmp_path / "4096_metadata.jsonl").write_text("[]")
    assert find_metadata([shard_dir / names[2]]) == tmp_path / "4096_metadata.jsonl"
    assert find_metadata([shard_dir]) is None  # no shard files in it yet
    (shard_dir / names[2]).write_bytes(b"")
    assert find_metadata([shard_dir]) == tmp_path / "4096_metadata.jsonl"


def test_slices_take_whole_files_when_there_are_enough_else_every_kth_chunk() -> None:
    files = [Path(f"f{i}") for i in range(5)]
    assert [s.sources for s in slice_inputs(files, 2)] == [(0, 1, 2), (3, 4)]
    one = slice_inputs(files[:1], 3)
    assert [(s.sources, s.every, s.offset) for s in one] == [((0,), 3, 0), ((0,), 3, 1), ((0,), 3, 2)]


def test_merged_shard_fingerprints_equal_reading_the_shards_in_name_order(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    shard_dir = tmp_path / "training_64"
    shard_dir.mkdir()
    merged = PackedFingerprinter()
    for i in range(3):
        path = write_packs(shard_dir / shard_filename("training", 64, i), random_rows(rng, 40 + i, 64), 7)
        alone = PackedFingerprinter(keep_packs=True)
        source = PackedSource(path)
        for block in source.blocks():
            alone.update_block(block)
        source.close()
        merged.merge(alone.state(), alone.pack_hashes())
    assert merged.result() == fingerprint_packed(shard_dir)


@pytest.mark.parametrize(("files", "shards"), [(3, 2), (2, 5)])
def test_one_plan_over_every_slice_gives_the_local_pack_row_for_row(
    tmp_path: Path, files: int, shards: int
) -> None:
    """Slices of whole files, or every K-th chunk of fewer files than shards: the lengths gathered in the
    local order and planned once give the local pack's rows, fingerprints, values and rejects, in order."""
    rng = np.random.default_rng(files)
    inputs = [write_jsonl(tmp_path / f"in{i}.jsonl", random_examples(rng, 900, 160)) for i in range(files)]
    options: dict[str, Any] = {"chunk_rows": 100, "pad_seq_to_mult": 2}
    local = bridgepack.pack(inputs, tmp_path / "local", 128, **options)
    result = sharded_pack(inputs, tmp_path / "sharded", shards, **options)
    shard_files = sorted(result.packed_path.glob("*.parquet"))
    assert len(shard_files) == min(shards, -(-local.num_packs // ROW_GROUP_SIZE)) > 1
    assert [r for f in shard_files for r in pq.read_table(f).to_pylist()] == pq.read_table(
        local.packed_path
    ).to_pylist()
    assert result.record.fingerprint == local.record.fingerprint
    assert result.metadata.bridge_values() == local.metadata.bridge_values()

    def rejects(path: Path) -> list[bytes]:
        return [line.split(b',"run_id"')[0] for line in path.read_bytes().splitlines()]

    assert rejects(result.rejects_path) == rejects(local.rejects_path) != []
    assert not (tmp_path / "sharded" / ".training_128.staging").exists()
