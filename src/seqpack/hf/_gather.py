"""Numba kernels that copy token runs out of Arrow buffers: the only O(tokens) work of ``pack_dataset``.

A column arrives as Arrow chunks (a ``datasets`` cache file holds one record batch per 1,000 rows); each
fragment names its chunk and the position of its first value in that chunk's values buffer, so a copy is
one ``memcpy``-like loop per fragment, straight from the memory-mapped input into the output buffer::

    chunks    c0 values [a b c d e]      c1 values [f g h]
    fragments (chunk 1, start 1, len 2) (chunk 0, start 0, len 3)
    out       [g h a b c]
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt
from numba.typed import List

IntArray = npt.NDArray[np.int64]


@numba.njit(cache=True, nogil=True)
def copy_runs(chunks: List, chunk_of: IntArray, starts: IntArray, lengths: IntArray, out: np.ndarray) -> None:
    """``out`` = ``chunks[chunk_of[i]][starts[i] : starts[i] + lengths[i]]`` for each ``i``, end to end."""
    pos = 0
    for i in range(chunk_of.shape[0]):
        src = chunks[chunk_of[i]]
        start = starts[i]
        for j in range(lengths[i]):
            out[pos + j] = src[start + j]
        pos += lengths[i]


@numba.njit(cache=True, nogil=True)
def run_indices(starts: IntArray, lengths: IntArray) -> IntArray:
    """Value positions of the runs, concatenated (for value types the copy kernel cannot hold: ``take``)."""
    out = np.empty(lengths.sum(), dtype=np.int64)
    pos = 0
    for i in range(starts.shape[0]):
        for j in range(lengths[i]):
            out[pos + j] = starts[i] + j
        pos += lengths[i]
    return out


def typed_chunks(arrays: list[np.ndarray]) -> List:
    """The chunks' value buffers as a numba typed list (one dtype for all)."""
    chunks = List()
    for array in arrays:
        chunks.append(array)
    return chunks
