"""The block-wise JSONL reader yields the lines (and 1-based line numbers) a line-by-line read does."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.data.samples import _readers, iter_chunks

LINE = st.one_of(
    st.just(b""),
    st.sampled_from([b"   ", b"\t", b" \r"]),
    st.binary(min_size=1, max_size=40).map(lambda b: b"{" + b.replace(b"\n", b"") + b"}"),
)


def reference(data: bytes) -> list[tuple[int, bytes]]:
    """(line number, line with its newline) of every non-blank line, as ``for line in file`` gives them."""
    return [(number, line) for number, line in enumerate(io.BytesIO(data), start=1) if line.strip()]


@given(
    lines=st.lists(LINE, max_size=60),
    trailing_newline=st.booleans(),
    block=st.integers(1, 64),
    chunk_rows=st.integers(1, 7),
)
def test_blocks_equal_line_reads(
    lines: list[bytes],
    trailing_newline: bool,
    block: int,
    chunk_rows: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    data = b"\n".join(lines) + (b"\n" if trailing_newline and lines else b"")
    path = tmp_path_factory.mktemp("blocks") / "in.jsonl"
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_readers, "_READ_BLOCK", block)  # tiny blocks: lines cross blocks, buffers grow
        chunks = list(iter_chunks([path], chunk_rows))
    got = [(int(n), line) for c in chunks for n, line in zip(c.locs, c.lines or [], strict=True)]
    assert got == reference(data)
    assert all(0 < len(c) <= chunk_rows for c in chunks)


def test_line_longer_than_the_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    long = b'{"input_ids": [' + b"1, " * 500 + b"2]}"
    (tmp_path / "a.jsonl").write_bytes(b'{"a": 1}\n' + long + b"\n\n" + b'{"b": 2}')
    monkeypatch.setattr(_readers, "_READ_BLOCK", 16)
    (chunk,) = iter_chunks([tmp_path / "a.jsonl"], 10)
    assert chunk.locs.tolist() == [1, 2, 4]
    assert chunk.lines == [b'{"a": 1}\n', long + b"\n", b'{"b": 2}']
