"""The HF layout loads the obvious ways with ``datasets`` (#18.4), splits detected, sidecar ignored.

``out/data/{train,validation}-00000-of-00001.parquet`` is the Hub's shard naming, the first split pattern
``datasets`` tries; ``metadata.hf.jsonl`` and the rejects files sit beside ``data/`` where no pattern
looks. (Before: ``training_N.hf.parquet`` beside ``N_metadata.hf.jsonl`` -- ``load_dataset("parquet",
data_dir=out)`` tried to read the JSON sidecar as Parquet.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bridgepack.cli import main
from bridgepack.data.packset import Layout, PackingMetadata, check_run_ids
from bridgepack.errors import DataError


def _pack_both_splits(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    for split, count in (("training", 40), ("validation", 12)):
        source = tmp_path / f"{split}.jsonl"
        rows = [b'{"input_ids": [%d, 6, 7, 2]}\n' % i for i in range(3, 3 + count)]
        source.write_bytes(b"".join(rows) + b'{"input_ids": [%s]}\n' % b", ".join([b"5"] * 30 + [b"2"]))
        args = ["pack", os.fspath(source), "--out", os.fspath(out), "--pack-size", "8", "--layout", "hf"]
        assert main([*args, "--split", split, "--quiet"]) == 0
    return out


def test_load_dataset_finds_the_splits_three_ways(tmp_path: Path) -> None:
    import datasets

    out = _pack_both_splits(tmp_path)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "data/train-00000-of-00001.parquet",
        "data/validation-00000-of-00001.parquet",
        "metadata.hf.jsonl",
        "rejects_training.jsonl",
        "rejects_validation.jsonl",
    ]
    rows = {
        "train": pq.read_metadata(out / "data" / "train-00000-of-00001.parquet").num_rows,
        "validation": pq.read_metadata(out / "data" / "validation-00000-of-00001.parquet").num_rows,
    }
    cache = os.fspath(tmp_path / "cache")
    files = {split: os.fspath(out / "data" / f"{split}-*.parquet") for split in rows}
    for kwargs in (
        {"path": "parquet", "data_dir": os.fspath(out)},
        {"path": os.fspath(out)},
        {"path": "parquet", "data_files": files},
    ):
        loaded = datasets.load_dataset(**kwargs, cache_dir=cache)
        assert {name: len(split) for name, split in loaded.items()} == rows, kwargs
        assert loaded["train"].column_names == ["input_ids", "position_ids", "labels", "seq_lengths"]


def test_hf_files_carry_the_run_id_of_their_split(tmp_path: Path) -> None:
    out = _pack_both_splits(tmp_path)
    train, validation = (
        out / "data" / "train-00000-of-00001.parquet",
        out / "data" / "validation-00000-of-00001.parquet",
    )
    check_run_ids([train, validation], out / "metadata.hf.jsonl")  # each file against its split's entry
    train.replace(validation)  # training's file under validation's name
    with pytest.raises(DataError, match=r"validation-00000-of-00001\.parquet \(run .* come from different"):
        check_run_ids([validation], out / "metadata.hf.jsonl")


def test_the_layout_answers_to_its_name_and_to_its_old_name(tmp_path: Path) -> None:
    """``--layout padding-free`` is the layout's name, ``hf`` its old one: both write the same packs, and the
    metadata records the layout's value ``hf`` either way (what sets written before 0.3 hold)."""
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"".join(b'{"input_ids": [%d, 6, 7, 2]}\n' % i for i in range(3, 23)))
    tables = []
    for spelling in ("padding-free", "hf"):
        out = tmp_path / spelling
        args = ["pack", os.fspath(source), "--out", os.fspath(out), "--pack-size", "8", "--layout", spelling]
        assert main([*args, "--quiet"]) == 0
        tables.append(pq.read_table(out / "data" / "train-00000-of-00001.parquet").replace_schema_metadata())
        entries = PackingMetadata.read(out / "metadata.hf.jsonl").entries
        assert [entry.recorded("layout") for entry in entries] == [Layout.padding_free.value] == ["hf"]
    assert tables[0].equals(tables[1])
    assert Layout("padding-free") is Layout("hf") is Layout.padding_free
