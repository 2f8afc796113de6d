"""One scan of packed data (#17): the facts ``inspect``, the doctor and the trainer check come from one pass
(:class:`bridgepack.data.packed._scan.PackedScan`), equal to what a plain loop over every sequence finds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _support.packs import bridge_metadata, make_row, random_rows, write_metadata, write_packs
from bridgepack.data.packed import PackedReader, PackedScan
from bridgepack.doctor import DoctorOptions, check, load_config

EOS = 2


def test_sequence_starts_are_flat_positions(tmp_path: Path) -> None:
    rows = [make_row([[5, 6, 7, EOS], [8, 9, EOS]]), make_row([[4, 4, EOS]])]
    (block,) = PackedReader(write_packs(tmp_path / "training_16.idx.parquet", rows)).iter_blocks()
    assert block.sequence_starts().tolist() == [0, 4, 7]
    assert block.sequence_rows().tolist() == [0, 0, 1]


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    group=st.sampled_from([1, 3, 500]),
    multiple=st.sampled_from([1, 2, 4]),
    vocab=st.sampled_from([40, 60]),
)
def test_scan_matches_a_per_sequence_loop(
    tmp_path_factory: pytest.TempPathFactory, seed: int, group: int, multiple: int, vocab: int
) -> None:
    rng = np.random.default_rng(seed)
    rows = random_rows(rng, 10, 24)
    for row in rows:
        ids = row["input_ids"]
        row["loss_mask"] = rng.integers(0, 2, size=len(ids)).tolist()
        for j in rng.choice(len(ids), size=min(2, len(ids)), replace=False):
            ids[int(j)] = EOS
    path = write_packs(
        tmp_path_factory.mktemp("scan") / "training_24.idx.parquet", rows, row_group_size=group
    )
    scan = PackedScan(pad_multiple=multiple, vocab=vocab, eos_id=EOS, keep_pack_runtime=True)
    reader = PackedReader(path)
    for block in reader.iter_blocks():
        scan.add(block)

    misses, first_miss, eos_hits, first_hit, sizes = 0, None, 0, None, []
    for r, row in enumerate(rows):
        ids, mask = row["input_ids"], row["loss_mask"]
        ends = [*row["seq_start_id"][1:], len(ids)]
        sizes.append(sum(e - s - 1 for s, e in zip(row["seq_start_id"], ends, strict=True)))
        for start, end in zip(row["seq_start_id"], ends, strict=True):
            if (end - start - 1) % multiple:
                misses += 1
                first_miss = first_miss or f"{path} row {r}: runtime length {end - start - 1}"
            for j in range(start, end - 1):
                if ids[j] == EOS and mask[j] == 1:
                    eos_hits += 1
                    first_hit = first_hit or f"{path} row {r}, token {j}"
    assert (scan.multiple_misses, scan.first_multiple_miss) == (misses, first_miss)
    assert (scan.eos_in_spans, scan.first_eos_in_span) == (eos_hits, first_hit)
    assert scan.max_token_id == max(t for row in rows for t in row["input_ids"])
    assert np.concatenate(scan.pack_runtime).tolist() == sizes
    meta = bridge_metadata(rows, 24)
    assert scan.stats.bridge_metadata(24) == meta


def test_the_doctor_reads_each_row_group_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pad-multiple facts and the EOS-in-trained-span trigger (SP204) share one pass (they took two)."""
    rows = [make_row([[5, EOS, 6, EOS], [7, EOS]], [[1, 1, 1, 0], [1, 0]]) for _ in range(3)]
    path = write_packs(tmp_path / "training_64.idx.parquet", rows, row_group_size=1)
    write_metadata(
        tmp_path / "64_metadata.jsonl", [{**bridge_metadata(rows, 64), "bridgepack": {"eos_id": EOS}}]
    )
    reads: list[int] = []
    original = PackedReader._read_group

    def counted(self: PackedReader, file_index: int, group: int, **options: bool) -> object:
        reads.append(group)
        return original(self, file_index, group, **options)

    monkeypatch.setattr(PackedReader, "_read_group", counted)
    overrides = [
        "train.micro_batch_size=1",
        "train.global_batch_size=8",
        "dataset.enable_offline_packing=true",
        "dataset.dataset_kwargs.chat=true",
        "dataset.offline_packing_specs.packed_sequence_size=64",
        "dataset.seq_length=64",
        "model.seq_length=64",
    ]
    report = check(
        load_config(overrides=overrides), DoctorOptions(packed=str(path), stack={"megatron-bridge": "0.6.2"})
    )
    assert "SP204" in [f.id for f in report.findings]
    assert sorted(reads) == [0, 1, 2]
