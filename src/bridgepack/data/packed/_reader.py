"""Readers of packed data: Bridge's packed Parquet (bridge-format §3); legacy ``.npy`` files go to
``_legacy_npy``.

One row is one pack. Three list columns hold it (extra columns are allowed and ignored)::

    input_ids    [10, 11, 12,  2 | 20, 21,  2]      stored tokens of every sequence, EOS-terminated
    loss_mask    [ 1,  1,  1,  0 |  1,  1,  0]      mask rolled left: loss_mask[j] supervises token j+1
    seq_start_id [0, 4]                              start offset of each sequence (total excluded)

Row invariants (bridge-format §3): ``len(loss_mask) == len(input_ids)``; ``seq_start_id`` non-empty, starting
at 0, non-decreasing, each ``< len(input_ids)``; mask values 0/1. Stored sequence lengths follow from the
starts (``[4, 3]`` above); Bridge counts *runtime* lengths, one less per sequence (``[3, 2]``).

Data stays in Arrow/numpy buffers: a row group is read as three CSR pairs (offsets + flat values), checked
with vectorised numpy over the offsets, and dropped when the next one arrives, so a file of a million packs
is never loaded whole. Random access (:meth:`PackedReader.row`) goes through a small LRU cache of row groups,
as Bridge's dataset does with its one-group cache.
"""

from __future__ import annotations

import glob
import os
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bridgepack._io import FILE, expect_kind, unreadable
from bridgepack._parquet import open_parquet, read_row_group
from bridgepack.data.packset import (
    MAX_TOKEN_ID,
    PARQUET_SUFFIXES,
    REQUIRED_COLUMNS,
    bridgepack_output,
    check_shard_dir,
)
from bridgepack.errors import DataError, InputError, where
from bridgepack.fingerprint import BlockHashes, hash_and_check_block

#: Row groups kept decoded for random access; Bridge keeps one, a few more spare a shuffled sampler rereads.
ROW_GROUP_CACHE_SIZE = 4


def _is_parquet_name(path: str) -> bool:
    return path.lower().endswith(PARQUET_SUFFIXES)


def resolve_packed_paths(location: str | os.PathLike[str]) -> list[str]:
    """The packed Parquet files a location names, by Bridge 0.6.2's rules (``data/packing/paths.py``).

    * a glob (``*`` or ``?`` in it): the matches ending in ``.parquet``/``.pq`` (any case), sorted;
    * a directory: its ``*.parquet`` and ``*.pq`` files (not recursive, hidden files skipped), sorted and
      de-duplicated;
    * a file: itself, when it ends in ``.parquet``/``.pq`` and exists.

    Bridge returns an empty list for a single file of another suffix; bridgepack says so instead. Raises
    :class:`InputError` naming the location when nothing matches, and :class:`DataError` for a sharded
    split's folder that holds anything but its shards (:func:`bridgepack.data.packset.check_shard_dir`).
    """
    text = os.fspath(location)
    if "*" in text or "?" in text:
        paths = sorted({p for p in glob.glob(text) if _is_parquet_name(p)})
        if not paths:
            raise InputError(f"{text}: no Parquet files match (names must end with .parquet or .pq)")
        _check_files(paths)
        return paths
    if Path(text).is_dir():
        folder = glob.escape(text)  # the folder's own name is literal: "[x]" in it is no character class
        paths = sorted({p for end in PARQUET_SUFFIXES for p in glob.glob(os.path.join(folder, f"*{end}"))})
        if not paths:
            raise InputError(f"{text}: directory holds no .parquet or .pq files{_inner_sets_hint(folder)}")
        _check_files(paths)
        return paths
    if not _is_parquet_name(text):
        kind = bridgepack_output(text)  # another command's output (a rejects file, a sidecar, a batch dump)
        what = "not a packed Parquet location" if kind is None else f"is {kind}, not packed data"
        raise InputError(f"{text}: {what} (expected a .parquet/.pq file, a glob or a directory)")
    if not Path(text).exists():
        raise unreadable(text)
    expect_kind(text, FILE)
    return [text]


def _check_files(paths: list[str]) -> None:
    """What a directory or a glob found: files (a named pipe or a folder named ``x.parquet`` is refused
    before anything opens it), and, in a sharded split's folder, its shards and nothing else."""
    for path in paths:
        expect_kind(path, FILE)
    folders = {os.path.dirname(p) for p in paths}
    for folder in folders:
        check_shard_dir(folder or ".")


def _inner_sets_hint(folder: str) -> str:
    """Name the directories of packed files one level down (a pack's output folder holding a sharded set,
    ``{split}_{N}/``, from ``bridgepack pack --engine ray``): a directory location means its own files only,
    as in Bridge, so the user is told which directory to give instead."""
    inner = sorted(
        {
            os.path.dirname(p)
            for suffix in PARQUET_SUFFIXES
            for p in glob.glob(os.path.join(folder, "*", f"*{suffix}"))
        }
    )
    if not inner:
        return ""
    return f"; give the directory of a packed set inside it: {', '.join(inner)}"


@dataclass(frozen=True)
class PackedBlock:
    """Consecutive rows of one file as three CSR pairs (offsets start at 0, length ``num_rows + 1``).

    ``first_row`` is the index of the block's first row in its file (what messages name);
    ``global_first_row`` its index across all files of the location.
    """

    path: str
    first_row: int
    global_first_row: int
    input_offsets: np.ndarray
    input_ids: np.ndarray
    mask_offsets: np.ndarray
    loss_mask: np.ndarray
    start_offsets: np.ndarray
    seq_start_id: np.ndarray
    #: Found by :func:`validate_block` with ``hashed=True`` in its one pass over the tokens: the largest
    #: token id, and the block's fingerprint hashes (what a reader checks against the recorded fingerprint).
    max_token_id: int | None = None
    hashes: BlockHashes | None = None

    @property
    def num_rows(self) -> int:
        return len(self.input_offsets) - 1

    def row_lengths(self) -> np.ndarray:
        """Stored tokens per row (int64)."""
        return np.diff(self.input_offsets)

    def sequences_per_row(self) -> np.ndarray:
        """Sequences per row (int64): the number of ``seq_start_id`` entries."""
        return np.diff(self.start_offsets)

    def sequence_lengths(self) -> np.ndarray:
        """Stored length of every sequence of every row, flat and in row order (int64).

        Each sequence ends where the next one starts, the last one at the end of its row. Assumes a valid
        block (every row has at least one start): call :func:`validate_block` first.
        """
        starts = self.seq_start_id.astype(np.int64, copy=False)
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:]
        ends[self.start_offsets[1:] - 1] = self.row_lengths()
        return ends - starts

    def sequence_rows(self) -> np.ndarray:
        """The row (within the block) of every sequence, flat and in row order (int64)."""
        return np.repeat(np.arange(self.num_rows), self.sequences_per_row())

    def sequence_starts(self) -> np.ndarray:
        """Where every sequence starts in the flat ``input_ids`` (int64): its row's offset plus its
        ``seq_start_id``. Rows ``[0, 4]`` and ``[0]`` of 7 and 3 tokens give ``[0, 4, 7]``."""
        return self.input_offsets[self.sequence_rows()] + self.seq_start_id.astype(np.int64, copy=False)

    def row(self, i: int) -> PackedRow:
        """Row ``i`` of the block (0-based within the block) as numpy views."""
        return PackedRow(
            input_ids=self.input_ids[self.input_offsets[i] : self.input_offsets[i + 1]],
            loss_mask=self.loss_mask[self.mask_offsets[i] : self.mask_offsets[i + 1]],
            seq_start_id=self.seq_start_id[self.start_offsets[i] : self.start_offsets[i + 1]],
        )


@dataclass(frozen=True)
class PackedRow:
    """One pack as numpy arrays."""

    input_ids: np.ndarray
    loss_mask: np.ndarray
    seq_start_id: np.ndarray


def _first_true(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


@numba.njit(cache=True, nogil=True)
def _token_scan(ids: np.ndarray, mask: np.ndarray, max_id: int) -> tuple[int, int]:
    """One pass over a block's flat columns: the first token id outside ``[0, max_id]`` and the first mask
    value that is not 0/1 (each ``-1`` when there is none). numpy needed five passes and three temporaries
    for the same answers, more time than hashing the block for its fingerprint."""
    bad_id = -1
    for i in range(ids.shape[0]):
        if ids[i] < 0 or ids[i] > max_id:
            bad_id = i
            break
    bad_mask = -1
    for i in range(mask.shape[0]):
        if mask[i] != 0 and mask[i] != 1:
            bad_mask = i
            break
    return bad_id, bad_mask


def _row_of(offsets: np.ndarray, flat_index: int) -> int:
    """The row holding flat element ``flat_index`` of a CSR column."""
    return int(np.searchsorted(offsets, flat_index, side="right") - 1)


def validate_block(
    block: PackedBlock, *, allow_empty_sequences: bool = True, hashed: bool = False
) -> PackedBlock:
    """Check every row invariant of bridge-format §3 over the block's offsets; raise on the first bad row.

    The message names the file, the row in it and the field: ``train.idx.parquet row 7: field
    'seq_start_id': must start at 0, found 3``. With ``allow_empty_sequences=False`` a repeated start (a
    sequence of 0 stored tokens, which Bridge's check lets through but its collate turns into a negative
    ``cu_seqlens`` step) is an error too.

    Returns the block; with ``hashed`` it carries its fingerprint hashes and largest id, computed in the
    same pass over the tokens as the id and mask checks (:func:`bridgepack.fingerprint.hash_and_check_block`:
    one read of the tokens where a check against the recorded fingerprint used to make a second).
    """
    n = block.num_rows
    row_len = block.row_lengths()
    mask_len = np.diff(block.mask_offsets)
    n_starts = block.sequences_per_row()
    starts = block.seq_start_id
    findings: list[tuple[int, int, str, str]] = []  # (row, check order, field, message)

    def note(row: int | None, order: int, field: str, message: str) -> None:
        if row is not None:
            findings.append((row, order, field, message))

    row = _first_true(mask_len != row_len)
    if row is not None:
        note(row, 0, "loss_mask", f"length {mask_len[row]} differs from len(input_ids) = {row_len[row]}")
    note(_first_true(n_starts == 0), 1, "seq_start_id", "is empty (a pack holds at least one sequence)")
    nonempty = n_starts > 0
    first_start = np.zeros(n, dtype=np.int64)
    first_start[nonempty] = starts[block.start_offsets[:-1][nonempty]]
    row = _first_true(first_start != 0)
    if row is not None:
        note(row, 2, "seq_start_id", f"must start at 0, found {first_start[row]}")
    if starts.size > 1:
        step = np.diff(starts.astype(np.int64, copy=False))
        # A step that crosses into the next row is not a step within a row.
        within = np.ones(step.size, dtype=bool)
        row_firsts = block.start_offsets[1:-1]
        within[row_firsts[(row_firsts > 0) & (row_firsts <= step.size)] - 1] = False
        bad = _first_true((step < 0) & within)
        if bad is not None:
            r = _row_of(block.start_offsets, bad + 1)
            k = bad + 1 - block.start_offsets[r]
            note(r, 3, "seq_start_id", f"not non-decreasing at index {k}: {starts[bad]} > {starts[bad + 1]}")
        if not allow_empty_sequences:
            bad = _first_true((step == 0) & within)
            if bad is not None:
                r = _row_of(block.start_offsets, bad + 1)
                k = bad + 1 - block.start_offsets[r]
                note(r, 4, "seq_start_id", f"repeats {starts[bad]} at index {k} (a sequence of 0 tokens)")
    if starts.size:
        owner = block.sequence_rows()
        bad = _first_true(starts >= row_len[owner])
        if bad is not None:
            r = int(owner[bad])
            k = bad - block.start_offsets[r]
            note(r, 5, "seq_start_id", f"entry {k} = {starts[bad]} is not < len(input_ids) = {row_len[r]}")
    if hashed and not findings:  # the offsets hold: the hash kernel may trust them
        hashes, bad_tokens, top = hash_and_check_block(block, max_id=MAX_TOKEN_ID)
        if not bad_tokens:
            return replace(block, max_token_id=top, hashes=hashes)
    bad_id, bad_mask = _token_scan(block.input_ids, block.loss_mask, MAX_TOKEN_ID)
    bad = bad_mask if bad_mask >= 0 else None
    if bad is not None:
        r = _row_of(block.mask_offsets, bad)
        note(
            r,
            7,
            "loss_mask",
            f"value {block.loss_mask[bad]} at position {bad - block.mask_offsets[r]} is not 0/1",
        )
    if bad_id >= 0:
        ids, bad = block.input_ids, bad_id
        r = _row_of(block.input_offsets, bad)
        what = (
            "negative token id" if ids[bad] < 0 else f"token id beyond {MAX_TOKEN_ID} (no vocabulary has it)"
        )
        note(r, 8, "input_ids", f"{what} {ids[bad]} at position {bad - block.input_offsets[r]}")
    if findings:
        r, _, field, message = min(findings)
        raise DataError(f"{where(block.path, row=block.first_row + r, field=field)}: {message}")
    return block


def _list_column(path: str, table: pa.Table, name: str, first_row: int) -> tuple[np.ndarray, np.ndarray]:
    """A list column of a row-group table as (offsets from 0, flat values), without copying the values."""
    column = table.column(name)
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if array.null_count:
        row = _first_true(np.asarray(array.is_null().to_numpy(zero_copy_only=False)))
        raise DataError(f"{where(path, row=first_row + (row or 0), field=name)}: is null")
    offsets = array.offsets.to_numpy().astype(np.int64)
    child = array.values
    if child.null_count:
        flat = _first_true(np.asarray(child.is_null().to_numpy(zero_copy_only=False)))
        row = _row_of(offsets, flat or 0)
        raise DataError(f"{where(path, row=first_row + row, field=name)}: holds a null value")
    values = child.to_numpy(zero_copy_only=False)[offsets[0] : offsets[-1]]
    return offsets - offsets[0], values


def _check_schema(path: str, schema: pa.Schema) -> None:
    for name in REQUIRED_COLUMNS:
        if name not in schema.names:
            raise DataError(
                f"{where(path, field=name)}: required column missing "
                f"(found columns: {', '.join(schema.names)})"
            )
        kind = schema.field(name).type
        if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)) or not (
            pa.types.is_integer(kind.value_type) or pa.types.is_boolean(kind.value_type)
        ):
            raise DataError(f"{where(path, field=name)}: expected a list of integers, found {kind}")


class PackedReader:
    """Packed Parquet file(s) of one location, opened memory-mapped, read one row group at a time.

    >>> reader = PackedReader("out/training_4096.idx.parquet")      # doctest: +SKIP
    >>> for block in reader.iter_blocks():                           # streaming, bounded memory
    ...     validate_block(block)
    >>> reader.row(17).seq_start_id                                  # random access via a row-group cache

    With ``validate=True`` every row group is checked (strictly: no empty sequences) as it is decoded.
    """

    def __init__(
        self,
        location: str | os.PathLike[str],
        *,
        cache_size: int = ROW_GROUP_CACHE_SIZE,
        validate: bool = False,
    ) -> None:
        self.location = os.fspath(location)
        self.validate = validate
        self.paths = resolve_packed_paths(location)
        self._files: dict[int, pq.ParquetFile] = {}
        self._cache: OrderedDict[tuple[int, int], PackedBlock] = OrderedDict()
        self._cache_size = max(1, cache_size)
        file_offsets = [0]
        group_offsets: list[np.ndarray] = []
        for index, path in enumerate(self.paths):
            meta = self._open(index).metadata
            if meta.num_rows == 0:
                raise DataError(f"{path}: holds no rows (an empty packed file)")
            sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
            if meta.num_rows < 0 or min(sizes, default=0) < 0 or sum(sizes) != meta.num_rows:
                # a crafted footer (found by fuzzing: a negative row count made len() raise ValueError)
                raise InputError(
                    f"{path}: corrupt Parquet footer "
                    f"(row groups hold {sum(sizes)} rows, it says {meta.num_rows})"
                )
            group_offsets.append(np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
            file_offsets.append(file_offsets[-1] + meta.num_rows)
        self.file_offsets = np.asarray(file_offsets, dtype=np.int64)
        self._group_offsets = group_offsets

    def _open(self, index: int) -> pq.ParquetFile:
        handle = self._files.get(index)
        if handle is None:
            path = self.paths[index]
            handle = open_parquet(path, memory_map=True)
            _check_schema(path, handle.schema_arrow)
            self._files[index] = handle
        return handle

    def __len__(self) -> int:
        return int(self.file_offsets[-1])

    @property
    def num_rows(self) -> int:
        return len(self)

    def _read_group(self, file_index: int, group: int, *, hashed: bool = False) -> PackedBlock:
        path = self.paths[file_index]
        first = int(self._group_offsets[file_index][group])
        table = read_row_group(self._open(file_index), path, group, list(REQUIRED_COLUMNS))
        ids = _list_column(path, table, "input_ids", first)
        mask = _list_column(path, table, "loss_mask", first)
        starts = _list_column(path, table, "seq_start_id", first)
        block = PackedBlock(
            path=path,
            first_row=first,
            global_first_row=int(self.file_offsets[file_index]) + first,
            input_offsets=ids[0],
            input_ids=ids[1],
            mask_offsets=mask[0],
            loss_mask=mask[1],
            start_offsets=starts[0],
            seq_start_id=starts[1],
        )
        if self.validate:
            block = validate_block(block, allow_empty_sequences=False, hashed=hashed)
        return block

    def iter_blocks(self, *, hashed: bool = False) -> Iterator[PackedBlock]:
        """Every row group of every file in order; only one is decoded at a time. With ``hashed`` (and
        ``validate``) each block carries its fingerprint hashes (:func:`validate_block`)."""
        for file_index in range(len(self.paths)):
            for group in range(len(self._group_offsets[file_index]) - 1):
                yield self._read_group(file_index, group, hashed=hashed)

    def locate(self, index: int) -> tuple[int, int, int]:
        """(file index, row group, row within the group) of global row ``index`` (negative counts back)."""
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"row {index} out of range for {n} rows")
        file_index = int(np.searchsorted(self.file_offsets, index, side="right") - 1)
        in_file = index - int(self.file_offsets[file_index])
        groups = self._group_offsets[file_index]
        group = int(np.searchsorted(groups, in_file, side="right") - 1)
        return file_index, group, in_file - int(groups[group])

    def block_of(self, index: int) -> tuple[PackedBlock, int]:
        """The (cached) row group holding global row ``index`` and the row's position in it."""
        file_index, group, in_group = self.locate(index)
        key = (file_index, group)
        block = self._cache.get(key)
        if block is None:
            block = self._read_group(file_index, group)
            self._cache[key] = block
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return block, in_group

    def row(self, index: int) -> PackedRow:
        """Global row ``index`` across the location's files (negative indices count from the end)."""
        block, in_group = self.block_of(index)
        return block.row(in_group)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without open handles or cached groups (DataLoader workers started with spawn reopen)."""
        state = self.__dict__.copy()
        state["_files"] = {}
        state["_cache"] = OrderedDict()
        return state

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._files.clear()
        self._cache.clear()
