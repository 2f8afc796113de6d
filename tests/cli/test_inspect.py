"""``bridgepack inspect``: statistics, metadata recomputation, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _support.packs import bridge_metadata, make_row, random_rows, write_metadata, write_packs
from bridgepack.cli import main


def _spec_example(tmp_path: Path) -> list[dict]:
    """Spec §2's worked example: runtime lengths packed as [[6,3],[2,4,2],[5]] into packs of 10, EOS 2."""

    def seq(r: int) -> list[int]:
        return [*range(10, 10 + r), 2]

    rows = [make_row([seq(6), seq(3)]), make_row([seq(2), seq(4), seq(2)]), make_row([seq(5)])]
    write_packs(tmp_path / "training_10.idx.parquet", rows)
    return rows


SPEC_METADATA = {
    "dataset_max_seqlen": 6,
    "max_samples_per_bin": 3,
    "packing_factor": 2.0,
    "packing_efficiency": 73.33,
    "pack_size": 10,
    "min_packed_seqlen": 5,
}


def _run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["inspect", *args, "--format", "json", "--quiet"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_spec_example_is_consistent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _spec_example(tmp_path)
    assert bridge_metadata(rows, 10) == SPEC_METADATA
    write_metadata(tmp_path / "10_metadata.jsonl", [SPEC_METADATA])
    code, doc = _run_json(capsys, str(tmp_path / "training_10.idx.parquet"))
    assert code == 0
    assert doc["schema_version"] == 1
    assert (doc["packs"], doc["sequences"], doc["runtime_tokens"], doc["stored_tokens"]) == (3, 6, 22, 28)
    assert doc["efficiency_percent"] == 73.33
    assert doc["sequences_per_pack"] == {"1": 1, "2": 1, "3": 1}
    assert doc["runtime_length"] == {"min": 2, "p50": 3, "p90": 6, "p99": 6, "max": 6}
    assert doc["metadata"]["status"] == "consistent"


def test_text_output_and_directory_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _spec_example(tmp_path)
    write_metadata(tmp_path / "10_metadata.jsonl", [SPEC_METADATA])
    assert main(["inspect", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "efficiency       73.33 %" in out
    assert "sequences/pack   1: 1  2: 1  3: 1" in out
    assert "consistent" in out


@pytest.mark.parametrize("key", ["dataset_max_seqlen", "max_samples_per_bin", "packing_efficiency"])
def test_metadata_mismatch_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str) -> None:
    _spec_example(tmp_path)
    wrong = {**SPEC_METADATA, key: SPEC_METADATA[key] + 1}
    write_metadata(tmp_path / "meta.json", [wrong])
    code, doc = _run_json(
        capsys, str(tmp_path / "training_10.idx.parquet"), "--metadata", str(tmp_path / "meta.json")
    )
    assert code == 1
    assert doc["metadata"]["mismatches"] == [
        {"key": key, "stored": SPEC_METADATA[key] + 1, "recomputed": SPEC_METADATA[key]}
    ]


def test_validation_entry_is_second_by_bridge_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(1)
    train, val = random_rows(rng, 40, 64), random_rows(rng, 7, 64)
    write_packs(tmp_path / "training_64.idx.parquet", train, row_group_size=8)
    write_packs(tmp_path / "validation_64.idx.parquet", val)
    write_metadata(tmp_path / "64_metadata.jsonl", [bridge_metadata(train, 64), bridge_metadata(val, 64)])
    assert _run_json(capsys, str(tmp_path / "training_64.idx.parquet"))[0] == 0
    code, doc = _run_json(capsys, str(tmp_path / "validation_64.idx.parquet"))
    assert (code, doc["metadata"]["entry"]) == (0, 1)


def test_bad_row_exits_1_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _spec_example(tmp_path)
    rows[2]["seq_start_id"] = [0, 9]
    write_packs(tmp_path / "training_10.idx.parquet", rows)
    assert main(["inspect", str(tmp_path / "training_10.idx.parquet")]) == 1
    err = capsys.readouterr().err
    assert "training_10.idx.parquet row 2: field 'seq_start_id'" in " ".join(err.split())


def test_over_capacity_pack_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_packs(
        tmp_path / "training_4.idx.parquet", [make_row([[3, 4, 2]]), make_row([[3, 4, 5, 6, 7, 8, 2]])]
    )
    assert main(["inspect", str(tmp_path / "training_4.idx.parquet")]) == 1
    assert "row 1: 6 runtime tokens exceed pack_size 4" in " ".join(capsys.readouterr().err.split())


def test_unreadable_inputs_exit_2(tmp_path: Path) -> None:
    (tmp_path / "training_8.idx.parquet").write_bytes(b"garbage")
    assert main(["inspect", str(tmp_path / "training_8.idx.parquet")]) == 2
    _spec_example(tmp_path)
    assert main(["inspect", str(tmp_path / "training_10.idx.parquet"), "--metadata", "nope.json"]) == 2
    assert main(["inspect", str(tmp_path / "nothing_*.parquet")]) == 2


def test_missing_metadata_is_reported_not_fatal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _spec_example(tmp_path)
    code, doc = _run_json(capsys, str(tmp_path / "training_10.idx.parquet"))
    assert code == 0
    assert doc["metadata"]["status"] == "skipped"
    assert doc["pack_size"] == 10  # from the file name


def test_legacy_npy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _spec_example(tmp_path)
    np.save(tmp_path / "training_10.npy", np.array(rows, dtype=object))
    write_metadata(tmp_path / "10_metadata.jsonl", [SPEC_METADATA])
    code, doc = _run_json(capsys, str(tmp_path / "training_10.npy"))
    assert (code, doc["metadata"]["status"], doc["sequences"]) == (0, "consistent", 6)


def test_many_row_groups_match_plain_recomputation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = random_rows(np.random.default_rng(7), 1200, 128, max_seqs=6)
    write_packs(tmp_path / "training_128.idx.parquet", rows, row_group_size=100)
    write_metadata(tmp_path / "128_metadata.jsonl", [bridge_metadata(rows, 128)])
    code, doc = _run_json(capsys, str(tmp_path / "training_128.idx.parquet"))
    assert (code, doc["metadata"]["status"]) == (0, "consistent")
    assert doc["packs"] == 1200
    assert sum(doc["sequences_per_pack"].values()) == 1200
