"""Readers of packed data: Bridge's packed Parquet (spec §3) and, safely, the legacy pickled ``.npy``.

One row is one pack. Three list columns hold it (extra columns are allowed and ignored)::

    input_ids    [10, 11, 12,  2 | 20, 21,  2]      stored tokens of every sequence, EOS-terminated
    loss_mask    [ 1,  1,  1,  0 |  1,  1,  0]      mask rolled left: loss_mask[j] supervises token j+1
    seq_start_id [0, 4]                              start offset of each sequence (total excluded)

Row invariants (spec §3): ``len(loss_mask) == len(input_ids)``; ``seq_start_id`` non-empty, starting at 0,
non-decreasing, each ``< len(input_ids)``; mask values 0/1. Stored sequence lengths follow from the starts
(``[4, 3]`` above); Bridge counts *runtime* lengths, one less per sequence (``[3, 2]``).

Data stays in Arrow/numpy buffers: a row group is read as three CSR pairs (offsets + flat values), checked
with vectorised numpy over the offsets, and dropped when the next one arrives, so a file of a million packs
is never loaded whole. Random access (:meth:`PackedReader.row`) goes through a small LRU cache of row groups,
as Bridge's dataset does with its one-group cache.
"""

from __future__ import annotations

import glob
import io
import math
import os
import pickle
import re
import struct
import tokenize
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from seqpack._io import unreadable
from seqpack.errors import DataError, InputError, shown, where

#: The three columns every packed Parquet file must hold, in Bridge's order (spec §3).
REQUIRED_COLUMNS: tuple[str, ...] = ("input_ids", "loss_mask", "seq_start_id")
#: File name endings Bridge accepts as Parquet, compared case-insensitively (``data/packing/paths.py``).
PARQUET_SUFFIXES: tuple[str, ...] = (".parquet", ".pq")
#: Row groups kept decoded for random access; Bridge keeps one, a few more spare a shuffled sampler rereads.
ROW_GROUP_CACHE_SIZE = 4


def _is_parquet_name(path: str) -> bool:
    return path.lower().endswith(PARQUET_SUFFIXES)


def resolve_packed_paths(spec: str | os.PathLike[str]) -> list[str]:
    """The packed Parquet files a spec names, by Bridge 0.6.2's rules (``data/packing/paths.py``).

    * a glob (``*`` or ``?`` in it): the matches ending in ``.parquet``/``.pq`` (any case), sorted;
    * a directory: its ``*.parquet`` and ``*.pq`` files (not recursive, hidden files skipped), sorted and
      de-duplicated;
    * a file: itself, when it ends in ``.parquet``/``.pq`` and exists.

    Bridge returns an empty list for a single file of another suffix; seqpack says so instead. Raises
    :class:`InputError` naming the spec when nothing matches.
    """
    text = os.fspath(spec)
    if "*" in text or "?" in text:
        paths = sorted({p for p in glob.glob(text) if _is_parquet_name(p)})
        if not paths:
            raise InputError(f"{text}: no Parquet files match (names must end with .parquet or .pq)")
        return paths
    if Path(text).is_dir():
        found = glob.glob(os.path.join(text, "*.parquet")) + glob.glob(os.path.join(text, "*.pq"))
        paths = sorted(set(found))
        if not paths:
            raise InputError(f"{text}: directory holds no .parquet or .pq files")
        return paths
    if not _is_parquet_name(text):
        raise InputError(
            f"{text}: not a packed Parquet spec (expected a .parquet/.pq file, a glob or a directory)"
        )
    if not Path(text).exists():
        raise unreadable(text)
    return [text]


@dataclass(frozen=True)
class PackedBlock:
    """Consecutive rows of one file as three CSR pairs (offsets start at 0, length ``num_rows + 1``).

    ``first_row`` is the index of the block's first row in its file (what messages name);
    ``global_first_row`` its index across all files of the spec.
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


def _row_of(offsets: np.ndarray, flat_index: int) -> int:
    """The row holding flat element ``flat_index`` of a CSR column."""
    return int(np.searchsorted(offsets, flat_index, side="right") - 1)


def validate_block(block: PackedBlock, *, allow_empty_sequences: bool = True) -> None:
    """Check every row invariant of spec §3 over the block's offsets; raise on the first bad row.

    The message names the file, the row in it and the field: ``train.idx.parquet row 7: field
    'seq_start_id': must start at 0, found 3``. With ``allow_empty_sequences=False`` a repeated start (a
    sequence of 0 stored tokens, which Bridge's check lets through but its collate turns into a negative
    ``cu_seqlens`` step) is an error too.
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
        owner = np.repeat(np.arange(n), n_starts)
        bad = _first_true(starts >= row_len[owner])
        if bad is not None:
            r = int(owner[bad])
            k = bad - block.start_offsets[r]
            note(r, 5, "seq_start_id", f"entry {k} = {starts[bad]} is not < len(input_ids) = {row_len[r]}")
    bad = _first_true((block.loss_mask != 0) & (block.loss_mask != 1))
    if bad is not None:
        r = _row_of(block.mask_offsets, bad)
        note(
            r,
            7,
            "loss_mask",
            f"value {block.loss_mask[bad]} at position {bad - block.mask_offsets[r]} is not 0/1",
        )
    bad = _first_true(block.input_ids < 0)
    if bad is not None:
        r = _row_of(block.input_offsets, bad)
        note(
            r,
            8,
            "input_ids",
            f"negative token id {block.input_ids[bad]} at position {bad - block.input_offsets[r]}",
        )
    if findings:
        r, _, field, message = min(findings)
        raise DataError(f"{where(block.path, row=block.first_row + r, field=field)}: {message}")


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
    """Packed Parquet file(s) of one spec, opened memory-mapped, read one row group at a time.

    >>> reader = PackedReader("out/training_4096.idx.parquet")      # doctest: +SKIP
    >>> for block in reader.iter_blocks():                           # streaming, bounded memory
    ...     validate_block(block)
    >>> reader.row(17).seq_start_id                                  # random access via a row-group cache

    With ``validate=True`` every row group is checked (strictly: no empty sequences) as it is decoded.
    """

    def __init__(
        self, spec: str | os.PathLike[str], *, cache_size: int = ROW_GROUP_CACHE_SIZE, validate: bool = False
    ) -> None:
        self.spec = os.fspath(spec)
        self.validate = validate
        self.paths = resolve_packed_paths(spec)
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
            try:
                handle = pq.ParquetFile(path, memory_map=True)
            except (pa.ArrowException, OSError, ValueError) as exc:  # ValueError: undecodable column names
                raise InputError(f"{path}: cannot read as Parquet ({exc})") from None
            _check_schema(path, handle.schema_arrow)
            self._files[index] = handle
        return handle

    def __len__(self) -> int:
        return int(self.file_offsets[-1])

    @property
    def num_rows(self) -> int:
        return len(self)

    def _read_group(self, file_index: int, group: int) -> PackedBlock:
        path = self.paths[file_index]
        first = int(self._group_offsets[file_index][group])
        try:
            table = self._open(file_index).read_row_group(group, columns=list(REQUIRED_COLUMNS))
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{path}: row group {group} cannot be read ({exc})") from None
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
            validate_block(block, allow_empty_sequences=False)
        return block

    def iter_blocks(self) -> Iterator[PackedBlock]:
        """Every row group of every file in order; only one is decoded at a time."""
        for file_index in range(len(self.paths)):
            for group in range(len(self._group_offsets[file_index]) - 1):
                yield self._read_group(file_index, group)

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
        """Global row ``index`` across the spec's files (negative indices count from the end)."""
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


# ---------------------------------------------------------------------------------------------------------
# Legacy .npy (Bridge <= v0.5): a pickled object array of dicts. Read only through a restricted unpickler.


#: dtypes a legacy file may hold: bool, integers, floats (one of 1-8 bytes) and object (the rows).
_PLAIN_DTYPE = re.compile(r"[biuf][1248]|O8")


class _DTypeState:
    """A dtype as a pickle describes it (``dtype('i8', False, True)`` then BUILD with its state).

    Nothing is built until :meth:`resolve`, which admits plain dtypes only: a crafted state (fields,
    sub-arrays, odd item sizes) never reaches numpy's ``dtype.__setstate__``.
    """

    def __init__(self, spec: Any, align: Any = False, copy: Any = True) -> None:
        self.spec = spec
        self.state: Any = None

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def resolve(self) -> np.dtype:
        spec, state = self.spec, self.state
        if not isinstance(spec, str) or not _PLAIN_DTYPE.fullmatch(spec):
            raise pickle.UnpicklingError(f"refused dtype {shown(spec)} (plain numbers or objects only)")
        order = state[1] if isinstance(state, tuple) and len(state) > 4 else "|"
        if order not in ("<", ">", "|", "=") or any(part is not None for part in state[2:5]):
            raise pickle.UnpicklingError(f"refused dtype state {shown(state)}")
        dtype = np.dtype(spec)
        return dtype.newbyteorder("<" if order == "<" else ">") if order in ("<", ">") else dtype


def _plain_dtype(value: Any) -> np.dtype:
    if not isinstance(value, _DTypeState):
        raise pickle.UnpicklingError(f"expected a dtype, found {type(value).__name__}")
    return value.resolve()


class _CheckedArray(np.ndarray):
    """The array numpy's pickle BUILD fills, with its state checked first.

    ``ndarray.__setstate__`` trusts the state: an object array of shape ``(2,)`` given a list of one item
    reads a pointer past the list's end (a crash, or worse). Here the item count must match the shape and
    plain data must be exactly ``size * itemsize`` bytes.
    """

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, tuple) or len(state) not in (4, 5):
            raise pickle.UnpicklingError("malformed ndarray state")
        version, (shape, dtype_state, fortran, data) = (
            (state[0], state[1:]) if len(state) == 5 else (1, state)
        )
        if (
            not isinstance(shape, tuple)
            or len(shape) > 32
            or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**40 for n in shape)
        ):
            raise pickle.UnpicklingError(f"malformed ndarray shape {shown(shape)}")
        size = math.prod(shape)
        dtype = _plain_dtype(dtype_state)
        if dtype.hasobject:
            if not isinstance(data, list) or len(data) != size:
                raise pickle.UnpicklingError(f"object array of shape {shape} with mismatched items")
        elif not isinstance(data, bytes) or len(data) != size * dtype.itemsize:
            raise pickle.UnpicklingError(f"array of shape {shape} with mismatched data")
        # numpy wants a plain bool flag here (its stubs say numpy.bool, which it refuses).
        super().__setstate__(cast(Any, (version, shape, dtype, bool(fortran), data)))


def _empty_reconstruct(subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
    """numpy's ``_reconstruct``, for the one call its pickles make: an empty array that BUILD then fills.

    The real one allocates any shape it is given (``_reconstruct(ndarray, (10**12,), b'b')`` claims a
    terabyte); here anything but ``(ndarray, (0,), ...)`` is refused.
    """
    if subtype is not np.ndarray or tuple(shape) != (0,):
        raise pickle.UnpicklingError("refused numpy _reconstruct of anything but an empty ndarray")
    return np.ndarray.__new__(_CheckedArray, (0,), np.uint8)


def _plain_scalar(dtype_state: Any, data: Any = None) -> Any:
    """numpy's ``scalar`` for plain dtypes only (its object/structured paths trust the bytes as pointers)."""
    dtype = _plain_dtype(dtype_state)
    if dtype.hasobject or not isinstance(data, bytes) or len(data) != dtype.itemsize:
        raise pickle.UnpicklingError(f"refused numpy scalar of dtype {dtype}")
    return np.frombuffer(data, dtype=dtype)[0]


def _plain_frombuffer(buffer: Any, dtype_state: Any, shape: Any, order: Any) -> np.ndarray:
    """numpy's ``_frombuffer`` (protocol-5 arrays) for plain dtypes and a buffer of exactly the right size."""
    dtype = _plain_dtype(dtype_state)
    data = buffer.raw() if isinstance(buffer, pickle.PickleBuffer) else buffer
    if (
        dtype.hasobject
        or not isinstance(data, (bytes, bytearray, memoryview))
        or not isinstance(shape, tuple)
        or not all(isinstance(n, int) and n >= 0 for n in shape)
        or len(data) != math.prod(shape) * dtype.itemsize
        or order not in ("C", "F")
    ):
        raise pickle.UnpicklingError("refused numpy _frombuffer with mismatched shape, dtype or data")
    return np.frombuffer(data, dtype=dtype).reshape(shape, order=order).copy()


def _latin1_encode(text: Any, encoding: str = "utf-8") -> bytes:
    """``_codecs.encode`` as protocol-2 pickles use it (bytes written as latin-1 text), and nothing else."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("refused _codecs.encode other than str -> latin1 bytes")
    return text.encode("latin1")


#: What an object-array ``.npy`` may reference, found by unpickling real ones: numpy's array, dtype and
#: scalar rebuilders (each replaced by a checked one above; ``_frombuffer`` in protocol 5) and, in
#: protocol 2, ``_codecs.encode``. No
#: builtins: ``bytes(10**12)``, ``list(range(...))`` would let a few bytes of pickle allocate without bound.
_SAFE_GLOBALS: MappingProxyType[tuple[str, str], Any] = MappingProxyType(
    {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): _DTypeState,
        ("numpy.core.multiarray", "_reconstruct"): _empty_reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): _empty_reconstruct,
        ("numpy.core.multiarray", "scalar"): _plain_scalar,
        ("numpy._core.multiarray", "scalar"): _plain_scalar,
        ("numpy._core.numeric", "_frombuffer"): _plain_frombuffer,
        ("numpy.core.numeric", "_frombuffer"): _plain_frombuffer,
        ("_codecs", "encode"): _latin1_encode,
    }
)


def _load_bytearray8(unpickler: Any) -> None:
    """BYTEARRAY8 (protocol-5 arrays) reading the bytes before building the bytearray: the stock one
    allocates the declared length first (found by fuzzing: 4 GiB from a 400-byte file)."""
    (size,) = struct.unpack("<Q", unpickler.read(8))
    data = unpickler.read(size)
    if len(data) != size:
        raise pickle.UnpicklingError(f"BYTEARRAY8 declares {size} bytes, {len(data)} remain")
    unpickler.append(bytearray(data))


class _RestrictedUnpickler(pickle._Unpickler):
    """Refuses every global outside :data:`_SAFE_GLOBALS`, so a crafted file cannot run code.

    Built on the pure-Python unpickler, not the C one: the C unpickler allocates a ``BINBYTES``' declared
    length *before* reading it, so 13 bytes of pickle claiming 4 GiB allocate 4 GiB (found by fuzzing);
    the Python one reads what is there and fails on the truncation. It is ~3.5x slower (2M tokens/s of a
    legacy file here), which a format Bridge stopped writing in v0.6 can afford.
    """

    # The stock table, with BYTEARRAY8 replaced (pickle looks opcodes up in ``self.dispatch``).
    dispatch = {**pickle._Unpickler.dispatch, pickle.BYTEARRAY8[0]: _load_bytearray8}  # noqa: RUF012

    def find_class(self, module: str, name: str) -> Any:
        found = _SAFE_GLOBALS.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"refused to load '{module}.{name}' (only numpy arrays and scalars)")
        return found


def _safe_unpickle(path: str, payload: bytes) -> Any:
    try:
        return _RestrictedUnpickler(io.BytesIO(payload)).load()
    except pickle.UnpicklingError as exc:
        raise DataError(f"{path}: unsafe or invalid pickle in legacy .npy: {exc}") from None
    except Exception as exc:  # any other failure of a malformed stream
        raise InputError(f"{path}: cannot unpickle legacy .npy ({exc.__class__.__name__}: {exc})") from None


#: numpy's own bound on a ``.npy`` header it will parse (``max_header_size``); the length field is read
#: first, so a crafted 4 GiB length is refused before anything is allocated.
MAX_NPY_HEADER = 10_000


def _check_header_length(handle: Any, version: tuple[int, int]) -> None:
    width = 2 if version == (1, 0) else 4
    position = handle.tell()
    raw = handle.read(width)
    handle.seek(position)
    if len(raw) == width and int.from_bytes(raw, "little") > MAX_NPY_HEADER:
        raise ValueError(f"header length {int.from_bytes(raw, 'little')} exceeds {MAX_NPY_HEADER} bytes")


def read_legacy_npy(path: str | os.PathLike[str]) -> PackedBlock:
    """Read a legacy packed ``.npy`` (an object array of dicts) as one block, never via ``allow_pickle``.

    The ``.npy`` header is parsed by numpy; the pickle stream after it goes through a restricted
    unpickler that admits builtins and numpy arrays only.
    """
    text = os.fspath(path)
    try:
        with open(text, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            _check_header_length(handle, version)
            if version == (1, 0):
                _shape, _fortran, dtype = np.lib.format.read_array_header_1_0(handle)
            else:
                _shape, _fortran, dtype = np.lib.format.read_array_header_2_0(handle)
            payload = handle.read()
    except FileNotFoundError as exc:
        raise unreadable(text, exc) from None
    # numpy parses the header dict as Python literals (TypeError: keys of mixed types it then sorts)
    except (OSError, ValueError, TypeError, SyntaxError, tokenize.TokenError) as exc:
        raise InputError(f"{text}: not a .npy file ({exc.__class__.__name__}: {exc})") from None
    if dtype != np.dtype(object):
        raise DataError(f"{text}: expected a pickled object array of dicts, found dtype {dtype}")
    rows = _safe_unpickle(text, payload)
    items = list(np.asarray(rows, dtype=object).reshape(-1))
    if not items:
        raise DataError(f"{text}: holds no rows (an empty packed file)")
    columns: dict[str, list[np.ndarray]] = {name: [] for name in REQUIRED_COLUMNS}
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise DataError(f"{where(text, row=index)}: expected a dict, found {type(item).__name__}")
        for name in REQUIRED_COLUMNS:
            if name not in item:
                raise DataError(f"{where(text, row=index, field=name)}: missing")
            try:
                values = np.asarray(item[name], dtype=np.int64).reshape(-1)
            except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond int64
                raise DataError(
                    f"{where(text, row=index, field=name)}: expected a list of integers"
                ) from None
            columns[name].append(values)

    def csr(name: str) -> tuple[np.ndarray, np.ndarray]:
        parts = columns[name]
        offsets = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
        return offsets, np.concatenate(parts) if parts else np.zeros(0, np.int64)

    ids, mask, starts = csr("input_ids"), csr("loss_mask"), csr("seq_start_id")
    return PackedBlock(text, 0, 0, ids[0], ids[1], mask[0], mask[1], starts[0], starts[1])
