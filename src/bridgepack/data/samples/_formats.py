"""The input formats ``bridgepack pack`` and ``plan`` read, in one table: each entry names its suffixes (or
the
directories it reads), its reader, and how many rows it holds when that is known without reading.

What goes wrong while reading is worded here once, for every format: :func:`iter_chunks` runs each reader
and turns any Arrow or OS error it raises into one :class:`~bridgepack.errors.InputError` line naming the file
and how far it was read (``data.parquet: damaged after row 2047 (...)``), so a reader only reads. Adding a
format is a reader (:mod:`._readers`) and an entry in :data:`INPUT_FORMATS`; ``--help`` and the error for
an unknown input list the table.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from bridgepack._io import COMPRESSED_SUFFIXES, unreadable
from bridgepack._parquet import BAD_CHECKSUM, damage
from bridgepack.data.packset import PARQUET_SUFFIXES
from bridgepack.data.samples._readers import (
    DEFAULT_CHUNK_ROWS,
    RawChunk,
    arrow_chunks,
    arrow_columns,
    datasets_chunks,
    datasets_columns,
    is_datasets_dir,
    jsonl_chunks,
    jsonl_columns,
    parquet_chunks,
    parquet_columns,
    parquet_rows,
)
from bridgepack.errors import BridgepackError, InputError

#: ``(source index, path, records per chunk) -> chunks``: what a format's reader is.
Reader = Callable[[int, Path, int], Iterator[RawChunk]]


@dataclass(frozen=True)
class InputFormat:
    """One kind of input: a file chosen by the end of its name (after a compression suffix when the reader
    decompresses: ``.jsonl.gz`` is JSON Lines), or a directory :attr:`holds` recognises."""

    name: str  #: in messages: ``cannot read as Parquet``
    suffixes: tuple[str, ...]
    read: Reader
    unit: str = "row"  #: what a record is called: ``line`` (1-based) or ``row`` (0-based)
    compressed: bool = False  #: the reader decompresses gzip/zstd/bz2 (:func:`bridgepack._io.open_input`)
    holds: Callable[[Path], bool] | None = None  #: a directory of this format
    rows: Callable[[Path], int] | None = None  #: records, known without reading them (Parquet's footer)
    #: the columns (a record's keys), read without reading the rows: a table of packs is refused as input
    columns: Callable[[Path], list[str] | None] | None = None

    @property
    def shown(self) -> str:
        """How ``--help`` and an unknown input's error name this format."""
        suffixes = [*self.suffixes, *(f"+{s}" for s in COMPRESSED_SUFFIXES if self.compressed)]
        return self.name if not suffixes else f"{self.name} ({' '.join(suffixes)})"

    def reads_file(self, name: str) -> bool:
        """Whether a file called ``name`` (lower case) is of this format."""
        if self.compressed and name.endswith(COMPRESSED_SUFFIXES):
            name = name.rsplit(".", 1)[0]
        return bool(self.suffixes) and name.endswith(self.suffixes)


INPUT_FORMATS: tuple[InputFormat, ...] = (
    InputFormat(
        "JSON Lines",
        (".jsonl", ".json", ".ndjson"),
        jsonl_chunks,
        unit="line",
        compressed=True,
        columns=jsonl_columns,
    ),
    InputFormat("Parquet", PARQUET_SUFFIXES, parquet_chunks, rows=parquet_rows, columns=parquet_columns),
    InputFormat("Arrow IPC", (".arrow", ".arrows"), arrow_chunks, columns=arrow_columns),
    InputFormat(
        "a datasets save_to_disk directory",
        (),
        datasets_chunks,
        holds=is_datasets_dir,
        columns=datasets_columns,
    ),
)


def formats_help() -> str:
    """The formats, for ``--help`` and errors: ``JSON Lines (.jsonl .json .ndjson +.gz ...); Parquet ...``."""
    return "; ".join(f.shown for f in INPUT_FORMATS)


def input_format(path: Path) -> InputFormat:
    """The format that reads ``path``; an :class:`InputError` listing the formats if none does."""
    expected = formats_help()
    if path.is_dir():
        found = next((f for f in INPUT_FORMATS if f.holds is not None and f.holds(path)), None)
        if found is None:
            raise InputError(f"{path}: a directory of no input format bridgepack reads (expected {expected})")
        return found
    if not path.exists():
        raise unreadable(path)
    found = next((f for f in INPUT_FORMATS if f.reads_file(path.name.lower())), None)
    if found is None:
        raise InputError(f"{path}: unknown input format (expected {expected})")
    return found


def input_columns(path: Path) -> list[str] | None:
    """The columns of input ``path`` as its format reads them without its rows (:attr:`InputFormat.columns`);
    ``None`` when they cannot be known so: its reader then says why it cannot be read."""
    try:
        fmt = input_format(path)
        return None if fmt.columns is None else fmt.columns(path)
    except (BridgepackError, OSError, ValueError, pa.ArrowException):
        return None


def iter_chunks(
    paths: Sequence[Path], chunk_rows: int = DEFAULT_CHUNK_ROWS, sources: Sequence[int] | None = None
) -> Iterator[RawChunk]:
    """Chunks of every input, in input order then file order (the order samples are numbered in).

    ``sources``: read only these inputs (indices into ``paths``, which messages keep naming): a shard of a
    distributed run reads its own files.
    """
    for source, path in enumerate(paths):
        if sources is None or source in sources:
            yield from _read_checked(input_format(path), source, path, chunk_rows)


def _read_checked(fmt: InputFormat, source: int, path: Path, chunk_rows: int) -> Iterator[RawChunk]:
    """``fmt``'s chunks of ``path``; an Arrow or OS error from its reader, or a column name that is not
    UTF-8 (an Arrow IPC schema's names are decoded as they are read), becomes one InputError line."""
    chunks = fmt.read(source, path, chunk_rows)
    last: int | None = None  # the line/row of the last record handed on
    try:
        while True:
            try:
                chunk = next(chunks, None)
            except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # a name that is not UTF-8
                raise _unreadable(fmt, path, last, exc) from None
            if chunk is None:
                return
            last = int(chunk.locs[-1])
            yield chunk
    finally:
        getattr(chunks, "close", lambda: None)()  # a generator: its open file, when the caller stops early


def _unreadable(fmt: InputFormat, path: Path, last: int | None, exc: BaseException) -> InputError:
    """Before the first record, the file is not of its format (or not readable at all: missing, no
    permission, a truncated ``.gz``); after it, the file is damaged past the last record read."""
    said = damage(exc)
    reason = said if said == BAD_CHECKSUM else str(exc)
    if last is not None:
        return InputError(f"{os.fspath(path)}: damaged after {fmt.unit} {last} ({reason})")
    if isinstance(exc, OSError):
        return unreadable(path, exc)
    return InputError(f"{os.fspath(path)}: cannot read as {fmt.name} ({reason})")


def known_rows(paths: Sequence[Path]) -> int | None:
    """Samples in ``paths`` when every input says so without being read (Parquet footers), else None:
    a JSONL file's line count is only known once it is read, so its progress shows no total."""
    counters = [input_format(p).rows for p in paths]
    if any(count is None for count in counters):
        return None
    try:
        return sum(count(p) for count, p in zip(counters, paths, strict=True) if count is not None)
    except (OSError, pa.ArrowException):
        return None  # the reader reports it with its row
