"""The memory-mapped scratch store of pass 1: every stored example, flat, on disk.

Pass 1 appends examples here as they are read (and tokenized); the plan needs only their lengths, and
pass 2 gathers each pack's tokens back by offset. So memory holds O(samples) integers, never the tokens::

    tokens  (uint32, on disk)  [5 6 2 | 7 2 | 8 9 9 2]
    mask    (uint8,  on disk)  [0 1 1 | 1 1 | 0 0 1 1]     per input token, before the roll
    offsets (int64,  in RAM)   [0, 3, 5, 9]

The two files grow by doubling (``np.memmap`` over a file extended with ``truncate``), so appends are
amortised O(1) without holding the data. An out-of-disk error names the directory (``--scratch-dir``).
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import numpy as np
import numpy.typing as npt

from seqpack.errors import InputError

#: Largest token id the scratch store holds (uint32); vocabularies are far below it.
MAX_TOKEN_ID = 2**32 - 1
_INITIAL_CAPACITY = 1 << 20


class _GrowingFile:
    """A 1-D array on disk that grows by doubling; ``view()`` is a memmap of the filled part."""

    def __init__(self, path: Path, dtype: npt.DTypeLike) -> None:
        self.path = path
        self.dtype = np.dtype(dtype)
        self.size = 0
        self.capacity = 0
        self._map: np.memmap | None = None
        path.touch()

    def _grow(self, needed: int) -> None:
        capacity = max(_INITIAL_CAPACITY, self.capacity)
        while capacity < needed:
            capacity *= 2
        self._map = None
        try:
            with open(self.path, "r+b") as handle:
                handle.truncate(capacity * self.dtype.itemsize)
        except OSError as exc:
            raise _disk_error(self.path.parent, exc) from None
        self.capacity = capacity
        self._map = np.memmap(self.path, dtype=self.dtype, mode="r+", shape=(capacity,))

    def append(self, values: np.ndarray) -> None:
        end = self.size + len(values)
        if end > self.capacity:
            self._grow(end)
        assert self._map is not None
        try:
            self._map[self.size : end] = values
        except OSError as exc:  # pragma: no cover - sparse files fail on write when the disk is full
            raise _disk_error(self.path.parent, exc) from None
        self.size = end

    def view(self) -> np.ndarray:
        if self._map is None:
            return np.zeros(0, dtype=self.dtype)
        return self._map[: self.size]

    def close(self) -> None:
        if self._map is not None:
            self._map.flush()
        self._map = None


def _disk_error(directory: Path, exc: OSError) -> InputError:
    if exc.errno == errno.ENOSPC:
        return InputError(
            f"{directory}: no space left for the scratch store (choose another with --scratch-dir)"
        )
    return InputError(f"{directory}: cannot write the scratch store ({exc.strerror})")


class ScratchStore:
    """Stored examples appended in order; example ``i`` is ``[offsets[i], offsets[i+1])``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _disk_error(directory, exc) from None
        self._tokens = _GrowingFile(directory / "tokens.u32", np.uint32)
        self._mask = _GrowingFile(directory / "mask.u8", np.uint8)
        self._ends: list[np.ndarray] = []
        self._count = 0

    def append(self, tokens: np.ndarray, mask: np.ndarray, lengths: np.ndarray) -> None:
        """Append a chunk of examples: flat ``tokens``/``mask`` and the stored length of each example."""
        if len(lengths) == 0:
            return
        base = self._tokens.size
        self._tokens.append(tokens)
        self._mask.append(mask)
        self._ends.append(base + np.cumsum(lengths, dtype=np.int64))
        self._count += len(lengths)

    def __len__(self) -> int:
        return self._count

    @property
    def num_tokens(self) -> int:
        return self._tokens.size

    def offsets(self) -> np.ndarray:
        """``int64[num_examples + 1]``: where each example starts in the flat buffers."""
        return np.concatenate([np.zeros(1, dtype=np.int64), *self._ends])

    def tokens(self) -> np.ndarray:
        return self._tokens.view()

    def mask(self) -> np.ndarray:
        return self._mask.view()

    def remove(self) -> None:
        """Close the maps and delete the directory (called on success, error and Ctrl-C alike)."""
        self._tokens.close()
        self._mask.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def default_scratch_dir(out_dir: Path) -> Path:
    """A hidden directory inside the output directory, unique per process."""
    return out_dir / f".seqpack-scratch-{os.getpid()}"
