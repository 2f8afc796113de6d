"""Every bad input: a one-line error naming file, line/row and field, the right exit code, no output left."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _support.pack_inputs import run, write_jsonl

GOOD = b'{"input_ids": [5, 6, 2], "loss_mask": [0, 1, 1]}\n'

JSONL_CASES = [
    # (file body, exit code, expected fragment of the message)
    (GOOD + b'{"input_ids": [5, 2\n', 1, "in.jsonl:2: malformed JSON"),
    (GOOD + b'{"loss_mask": [1, 1]}\n', 1, "in.jsonl:2: field 'input_ids': missing"),
    (GOOD + b'{"input_ids": [5, 1.5, 2]}\n', 1, "in.jsonl:2: field 'input_ids': expected integer token ids"),
    (GOOD + b'{"input_ids": [5, "a", 2]}\n', 1, "in.jsonl:2: field 'input_ids': expected integer token ids"),
    (GOOD + b'{"input_ids": [5, -3, 2]}\n', 1, "in.jsonl:2: field 'input_ids': token id -3 out of range"),
    (GOOD + b'{"input_ids": []}\n', 1, "in.jsonl:2: field 'input_ids': empty"),
    (
        GOOD + b'{"input_ids": [5, 2], "loss_mask": [1]}\n',
        1,
        "in.jsonl:2: field 'loss_mask': length 1 != input_ids",
    ),
    (
        GOOD + b'{"input_ids": [5, 2], "loss_mask": [1, 7]}\n',
        1,
        "in.jsonl:2: field 'loss_mask': expected 0/1",
    ),
    (GOOD + b"[1, 2]\n", 1, "in.jsonl:2: expected a JSON object"),
    (GOOD + b'{"input_ids": [5, 6, 7]}\n', 1, "in.jsonl:2: field 'input_ids': last token 7 differs from 2"),
    (b"\n\n", 1, "empty input"),
]


def assert_nothing_written(out: Path) -> None:
    assert not out.exists() or list(out.iterdir()) == []


@pytest.mark.parametrize(("body", "code", "fragment"), JSONL_CASES)
def test_bad_jsonl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: bytes, code: int, fragment: str
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(body)
    out = tmp_path / "out"
    got, _, err = run([str(source), "--out", str(out), "--pack-size", "8", "--workers", "1"], capsys)
    assert got == code
    assert fragment in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert_nothing_written(out)


def test_bad_parquet_row_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"input_ids": [[5, 2], [6, 2]], "loss_mask": [[1, 1], [1, 1, 1]]}), source)
    out = tmp_path / "out"
    code, _, err = run([str(source), "--out", str(out), "--pack-size", "8"], capsys)
    assert code == 1
    assert "in.parquet row 1: field 'loss_mask': length 3 != input_ids length 2" in err
    assert_nothing_written(out)


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--pack-size", "0"], "--pack-size: expected an integer >= 1"),
        (["--pack-size", "8", "--pad-seq-to-mult", "0"], "--pad-seq-to-mult: expected an integer >= 1"),
        (["--pack-size", "8", "--pad-seq-to-mult", "16"], "larger than the max sequence length 8"),
        (["--pack-size", "8", "--max-seq-length", "9"], "larger than --pack-size"),
        (
            ["--pack-size", "8", "--bridge-compat", "--too-long", "split"],
            "cannot be combined with --bridge-compat",
        ),
        (
            ["--pack-size", "8", "--tokenizer", "no/such/dir"],
            "no/such/dir: tokenizer directory does not exist",
        ),
        (["--pack-size", "8", "--split", "test"], "--split must be one of"),
        (["--pack-size", "8", "--pad-seq-to-mult", "2", "--cp", "2"], "either --pad-seq-to-mult or --cp"),
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], fragment: str
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [{"input_ids": [5, 2]}])
    out = tmp_path / "out"
    code, _, err = run([str(source), "--out", str(out), *extra], capsys)
    assert code == 2
    assert fragment in err
    assert_nothing_written(out)


def test_unloadable_tokenizer_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "tok"
    broken.mkdir()
    (broken / "tokenizer.json").write_text("{not json")
    source = write_jsonl(tmp_path / "in.jsonl", [{"prompt": "a", "completion": "b"}])
    args = [str(source), "--out", str(tmp_path / "out"), "--pack-size", "8", "--tokenizer", str(broken)]
    code, _, err = run([*args, "--prompt-field", "prompt", "--completion-field", "completion"], capsys)
    assert code == 2 and f"{broken}: cannot load a tokenizer" in err


def test_missing_input_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        [str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "out"), "--pack-size", "8"], capsys
    )
    assert code == 2 and "nope.jsonl: no such file" in err


def test_boolean_and_float_like_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Boolean masks are accepted (as Bridge's int() does); an exponent-written id is not an integer."""
    source = tmp_path / "in.jsonl"
    source.write_bytes(b'{"input_ids": [5, 6, 2], "loss_mask": [false, true, true]}\n{"input_ids": [7, 2]}\n')
    code, _, err = run([str(source), "--out", str(tmp_path / "ok"), "--pack-size", "8"], capsys)
    assert code == 0, err
    [row] = pq.read_table(tmp_path / "ok" / "training_8.idx.parquet").to_pylist()
    assert sorted(row["loss_mask"]) == [0, 0, 1, 1, 1]
    source.write_bytes(b'{"input_ids": [5, 1e3, 2]}\n')
    code, _, err = run([str(source), "--out", str(tmp_path / "bad"), "--pack-size", "8"], capsys)
    assert code == 1 and "in.jsonl:1: field 'input_ids': expected integer token ids" in err
