"""Run ids of a pack set (#16.1): written into every file, compared by the one check every reader calls."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from bridgepack.cli import main
from bridgepack.data.packset import PARQUET_RUN_ID, RUN_ID, PackingMetadata, check_run_ids
from bridgepack.data.packset._runs import parquet_run_id
from bridgepack.errors import DataError


def _pack(tmp_path: Path, name: str, split: str = "training", size: int = 8, *extra: str) -> Path:
    source = tmp_path / f"{name}.jsonl"
    if not source.exists():  # the last row is too long for 8 and 16: the rejects file has a record
        body = b"".join(b'{"input_ids": [%d, 6, 7, 2]}\n' % i for i in range(3, 40))
        source.write_bytes(body + b'{"input_ids": [%s]}\n' % b", ".join([b"5"] * 20 + [b"2"]))
    out = tmp_path / "out"
    args = ["pack", os.fspath(source), "--out", os.fspath(out), "--pack-size", str(size), "--split", split]
    assert main([*args, "--quiet", "--overwrite", *extra]) == 0
    return out


def test_every_file_of_a_set_carries_its_run_id(tmp_path: Path) -> None:
    out = _pack(tmp_path, "a")
    [entry] = PackingMetadata.read(out / "8_metadata.jsonl").entries
    run = entry.run_id
    assert run is not None and len(run) == 32
    assert parquet_run_id(out / "training_8.idx.parquet") == run
    rejects = [orjson.loads(line) for line in (out / "rejects_training_8.jsonl").read_bytes().splitlines()]
    assert [r[RUN_ID] for r in rejects] == [run]
    again = _pack(tmp_path, "a")
    assert parquet_run_id(again / "training_8.idx.parquet") != run  # every run has its own


def test_each_split_is_compared_with_its_own_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sidecar is shared: re-packing validation leaves training's entry, file and run id as they were;
    an old training file beside a new training entry is refused, validation still reads."""
    out = _pack(tmp_path, "a")
    _pack(tmp_path, "a", "validation")
    saved = tmp_path / "old_training.parquet"
    shutil.copy(out / "training_8.idx.parquet", saved)
    _pack(tmp_path, "a", "training")
    entries = PackingMetadata.read(out / "8_metadata.jsonl").entries
    assert len({e.run_id for e in entries}) == 2
    check_run_ids(
        [out / "training_8.idx.parquet", out / "validation_8.idx.parquet"], out / "8_metadata.jsonl"
    )
    shutil.copy(saved, out / "training_8.idx.parquet")
    with pytest.raises(DataError, match=r"training_8\.idx\.parquet \(run [0-9a-f]{12}\) and .*8_metadata"):
        check_run_ids([out / "training_8.idx.parquet"], out / "8_metadata.jsonl")
    assert main(["inspect", os.fspath(out / "validation_8.idx.parquet"), "--quiet"]) == 0
    assert main(["inspect", os.fspath(out / "training_8.idx.parquet"), "--quiet"]) == 1
    assert "come from different bridgepack pack runs" in capsys.readouterr().err


def _strip_parquet_run_id(path: Path) -> None:
    table = pq.read_table(path)
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != PARQUET_RUN_ID}
    pq.write_table(table.replace_schema_metadata(meta), path)


def _strip_metadata_run_id(path: Path) -> None:
    entries = orjson.loads(path.read_bytes())
    for entry in entries:
        del entry["bridgepack"][RUN_ID]
    path.write_bytes(orjson.dumps(entries))


def _strip_rejects_run_id(path: Path) -> None:
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    path.write_bytes(
        b"".join(orjson.dumps({k: v for k, v in r.items() if k != RUN_ID}) + b"\n" for r in lines)
    )


@pytest.mark.parametrize(
    ("stripped", "accepted"),
    [
        ((), True),
        (("parquet", "metadata", "rejects"), True),  # written before run ids: read as before
        (("parquet",), False),
        (("metadata",), False),
        (("metadata", "rejects"), False),
        (("rejects",), False),
    ],
)
def test_legacy_sets_are_read_and_partial_run_ids_refused(
    stripped: tuple[str, ...], accepted: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _pack(tmp_path, "a")
    strip = {
        "parquet": lambda: _strip_parquet_run_id(out / "training_8.idx.parquet"),
        "metadata": lambda: _strip_metadata_run_id(out / "8_metadata.jsonl"),
        "rejects": lambda: _strip_rejects_run_id(out / "rejects_training_8.jsonl"),
    }
    for name in stripped:
        strip[name]()
    code = main(["inspect", os.fspath(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == (0 if accepted else 1), err
    if not accepted:
        assert "come from different bridgepack pack runs" in err and "(no run id)" in err, err


def test_a_legacy_rejects_file_shared_by_pack_sizes_is_read_as_before(tmp_path: Path) -> None:
    """Sets written before rejects files were named by pack size shared ``rejects_{split}.jsonl``: the
    8-token set stays readable when the 16-token run's rejects are there under the shared name; a rejects
    file of no run in the directory is refused."""
    out = _pack(tmp_path, "a", "training", 8)
    _pack(tmp_path, "a", "training", 16)
    (out / "rejects_training_8.jsonl").unlink()
    (out / "rejects_training_16.jsonl").rename(out / "rejects_training.jsonl")
    check_run_ids([out / "training_8.idx.parquet"], out / "8_metadata.jsonl")
    lines = (out / "rejects_training.jsonl").read_bytes().replace(b'"run_id":"', b'"run_id":"f00d')
    (out / "rejects_training.jsonl").write_bytes(lines)
    with pytest.raises(DataError, match=r"rejects_training\.jsonl \(run f00d"):
        check_run_ids([out / "training_8.idx.parquet"], out / "8_metadata.jsonl")


def test_a_packed_file_without_a_sidecar_is_read_as_before(tmp_path: Path) -> None:
    out = _pack(tmp_path, "a")
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(out / "training_8.idx.parquet", alone)
    assert main(["inspect", os.fspath(alone), "--quiet"]) == 0
