"""Input files in bounded chunks: JSONL lines, Parquet column batches, Hugging Face ``save_to_disk`` dirs.

A reader never holds a whole file: it yields :class:`RawChunk` objects of at most ``chunk_rows`` records,
each knowing where it came from (input index and the first line/row), so every later error can name the
file and line. JSONL lines are 1-based (as editors count them), Parquet/dataset rows 0-based.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from seqpack.errors import InputError

#: Records per chunk: big enough to amortise per-chunk costs, small enough to bound memory.
DEFAULT_CHUNK_ROWS = 1024
_JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
_PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass
class RawChunk:
    """Up to ``chunk_rows`` records of one input: JSON lines (``lines``) or an Arrow batch (``batch``)."""

    source: int
    locs: np.ndarray  # int64: the line (JSONL, 1-based) or row (table, 0-based) of each record
    lines: list[bytes] | None = None
    batch: pa.RecordBatch | None = None

    @property
    def is_lines(self) -> bool:
        return self.lines is not None

    def __len__(self) -> int:
        return len(self.locs)


def input_kind(path: Path) -> str:
    """``jsonl``, ``parquet`` or ``hf`` (a ``datasets`` ``save_to_disk`` directory), else an InputError."""
    if path.is_dir():
        if (path / "dataset_info.json").exists() or (path / "state.json").exists():
            return "hf"
        raise InputError(f"{path}: a directory, but not a Hugging Face datasets save_to_disk directory")
    if not path.exists():
        raise InputError(f"{path}: no such file")
    name = path.name.lower()
    if name.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(_PARQUET_SUFFIXES):
        return "parquet"
    raise InputError(f"{path}: unknown input format (expected .jsonl, .parquet or a datasets directory)")


def iter_chunks(paths: list[Path], chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Iterator[RawChunk]:
    """Chunks of every input, in input order then file order (the order samples are numbered in)."""
    for source, path in enumerate(paths):
        kind = input_kind(path)
        if kind == "jsonl":
            yield from _jsonl_chunks(source, path, chunk_rows)
        elif kind == "parquet":
            yield from _parquet_chunks(source, path, chunk_rows)
        else:
            yield from _hf_chunks(source, path, chunk_rows)


def _jsonl_chunks(source: int, path: Path, chunk_rows: int) -> Iterator[RawChunk]:
    lines: list[bytes] = []
    locs: list[int] = []
    try:
        with open(path, "rb") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                lines.append(line)
                locs.append(number)
                if len(lines) >= chunk_rows:
                    yield RawChunk(source, np.asarray(locs, dtype=np.int64), lines=lines)
                    lines, locs = [], []
    except OSError as exc:
        raise InputError(f"{os.fspath(path)}: cannot read ({exc.strerror})") from None
    if lines:
        yield RawChunk(source, np.asarray(locs, dtype=np.int64), lines=lines)


def _parquet_chunks(source: int, path: Path, chunk_rows: int) -> Iterator[RawChunk]:
    try:
        reader = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{os.fspath(path)}: not a readable Parquet file ({exc})") from None
    row = 0
    for batch in reader.iter_batches(batch_size=chunk_rows):
        yield RawChunk(source, np.arange(row, row + batch.num_rows, dtype=np.int64), batch=batch)
        row += batch.num_rows


def _hf_chunks(source: int, path: Path, chunk_rows: int) -> Iterator[RawChunk]:
    try:
        import datasets
    except ImportError:  # pragma: no cover - optional extra
        raise InputError(
            f"{path}: reading a datasets directory needs `pip install seqpack[datasets]`"
        ) from None
    try:
        dataset = datasets.load_from_disk(os.fspath(path))
    except Exception as exc:
        raise InputError(f"{path}: cannot load the datasets directory ({exc})") from None
    if isinstance(dataset, datasets.DatasetDict):
        raise InputError(f"{path}: a DatasetDict; pass one split's directory (e.g. {path}/train)")
    table = dataset.data.table
    row = 0
    for batch in table.to_batches(max_chunksize=chunk_rows):
        if batch.num_rows:
            yield RawChunk(source, np.arange(row, row + batch.num_rows, dtype=np.int64), batch=batch)
            row += batch.num_rows
