"""The readers of input files, in bounded chunks: JSONL lines, Parquet column batches, Hugging Face
``save_to_disk`` dirs. Which reader reads which file, and how their errors are worded, is the table in
:mod:`._formats`.

A reader never holds a whole file: it yields :class:`RawChunk` objects of at most ``chunk_rows`` records,
each knowing where it came from (input index and the first line/row), so every later error can name the
file and line. JSONL lines are 1-based (as editors count them), Parquet/dataset rows 0-based. An Arrow or
OS error is left to the table's one wrapper (:func:`._formats.iter_chunks`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bridgepack._io import open_input
from bridgepack._parquet import open_parquet
from bridgepack.errors import InputError, where

#: Records per chunk: big enough to amortise per-chunk costs, small enough to bound memory.
DEFAULT_CHUNK_ROWS = 1024
#: Longest JSON line accepted, in bytes without its newline; a longer one is an InputError, so a file
#: without newlines cannot be read into memory whole. Sized by what one line costs downstream, not by the
#: reader: a chat line of this size tokenized by Qwen3's tokenizer peaks at 2.7 GB (one worker; 3.1 GB in
#: all with two), a 4 MiB one at 0.9 GB, so the tokenizer's ~140 bytes of memory per byte of text stay
#: under 4 GB. A 1M-token pre-tokenized sample is ~8 MiB. A table row (Parquet, datasets) gets the same bound
#: on the text it holds (:func:`check_row_text`).
MAX_LINE_BYTES = 16 << 20


@dataclass
class RawChunk:
    """Up to ``chunk_rows`` records of one input: JSON lines or an Arrow batch (``batch``).

    JSON lines arrive as one ``data`` buffer with each line's ``[start, end)`` byte span in ``spans``
    (shape ``(n, 2)``), so a chunk costs one copy, not one Python object per line; :attr:`lines` slices
    them out for the paths that parse line by line.
    """

    source: int
    locs: np.ndarray  # int64: the line (JSONL, 1-based) or row (table, 0-based) of each record
    data: bytes | None = None
    spans: np.ndarray | None = None  # int64 (n, 2): byte span of each line in ``data``
    batch: pa.RecordBatch | None = None

    @property
    def is_lines(self) -> bool:
        return self.data is not None

    @property
    def lines(self) -> list[bytes] | None:
        """The JSON lines as separate ``bytes`` (``None`` for an Arrow chunk)."""
        if self.data is None or self.spans is None:
            return None
        data = self.data
        return [data[start:end] for start, end in self.spans.tolist()]

    def __len__(self) -> int:
        return len(self.locs)


#: Bytes read from a JSONL file at a time (a buffer that grows only for a longer line).
_READ_BLOCK = 16 << 20


def jsonl_chunks(source: int, path: Path, chunk_rows: int) -> Iterator[RawChunk]:
    """JSON lines in chunks, read in large blocks; blank lines are skipped but keep their line numbers."""
    with open_input(path) as handle:
        yield from _line_chunks(source, handle, chunk_rows, os.fspath(path))


def _line_chunks(source: int, handle: Any, chunk_rows: int, name: str) -> Iterator[RawChunk]:
    # The buffer never holds more than a longest line and its newline, so the limit is exact.
    buffer = bytearray(min(_READ_BLOCK, MAX_LINE_BYTES + 1))
    filled = 0  # bytes at the start of ``buffer`` carried over: the unfinished last line
    line_number = 0  # lines numbered so far (1-based numbers of the next block start after it)
    pending: list[tuple[bytes, np.ndarray, np.ndarray]] = []  # (data, spans, locs) not yet yielded
    pending_rows = 0
    while True:
        if filled == len(buffer):  # one line longer than the buffer: grow it, up to the line limit
            if filled > MAX_LINE_BYTES:  # the limit's bytes and one more, and still no newline
                raise InputError(f"{name}:{line_number + 1}: line longer than {MAX_LINE_BYTES} bytes")
            buffer.extend(bytes(min(len(buffer), MAX_LINE_BYTES + 1 - len(buffer))))
        with memoryview(buffer) as window:
            read = handle.readinto(window[filled:])
        total = filled + read
        at_end = read == 0
        view = np.frombuffer(buffer, dtype=np.uint8, count=total)
        ends = np.flatnonzero(view == 10) + 1
        if at_end and total and (ends.size == 0 or ends[-1] != total):
            ends = np.append(ends, total)  # the last line has no newline
        if ends.size:
            complete = int(ends[-1])
            starts = np.concatenate(([0], ends[:-1]))
            locs = line_number + 1 + np.arange(ends.size, dtype=np.int64)
            line_number += int(ends.size)
            keep = _non_blank(view[:complete], starts, ends)
            data = bytes(view[:complete])
            spans = np.stack([starts[keep], ends[keep]], axis=1).astype(np.int64)
            pending.append((data, spans, locs[keep]))
            pending_rows += int(keep.sum())
            rest = total - complete
            buffer[:rest] = buffer[complete:total]
            filled = rest
        else:
            filled = total
        del view  # release the buffer export so the buffer may grow
        while pending_rows >= chunk_rows or (at_end and pending_rows):
            chunk, pending, pending_rows = _take_rows(source, pending, chunk_rows)
            yield chunk
        if at_end:
            return


@numba.njit(cache=True)
def _non_blank(view: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which lines hold anything but whitespace (as ``bytes.strip`` counts it); stops at the first byte
    that is not, so a line costs one byte to check, not its length."""
    out = np.zeros(starts.shape[0], dtype=np.bool_)
    for i in range(starts.shape[0]):
        for j in range(starts[i], ends[i]):
            c = view[j]
            if c != 32 and not (9 <= c <= 13):
                out[i] = True
                break
    return out


def _take_rows(
    source: int, pending: list[tuple[bytes, np.ndarray, np.ndarray]], rows: int
) -> tuple[RawChunk, list[tuple[bytes, np.ndarray, np.ndarray]], int]:
    """Cut a chunk of up to ``rows`` lines from the pending blocks; return it and what is left."""
    parts: list[bytes] = []
    spans: list[np.ndarray] = []
    locs: list[np.ndarray] = []
    offset = taken = 0
    while pending and taken < rows:
        data, block_spans, block_locs = pending[0]
        n = min(rows - taken, len(block_spans))
        head = block_spans[:n]
        if n:
            lo, hi = int(head[0, 0]), int(head[-1, 1])
            parts.append(data[lo:hi])
            spans.append(head - lo + offset)
            locs.append(block_locs[:n])
            offset += hi - lo
            taken += n
        if n == len(block_spans):
            pending = pending[1:]
        else:
            pending = [(data, block_spans[n:], block_locs[n:]), *pending[1:]]
    remaining = sum(len(p[1]) for p in pending)
    chunk = RawChunk(source, np.concatenate(locs), data=b"".join(parts), spans=np.concatenate(spans))
    return chunk, pending, remaining


def parquet_chunks(source: int, path: Path, chunk_rows: int) -> Iterator[RawChunk]:
    """Column batches of a Parquet file, page checksums verified (a corrupt page is found when decoded)."""
    yield from table_chunks(source, path, open_parquet(path).iter_batches(batch_size=chunk_rows))


def parquet_rows(path: Path) -> int:
    """Rows of a Parquet file, from its footer."""
    return int(pq.ParquetFile(path).metadata.num_rows)


#: How an Arrow IPC file starts (a stream starts with a message), and how a stream writer ends a stream.
_IPC_FILE_MAGIC = b"ARROW1"
_IPC_END_OF_STREAM = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def arrow_chunks(source: int, path: Path, chunk_rows: int) -> Iterator[RawChunk]:
    """Record batches of an Arrow IPC file or stream, memory-mapped and cut to ``chunk_rows``: the
    ``.arrow`` files ``datasets`` writes (its cache files and a ``save_to_disk`` directory's shards) are
    streams. IPC has no checksums, so every batch is validated in full (an offset pointing outside its
    buffer would be read as tokens), and a stream must end with its end-of-stream marker: one cut at a
    batch boundary reads without an error, as a shorter dataset."""
    with pa.memory_map(os.fspath(path)) as mapped:
        reader, is_file = _open_ipc(mapped)
        if is_file:
            batches: Iterator[pa.RecordBatch] = (
                reader.get_batch(i) for i in range(reader.num_record_batches)
            )
        else:
            batches = iter(reader)
        yield from table_chunks(source, path, _validated(batches, chunk_rows))
        if not is_file and (mapped.size() < 8 or mapped.read_at(8, mapped.size() - 8) != _IPC_END_OF_STREAM):
            raise pa.ArrowInvalid("the stream has no end-of-stream marker: it was cut short")


def _open_ipc(mapped: pa.MemoryMappedFile) -> tuple[Any, bool]:
    """An Arrow IPC reader of ``mapped`` (a file's, or a stream's) and whether it is a file."""
    is_file = mapped.read(len(_IPC_FILE_MAGIC)) == _IPC_FILE_MAGIC
    mapped.seek(0)
    return (pa.ipc.open_file(mapped) if is_file else pa.ipc.open_stream(mapped)), is_file


def arrow_columns(path: Path) -> list[str]:
    """Columns of an Arrow IPC file or stream, from its schema (no batch is read)."""
    with pa.memory_map(os.fspath(path)) as mapped:
        return list(_open_ipc(mapped)[0].schema.names)


def parquet_columns(path: Path) -> list[str]:
    """Columns of a Parquet file, from its footer."""
    return list(open_parquet(path).schema_arrow.names)


def jsonl_columns(path: Path) -> list[str] | None:
    """Keys of a JSON Lines file's first record (one line read), ``None`` when it is no object."""
    with open_input(path) as handle:
        for line in iter(lambda: handle.readline(MAX_LINE_BYTES), b""):
            if line.strip():
                record = orjson.loads(line)
                return list(record) if isinstance(record, dict) else None
    return None


def _validated(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """Each batch validated in full, in slices of at most ``rows`` (zero-copy)."""
    for batch in batches:
        batch.validate(full=True)
        for start in range(0, batch.num_rows, rows):
            yield batch.slice(start, rows)


def table_chunks(source: int, path: Path, batches: Iterator[pa.RecordBatch]) -> Iterator[RawChunk]:
    """Arrow batches as chunks numbered by row, each row's text bounded (:func:`check_row_text`)."""
    row = 0
    for batch in batches:
        if batch.num_rows:
            check_row_text(os.fspath(path), batch, row)
            yield RawChunk(source, np.arange(row, row + batch.num_rows, dtype=np.int64), batch=batch)
            row += batch.num_rows


_TEXT_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)


def row_text_bytes(array: pa.Array) -> np.ndarray:
    """Bytes of text in each row of ``array`` (int64), nested strings included, from the offsets alone.

    A chat column ``list<struct<role: string, content: string>>`` of one row ``[{"user", "hi"},
    {"assistant", "hello"}]`` holds 4 + 2 + 9 + 5 = 20 bytes; ids and numbers hold none.
    """
    kind = array.type
    if pa.types.is_dictionary(kind):
        per_value = row_text_bytes(array.dictionary)
        indices = array.indices.to_numpy(zero_copy_only=False)
        valid = ~np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        return np.where(valid, per_value[np.where(valid, indices, 0).astype(np.int64)], 0).astype(np.int64)
    if any(test(kind) for test in _TEXT_TYPES):
        return np.asarray(pc.binary_length(array).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_map(kind):
        inner = np.concatenate([[0], np.cumsum(row_text_bytes(array.values))]).astype(np.int64)
        offsets = np.asarray(array.offsets, dtype=np.int64)
        return inner[offsets[1:]] - inner[offsets[:-1]]
    if pa.types.is_fixed_size_list(kind):
        inner = np.concatenate([[0], np.cumsum(row_text_bytes(array.values))]).astype(np.int64)
        ends = (np.arange(len(array) + 1, dtype=np.int64) + array.offset) * kind.list_size
        return inner[ends[1:]] - inner[ends[:-1]]
    if pa.types.is_struct(kind):
        total = np.zeros(len(array), dtype=np.int64)
        for child in array.flatten():
            total += row_text_bytes(child)
        return total
    return np.zeros(len(array), dtype=np.int64)


def check_row_text(path: str, batch: pa.RecordBatch, first_row: int) -> None:
    """Refuse a table row (Parquet, a ``datasets`` directory) whose text -- every string in it, a chat's
    nested message contents included -- exceeds :data:`MAX_LINE_BYTES`, naming the row and the field
    holding the most of it: the tokenizer's memory grows with a row's text (~140 bytes a byte) whichever
    file it came from, so a row gets the bound of a JSONL line, checked as each batch is read, before
    anything is tokenized."""
    if batch.num_rows == 0 or batch.num_columns == 0:
        return
    per_field = np.stack([row_text_bytes(column) for column in batch.columns])
    totals = per_field.sum(axis=0)
    limit = MAX_LINE_BYTES
    over = np.flatnonzero(totals > limit)
    if over.size:
        k = int(over[0])
        field = batch.schema.names[int(np.argmax(per_field[:, k]))]
        raise InputError(
            f"{where(path, row=first_row + k, field=field)}: row holds {int(totals[k])} bytes of text, "
            f"more than {limit} (the limit of a row, as of a JSONL line)"
        )


def is_datasets_dir(path: Path) -> bool:
    """A Hugging Face ``datasets`` ``save_to_disk`` directory (one split: ``state.json``; a DatasetDict:
    ``dataset_dict.json``, refused by the reader with the split to pass)."""
    return any((path / name).exists() for name in ("dataset_info.json", "state.json", "dataset_dict.json"))


def datasets_columns(path: Path) -> list[str] | None:
    """Columns of one split saved by ``Dataset.save_to_disk`` (``None`` for a DatasetDict, or without
    ``datasets``: the reader says why)."""
    try:
        import datasets
    except ImportError:  # pragma: no cover - optional extra
        return None
    try:
        dataset = datasets.load_from_disk(os.fspath(path))
    except Exception:  # datasets' own errors as well: the reader words them
        return None
    return None if isinstance(dataset, datasets.DatasetDict) else list(dataset.column_names)


def datasets_chunks(source: int, path: Path, chunk_rows: int) -> Iterator[RawChunk]:
    """The rows of one split saved by ``Dataset.save_to_disk``, loaded by ``datasets`` (memory-mapped)."""
    try:
        import datasets
    except ImportError:  # pragma: no cover - optional extra
        raise InputError(
            f"{path}: reading a datasets directory needs `pip install bridgepack[datasets]`"
        ) from None
    try:
        dataset = datasets.load_from_disk(os.fspath(path))
    except (pa.ArrowException, OSError):
        raise  # worded by the format table, as every reader's
    except Exception as exc:  # datasets' own: a state.json it cannot use, ...
        raise InputError(f"{path}: cannot load the datasets directory ({exc})") from None
    if isinstance(dataset, datasets.DatasetDict):
        raise InputError(f"{path}: a DatasetDict; pass one split's directory (e.g. {path}/train)")
    yield from table_chunks(source, path, iter(dataset.data.table.to_batches(max_chunksize=chunk_rows)))
