"""The legacy packed ``.npy`` of Bridge <= v0.5, read safely: a pickled object array of dicts, never loaded
with ``allow_pickle``.

What is admitted, and nothing else: the ``.npy`` header (parsed by numpy, its length bounded first), then a
pickle stream read by the pure-Python unpickler with a closed table of globals (:data:`_SAFE_GLOBALS`):
numpy's ``ndarray``, ``dtype`` (plain dtypes only: bool, integers and floats of 1-8 bytes, object for the
rows), its array reconstruction and ``_frombuffer``, numpy scalars, and the latin-1 ``_codecs.encode`` its
pickles use. Every allocation is checked against the bytes actually present (``BYTEARRAY8`` included), so
a crafted shape or length cannot ask for gigabytes. Each row must be a dict of the three packed columns
(bridge-format §3); the result is one :class:`~bridgepack.data.packed.PackedBlock`.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import re
import struct
import tokenize
from types import MappingProxyType
from typing import Any, cast

import numpy as np

from bridgepack._io import unreadable
from bridgepack.data.packed._reader import PackedBlock
from bridgepack.data.packset import REQUIRED_COLUMNS
from bridgepack.errors import DataError, InputError, shown, where

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
