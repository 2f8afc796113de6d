"""The on-disk scratch store of pass 1: every stored example, flat, in two files.

Pass 1 appends examples here as they are read (and tokenized); the plan needs only their lengths, and
pass 2 reads each row group's examples back by offset. So memory holds O(samples) integers, never the
tokens::

    tokens  (uint32, on disk)  [5 6 2 | 7 2 | 8 9 9 2]
    mask    (uint8,  on disk)  [0 1 1 | 1 1 | 0 0 1 1]     per input token, before the roll
    offsets (int64,  in RAM)   [0, 3, 5, 9]

Both directions use plain positional file I/O, never a memory map: a pack draws examples from all over
the file, and mapping them (even with ``MADV_RANDOM``) lets the kernel map whole large folios per fault,
so one row group of 500 packs could pull the entire file into this process's RSS. ``pread`` into a
per-row-group buffer keeps resident memory at one row group. A row group is thousands of small reads,
so they are issued from a numba kernel calling libc's ``pread`` (no Python per read, no GIL: pass 2
builds row groups on several threads). Reading is thread-safe; appending is not (pass 1 appends from
one thread). A full disk is a clear error naming the directory (``--scratch-dir`` chooses another).

The ray engine's phase 1 writes each slice's store as a *spool* in the shared staging directory, with its
offsets on disk too (``offsets.i64``); phase 2 reads samples of many spools with :class:`SpoolReader`,
which takes each sample's bounds from that file, so no process loads a spool's offsets whole.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
from pathlib import Path
from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from bridgepack._io import is_disk_full
from bridgepack.data.pipeline._lock import hold_scratch, scratch_name
from bridgepack.errors import InputError, param


def _disk_error(directory: Path, exc: OSError) -> InputError:
    """One line about the scratch store in ``directory``, naming the folder the user chose (the output
    directory or ``--scratch-dir``), never the store's own internal name inside it."""
    where = directory.parent
    if is_disk_full(exc):
        return InputError(
            f"{where}: no space left for the scratch store (choose another with {param('scratch_dir')})"
        )
    return InputError(f"{where}: cannot use the scratch store ({exc.strerror})")


def _libc_pread() -> Any:
    """libc's ``pread(fd, buf, count, offset)`` as a ctypes function numba can call."""
    function = ctypes.CDLL(None, use_errno=True).pread
    function.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64]
    function.restype = ctypes.c_ssize_t
    return function


_PREAD = _libc_pread()


@numba.njit(cache=True, nogil=True)
def _pread_ranges(pread: Any, fd: int, starts: np.ndarray, sizes: np.ndarray, out: np.ndarray) -> int:
    """Read byte ranges ``[starts[i], starts[i] + sizes[i])`` of ``fd`` into ``out``, concatenated.

    ``pread`` comes in as an argument (not a global) so the compiled kernel can be cached on disk.
    Returns -1, or the index of the first range that came back short (the caller re-reads it to raise).
    """
    base = out.ctypes.data
    pos = 0
    for i in range(starts.shape[0]):
        size = sizes[i]
        if size > 0 and pread(fd, base + pos, size, starts[i]) != size:
            return i
        pos += size
    return -1


class _FlatFile:
    """A 1-D array on disk: appended with ``write``, read back by element ranges with ``preadv``."""

    def __init__(self, path: Path, dtype: npt.DTypeLike, existing: bool = False) -> None:
        self.path = path
        self.dtype = np.dtype(dtype)
        if existing:  # a finished file of another process, read only
            self._fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            self.size = os.fstat(self._fd).st_size // self.dtype.itemsize
        else:
            self.size = 0
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)

    def append(self, values: np.ndarray) -> None:
        data = np.ascontiguousarray(values, dtype=self.dtype)
        view = data.data.cast("B")
        offset = self.size * self.dtype.itemsize
        try:
            while view:
                written = os.pwrite(self._fd, view, offset)
                view, offset = view[written:], offset + written
        except OSError as exc:
            raise _disk_error(self.path.parent, exc) from None
        self.size += len(data)

    def read_ranges(self, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """Elements ``[starts[i], stops[i])`` for every ``i``, concatenated in that order."""
        item = self.dtype.itemsize
        sizes = (stops - starts) * item
        out = np.empty(int(sizes.sum()) // item, dtype=self.dtype)
        failed = _pread_ranges(_PREAD, self._fd, starts * item, sizes, out.view(np.uint8))
        if failed >= 0:  # pragma: no cover - I/O error on the scratch disk, or the file changed under us
            try:
                got = os.pread(self._fd, int(sizes[failed]), int(starts[failed]) * item)
            except OSError as exc:
                raise _disk_error(self.path.parent, exc) from None
            raise InputError(
                f"{self.path.parent.parent}: short read from the scratch store ({len(got)} bytes)"
            )
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


#: The files of a store: flat tokens, flat mask, and (a spool, ``offsets_on_disk``) the offsets.
_TOKENS, _MASK, _OFFSETS = "tokens.u32", "mask.u8", "offsets.i64"


class ScratchStore:
    """Stored examples appended in order; example ``i`` is ``[offsets[i], offsets[i+1])``.

    ``offsets_on_disk``: also write the offsets to the store (a spool of the ray engine's first phase,
    read later by other processes with :class:`SpoolReader`, which never loads them whole).
    """

    def __init__(self, directory: Path, offsets_on_disk: bool = False) -> None:
        self.directory = directory
        try:
            directory.parent.mkdir(parents=True, exist_ok=True)
            directory.mkdir()  # never an existing one: a link planted under this name is not followed
            self._owner = hold_scratch(directory)  # held until remove(): see bridgepack.data.pipeline._lock
            self._tokens = _FlatFile(directory / _TOKENS, np.uint32)
            self._mask = _FlatFile(directory / _MASK, np.uint8)
            self._disk_offsets = _FlatFile(directory / _OFFSETS, np.int64) if offsets_on_disk else None
            if self._disk_offsets is not None:
                self._disk_offsets.append(np.zeros(1, np.int64))
        except OSError as exc:
            raise _disk_error(directory, exc) from None
        self._ends: list[np.ndarray] = []
        self._offsets: np.ndarray | None = None

    def append(self, tokens: np.ndarray, mask: np.ndarray, lengths: np.ndarray) -> None:
        """Append a chunk of examples: flat ``tokens``/``mask`` and the stored length of each example."""
        if len(lengths) == 0:
            return
        base = self._tokens.size
        self._tokens.append(tokens)
        self._mask.append(mask)
        self._ends.append(base + np.cumsum(lengths, dtype=np.int64))
        if self._disk_offsets is not None:
            self._disk_offsets.append(self._ends[-1])
        self._offsets = None

    def offsets(self) -> np.ndarray:
        """``int64[num_examples + 1]``: where each example starts in the flat files.

        Call it once after the last ``append`` and before reading from several threads.
        """
        if self._offsets is None:
            self._offsets = np.concatenate([np.zeros(1, dtype=np.int64), *self._ends])
        return self._offsets

    def read(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Examples ``items`` (in that order): flat uint32 tokens, uint8 mask, stored lengths."""
        offsets = self.offsets()
        starts, stops = offsets[items], offsets[items + 1]
        return self._tokens.read_ranges(starts, stops), self._mask.read_ranges(starts, stops), stops - starts

    def sizes(self) -> dict[str, int]:
        """Bytes in each of the store's files (what a finished spool's record keeps, to check it later)."""
        files = [self._tokens, self._mask, *([self._disk_offsets] if self._disk_offsets else [])]
        return {f.path.name: f.size * f.dtype.itemsize for f in files}

    def close(self) -> None:
        """Close the files and let go of the directory, keeping it (a finished spool)."""
        for flat in (self._tokens, self._mask, self._disk_offsets):
            if flat is not None:
                flat.close()
        with contextlib.suppress(OSError):
            os.close(self._owner)

    def remove(self) -> None:
        """Close the files and delete the directory (called on success, error and Ctrl-C alike)."""
        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)


class SpoolReader:
    """A finished spool (a :class:`ScratchStore` written with ``offsets_on_disk``, by another process),
    read by example: each example's bounds come from the offsets file too, so only the examples asked for
    are ever in memory, never the spool's offsets. Thread-safe (positional reads only)."""

    def __init__(self, directory: Path) -> None:
        try:
            self._tokens = _FlatFile(directory / _TOKENS, np.uint32, existing=True)
            self._mask = _FlatFile(directory / _MASK, np.uint8, existing=True)
            self._offsets = _FlatFile(directory / _OFFSETS, np.int64, existing=True)
        except OSError as exc:
            raise _disk_error(directory, exc) from None

    def read(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Examples ``items`` (in that order): flat uint32 tokens, uint8 mask, stored lengths."""
        bounds = self._offsets.read_ranges(items, items + 2).reshape(-1, 2)
        starts, stops = bounds[:, 0], bounds[:, 1]
        return self._tokens.read_ranges(starts, stops), self._mask.read_ranges(starts, stops), stops - starts

    def close(self) -> None:
        for flat in (self._tokens, self._mask, self._offsets):
            flat.close()


def default_scratch_dir(out_dir: Path) -> Path:
    """A hidden directory inside the output directory, unique per run (see :func:`scratch_name`)."""
    return out_dir / scratch_name()
