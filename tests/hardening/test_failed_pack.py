"""A failed ``pack`` leaves the output location as it found it, and its message names only files that exist.

Swept: every way a run can fail after it has claimed the output directory (bad data in pass 1, nothing
that fits, an empty input, an over-long line, an interruption at each named point of the run) into a
new nested ``--out`` (and ``--scratch-dir``), both layouts; and into a directory holding an earlier set,
replaced with ``--overwrite``. Before the fix every such run left the new, empty ``--out`` folder, and
"no sample fits" told the user to "see the rejects", a file a failed run never keeps.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from _support.pack_inputs import run, write_jsonl
from bridgepack.data.pipeline import _pipeline
from bridgepack.data.samples import _readers

GOOD = [{"input_ids": [5, 6, 7, 2]}, {"input_ids": [8, 9, 2]}, {"input_ids": [4, 2]}]


def _no_fit(tmp: Path) -> list[str]:
    write_jsonl(tmp / "in.jsonl", GOOD[:2])
    return [str(tmp / "in.jsonl"), "--max-seq-length", "1"]


def _malformed(tmp: Path) -> list[str]:
    (tmp / "in.jsonl").write_bytes(b'{"input_ids": [5, 2]}\n{"input_ids": [5, \n')
    return [str(tmp / "in.jsonl")]


def _empty(tmp: Path) -> list[str]:
    (tmp / "in.jsonl").write_bytes(b"\n\n")
    return [str(tmp / "in.jsonl")]


def _no_ids(tmp: Path) -> list[str]:
    write_jsonl(tmp / "in.jsonl", [*GOOD, {"tokens": [1, 2]}])
    return [str(tmp / "in.jsonl")]


def _long_line(tmp: Path) -> list[str]:
    (tmp / "in.jsonl").write_bytes(b'{"input_ids": [5, 2]}\n{"input_ids": [' + b"5, " * 40 + b"2]}\n")
    return [str(tmp / "in.jsonl")]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "no sample fits": _no_fit,
    "malformed json": _malformed,
    "empty input": _empty,
    "no input_ids": _no_ids,
    "line over the limit": _long_line,
}
#: Points of a run where an interruption (Ctrl-C, a crash in a library) is raised.
POINTS = ("read", "plan", "write", "commit", "rename")


def _snapshot(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))
    }


def _named_files_exist(message: str) -> None:
    """Every path the message names exists, and it sends nobody to a rejects file that is not there."""
    for word in re.findall(r"(/[^\s:;,()]+)", message):
        assert Path(word).exists(), f"{message!r} names {word}, which does not exist"
    assert "see the rejects" not in message


@pytest.fixture(params=["bridge", "hf"])
def layout(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("case", CASES)
def test_failed_pack_into_a_new_folder_leaves_no_folder(
    case: str,
    layout: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(_readers, "MAX_LINE_BYTES", 64)
    (tmp_path / "inputs").mkdir()
    args = CASES[case](tmp_path / "inputs")
    out, scratch = tmp_path / "new" / "out", tmp_path / "scratch" / "here"
    code, _, err = run(
        [*args, "--out", str(out), "--scratch-dir", str(scratch), "--pack-size", "8", "--layout", layout],
        capsys,
    )
    assert code in (1, 2), err
    assert err.startswith("error: ") and err.count("\n") == 1
    _named_files_exist(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inputs"]


@pytest.mark.parametrize("point", POINTS)
def test_interrupted_pack_leaves_the_location_as_it_was(
    point: str,
    layout: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_jsonl(tmp_path / "in.jsonl", GOOD)
    out = tmp_path / "out"
    base = [str(tmp_path / "in.jsonl"), "--out", str(out), "--pack-size", "8", "--layout", layout]
    code, _, err = run(base, capsys)
    assert code == 0, err
    before = _snapshot(tmp_path)

    def interrupt(name: str) -> None:
        if name == point:
            raise KeyboardInterrupt

    monkeypatch.setattr(_pipeline, "fault_point", interrupt)
    assert run([*base, "--overwrite"], capsys)[0] == 130  # Ctrl-C's exit status
    assert _snapshot(tmp_path) == before
    new = tmp_path / "fresh" / "out"
    assert run([*base[:1], "--out", str(new), *base[3:]], capsys)[0] == 130
    assert not (tmp_path / "fresh").exists()


def test_no_fit_names_a_sample_that_exists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(tmp_path / "in.jsonl", GOOD[:2])
    args = [str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "o"), "-n", "8", "--max-seq-length", "1"]
    code, _, err = run(args, capsys)
    assert code == 1
    assert err.strip() == (
        f"error: {tmp_path / 'in.jsonl'}: no sample fits max length 1 (2 too long; "
        f"{tmp_path / 'in.jsonl'}:1 has 3 runtime tokens); nothing was written"
    )
