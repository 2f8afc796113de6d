"""Every input sample is accounted for, and every failure reaches the user as one line with its exit code."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _support.pack_inputs import EOS, write_jsonl
from bridgepack.cli import main


@given(
    lengths=st.lists(st.integers(0, 30), min_size=1, max_size=40),
    too_long=st.sampled_from(["reject", "truncate", "split"]),
)
def test_every_sample_is_packed_or_listed(lengths: list[int], too_long: str) -> None:
    """samples_in = packed + rejected + dropped; one rejects line per sample not packed whole, naming its
    line; the packs hold exactly the pieces counted."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        rows = [{"input_ids": [7] * n + [EOS]} for n in lengths]
        source = write_jsonl(directory / "in.jsonl", rows)
        out = directory / "out"
        args = ["pack", os.fspath(source), "--out", os.fspath(out), "--pack-size", "8", "--quiet"]
        code = main([*args, "--too-long", too_long, "--eos-id", str(EOS)])
        fitting = sum(n <= 8 for n in lengths)
        if too_long == "reject" and fitting == 0:
            assert code == 1  # "no sample fits": nothing written, said so
            return
        assert code == 0
        [entry] = orjson.loads((out / "8_metadata.jsonl").read_bytes())
        counts = entry["bridgepack"]["counts"]
        assert counts["samples_in"] == len(lengths)
        assert counts["samples_in"] == counts["packed"] + counts["rejected"] + counts["dropped"]
        lines = [orjson.loads(x) for x in (out / "rejects_training_8.jsonl").read_bytes().splitlines()]
        listed = counts["rejected"] + counts["truncated"] + counts["split"] + counts["dropped"]
        assert len(lines) == listed
        assert sorted(x["line"] for x in lines) == [k + 1 for k, n in enumerate(lengths) if n > 8]
        assert all(x["source"] == os.fspath(source) for x in lines)
        starts = pq.read_table(out / "training_8.idx.parquet").column("seq_start_id").to_pylist()
        assert sum(len(s) for s in starts) == counts["sequences"]


@pytest.mark.parametrize(
    ("case", "code", "fragment"),
    [
        ("bad row", 1, "in[/b].jsonl:2: malformed JSON"),
        ("missing input", 2, "nope[/b].jsonl: no such file"),
        ("bad option", 2, "--pack-size: expected an integer >= 1"),
        ("out under a file", 2, "file.txt: is a file, expected a directory"),
    ],
)
def test_exit_codes_and_one_line(
    case: str, code: int, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI's one mapping: DataError 1, InputError and UsageError 2, an OSError that no command turned
    into a bridgepack error 2; always one line, markup in a path printed as text, no traceback."""
    source = tmp_path / ("nope[/b].jsonl" if case == "missing input" else "in[/b].jsonl")
    if case != "missing input":
        source.parent.mkdir()  # "in[" : the path holds the markup closing tag "[/b]"
        source.write_bytes(b'{"input_ids": [5, 2]}\n' + (b"{oops\n" if case == "bad row" else b""))
    (tmp_path / "file.txt").write_text("")
    out = tmp_path / ("file.txt/out" if case == "out under a file" else "out")
    size = "0" if case == "bad option" else "8"
    got = main(["pack", os.fspath(source), "--out", os.fspath(out), "--pack-size", size, "--quiet"])
    err = capsys.readouterr().err
    assert got == code, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert fragment in err
