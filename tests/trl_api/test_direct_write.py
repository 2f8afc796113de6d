"""The cache file written straight from the input's memory (``bridgepack.trl._direct``) is, byte for byte, the
stream of the built batches; partial writes, errors and a writer that does not hand placeholders over
still give that file or a clean failure."""

from __future__ import annotations

import ctypes
import errno
import filecmp
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

datasets = pytest.importorskip("datasets")
from datasets import Dataset  # noqa: E402

from _support.hf_tables import token_table  # noqa: E402
from bridgepack.trl import _direct, pack_dataset  # noqa: E402
from bridgepack.trl._pack import _built, _Options, _packed, _write_batches, _write_cache_file  # noqa: E402

datasets.disable_progress_bars()


def _file_dataset(directory: Path, table: pa.Table) -> Dataset:
    """``table`` as a ``datasets`` cache file (one record batch per stored chunk), memory-mapped."""
    path = directory / "data.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches():
            writer.write_batch(batch)
    return Dataset.from_file(str(path))


@st.composite
def layouts(draw: st.DrawFn) -> tuple[pa.Table, str, int, int, list[int] | None]:
    seq_length = draw(st.integers(1, 24))
    lengths = draw(st.lists(st.integers(0, 3 * seq_length), min_size=1, max_size=60))
    cuts = draw(st.lists(st.integers(0, 60), max_size=4))
    table = token_table(lengths, cuts, draw(st.booleans()), draw(st.booleans()), draw(st.integers(0, 99)))
    rows = None
    if draw(st.booleans()):  # an indices mapping, rows repeated: more tokens out than the input holds
        rows = draw(st.lists(st.integers(0, len(lengths) - 1), min_size=1, max_size=120))
    strategy = draw(st.sampled_from(["bfd", "bfd_split", "wrapped"]))
    return table, strategy, seq_length, draw(st.integers(1, 50)), rows


@settings(max_examples=40, deadline=None)
@given(layouts())
def test_direct_file_is_the_built_stream_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[pa.Table, str, int, int, list[int] | None]
) -> None:
    table, strategy, seq_length, batch_size, rows = case
    directory = tmp_path_factory.mktemp("direct")
    dataset = _file_dataset(directory, table)
    if rows is not None:
        dataset = dataset.select(rows)
    packed, empty = _packed(dataset, seq_length, strategy, _Options(writer_batch_size=batch_size))
    if len(packed):
        assert _direct.record_stream(packed) is not None  # this pyarrow hands placeholders over whole
    _write_cache_file(str(directory / "direct.arrow"), packed, empty)
    _write_batches(str(directory / "built.arrow"), _built(packed, empty, reuse=True))
    assert filecmp.cmp(directory / "direct.arrow", directory / "built.arrow", shallow=False)


def _reference(tmp_path: Path) -> tuple[Dataset, bytes]:
    """A file-backed dataset and the bytes of its packed cache file as the built batches give them."""
    table = token_table(list(np.random.default_rng(3).integers(0, 300, 2500)), [800, 1900], False, True, 3)
    dataset = _file_dataset(tmp_path, table)
    packed, empty = _packed(dataset, 512, "bfd", _Options(writer_batch_size=100))
    _write_batches(str(tmp_path / "built.arrow"), _built(packed, empty, reuse=True))
    return dataset, (tmp_path / "built.arrow").read_bytes()


def _cache_file(dataset: Dataset, directory: Path) -> Path:
    name = directory / "cache-packed.arrow"
    pack_dataset(dataset, 512, map_kwargs={"cache_file_name": str(name), "writer_batch_size": 100})
    return name


def test_partial_pwritev_calls_are_resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``pwritev`` may write fewer bytes than asked, mid-run: the rest is written at the right offset."""
    dataset, expected = _reference(tmp_path)
    calls = []

    def short_pwritev(fd: int, iov: int, count: int, offset: int) -> int:
        address, size = (int(v) for v in np.ctypeslib.as_array((ctypes.c_uint64 * 2).from_address(iov)))
        calls.append(count)
        return os.pwrite(fd, ctypes.string_at(address, min(size, 1 + len(calls) % 4099)), offset)

    monkeypatch.setattr(_direct, "_PWRITEV", short_pwritev)
    written = _cache_file(dataset, tmp_path)
    assert written.read_bytes() == expected
    umask = os.umask(0)
    os.umask(umask)
    assert written.stat().st_mode & 0o777 == 0o666 & ~umask  # a plain file's mode, not mkstemp's 0o600
    assert len(calls) > 1000  # every call wrote part of one run


def test_a_failing_write_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dataset, _ = _reference(tmp_path)

    def full_disk(fd: int, iov: int, count: int, offset: int) -> int:
        ctypes.set_errno(errno.ENOSPC)
        return -1

    monkeypatch.setattr(
        _direct,
        "_PWRITEV",
        ctypes.CFUNCTYPE(ctypes.c_ssize_t, *[ctypes.c_int64] * 4, use_errno=True)(full_disk),
    )
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(OSError, match="No space left"):
        _cache_file(dataset, tmp_path)
    assert sorted(os.listdir(tmp_path)) == before  # no cache file, no temporary file


def test_without_pwritev_the_batches_are_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dataset, expected = _reference(tmp_path)
    monkeypatch.setattr(_direct, "_PWRITEV", None)
    assert _cache_file(dataset, tmp_path).read_bytes() == expected


def test_a_writer_that_copies_placeholders_is_noticed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pyarrow that hands the sink copies (not the placeholder buffer) must not put placeholder bytes in
    the file: the recorded stream is refused before anything is written, and the batches are built."""
    dataset, expected = _reference(tmp_path)
    write = _direct._RecordingSink.write

    def copying(self: Any, data: Any) -> int:
        return write(self, data.to_pybytes() if isinstance(data, pa.Buffer) else data)

    monkeypatch.setattr(_direct._RecordingSink, "write", copying)
    packed, _ = _packed(dataset, 512, "bfd", _Options(writer_batch_size=100))
    assert _direct.record_stream(packed) is None
    assert _cache_file(dataset, tmp_path).read_bytes() == expected
