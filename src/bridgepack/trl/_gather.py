"""Copying token runs out of Arrow buffers: the only O(tokens) work of ``pack_dataset``.

A column arrives as Arrow chunks (a ``datasets`` cache file holds one record batch per 1,000 rows). Rather
than hand numba a list of chunks (a numba typed list costs seconds of compilation in every process), the
chunks' value buffers are seen through **one** numpy view spanning from the lowest to the highest buffer
address; each run is then ``(start in that view, length)`` and a copy is one tight loop per run, straight
from the (memory-mapped) input into the output buffer::

    memory    [c1 values: f g h] ... [c0 values: a b c d e]      (any order, any gaps)
    view      base = address of f;  c1 starts at 0, c0 at (address of a - base) / itemsize = k
    runs      (1, 2) (k, 3)   ->   out [g h a b c]

Only bytes inside the chunks' own buffers are ever read; the view merely spans the gaps between them.
"""

from __future__ import annotations

import ctypes

import numba
import numpy as np
import numpy.typing as npt
import pyarrow as pa

IntArray = npt.NDArray[np.int64]


@numba.njit(cache=True, nogil=True)
def copy_runs(source: np.ndarray, starts: IntArray, lengths: IntArray, out: np.ndarray) -> None:
    """``out`` = ``source[starts[i] : starts[i] + lengths[i]]`` for each ``i``, end to end."""
    pos = 0
    for i in range(starts.shape[0]):
        start = starts[i]
        for j in range(lengths[i]):
            out[pos + j] = source[start + j]
        pos += lengths[i]


@numba.njit(cache=True, nogil=True)
def run_indices(starts: IntArray, lengths: IntArray) -> IntArray:
    """Value positions of the runs, end to end (for value types the copy cannot hold: Arrow ``take``)."""
    out = np.empty(lengths.sum(), dtype=np.int64)
    pos = 0
    for i in range(starts.shape[0]):
        for j in range(lengths[i]):
            out[pos + j] = starts[i] + j
        pos += lengths[i]
    return out


def spanning_view(chunks: list[pa.Array]) -> tuple[np.ndarray, IntArray] | None:
    """One numpy view over the value buffers of ``chunks`` (numbers, no nulls, one type) and the position
    of each chunk's first value in it; None when a buffer is not aligned to the item size.

    The view does not own the memory: the caller keeps ``chunks`` alive while it is used.
    """
    dtype = np.dtype(chunks[0].type.to_pandas_dtype())
    size = dtype.itemsize
    addresses = np.array(
        [c.buffers()[1].address + c.offset * size if len(c) else -1 for c in chunks], dtype=np.int64
    )
    used = addresses >= 0
    if not used.any():
        return np.empty(0, dtype=dtype), np.zeros(len(chunks), dtype=np.int64)
    base = int(addresses[used].min())
    end = max(int(a) + len(c) * size for a, c in zip(addresses, chunks, strict=True) if a >= 0)
    if np.any((addresses[used] - base) % size):
        return None
    view = np.frombuffer((ctypes.c_char * (end - base)).from_address(base), dtype=dtype)
    return view, np.where(used, (addresses - base) // size, 0)
