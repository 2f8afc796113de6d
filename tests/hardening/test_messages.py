"""Messages that help (#16): a symlink loop named as one, compressed JSONL read, a file where a folder
should be named as a file, no internal temp names."""

from __future__ import annotations

import errno
import gzip
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bridgepack.cli import main, os_error_message

ROWS = (
    b'{"input_ids": [5, 6, 7, 2], "loss_mask": [0, 1, 1, 1]}\n'
    b'{"input_ids": [8, 9, 2], "loss_mask": [0, 1, 1]}\n'
)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["pack", "{jsonl}", "-o", "out", "-n", "64"],
        ["plan", "{jsonl}"],
        ["inspect", "{parquet}"],
        ["diff", "{parquet}", "{parquet}"],
        ["fingerprint", "{parquet}"],
        ["train", "--data", "{parquet}"],
        ["doctor", "--packed", "{parquet}"],
        ["doctor", "{jsonl}"],
        ["curves", "show", "{jsonl}"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_a_symlink_loop_is_named_as_one_in_every_command(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("loop.jsonl", "loop.parquet"):
        os.symlink(name, name)  # a link to itself
    args = [a.format(jsonl="loop.jsonl", parquet="loop.parquet") for a in argv]
    code, err = _run(args, capsys)
    loop = "loop.jsonl" if "{jsonl}" in argv else "loop.parquet"
    assert code == 2 and err.strip() == f"error: {loop}: too many levels of symbolic links (a symlink loop)"


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
@pytest.mark.parametrize(
    "name", ["data.jsonl.{ext}", "data.jsonl"]
)  # a compressed file under a plain name too
def test_compressed_jsonl_is_read_transparently(
    codec: str, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ext = {"gzip": "gz", "zstd": "zst"}[codec]
    plain, packed = tmp_path / "plain.jsonl", tmp_path / name.format(ext=ext)
    plain.write_bytes(ROWS)
    with pa.output_stream(os.fspath(packed), compression=codec) as sink:
        sink.write(ROWS)
    for source, out in ((plain, "a"), (packed, "b")):
        assert (
            main(["pack", str(source), "-o", str(tmp_path / out), "-n", "16", "-q", "--format", "json"]) == 0
        )
    capsys.readouterr()
    a = pq.read_table(tmp_path / "a" / "training_16.idx.parquet", columns=["input_ids", "loss_mask"])
    b = pq.read_table(tmp_path / "b" / "training_16.idx.parquet", columns=["input_ids", "loss_mask"])
    assert a.equals(b) and a.column("input_ids").to_pylist() == [[5, 6, 7, 2, 8, 9, 2]]


def test_truncated_gzip_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(ROWS * 100)[:40])
    code, err = _run(["pack", str(path), "-o", str(tmp_path / "o"), "-n", "64"], capsys)
    assert code == 2 and err.strip() == f"error: {path}: cannot read (truncated compressed stream)"
    assert "surrogates" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["pack", "--example", "-o", "{file}", "-n", "64"],
        ["pack", "--example", "-o", "{file}/sub", "-n", "64"],
        ["demo", "-o", "{file}", "--quick"],
        ["curves", "show", "{log}", "--plot", "{file}/x.png"],
    ],
    ids=lambda argv: " ".join(argv[:3]),
)
def test_out_naming_an_existing_file_says_it_is_a_file(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("afile").write_text("keep")
    Path("run.log").write_text(" iteration        1/     100 | lm loss: 2.5 |\n")
    code, err = _run([a.format(file="afile", log="run.log") for a in argv], capsys)
    assert code == 2 and err.strip().endswith("afile: is a file, expected a directory"), err
    assert Path("afile").read_text() == "keep"


def test_an_os_error_on_a_temp_file_names_its_folder() -> None:
    exc = OSError(errno.ENOSPC, "No space left on device", "out/.bridgepack-tmp-abc123.parquet")
    assert os_error_message(exc) == "out: No space left on device"
