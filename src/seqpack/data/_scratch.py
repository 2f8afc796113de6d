"""The memory-mapped scratch store of pass 1: every stored example, flat, on disk.

Pass 1 appends examples here as they are read (and tokenized); the plan needs only their lengths, and
pass 2 gathers each pack's tokens back by offset. So memory holds O(samples) integers, never the tokens::

    tokens  (uint32, on disk)  [5 6 2 | 7 2 | 8 9 9 2]
    mask    (uint8,  on disk)  [0 1 1 | 1 1 | 0 0 1 1]     per input token, before the roll
    offsets (int64,  in RAM)   [0, 3, 5, 9]

Pass 1 appends with plain writes; pass 2 maps the files read-only and drops the pages it has read after
every row group, so neither pass holds the tokens in its resident memory. An out-of-disk error names the
directory (``--scratch-dir``).
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import shutil
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from seqpack.errors import InputError

#: Largest token id the scratch store holds (uint32); vocabularies are far below it.
MAX_TOKEN_ID = 2**32 - 1


class _AppendFile:
    """A 1-D array on disk, appended with plain writes; ``view()`` maps the written part read-only.

    Plain appends (not writes through a map) keep pass 1's resident memory flat: the data sits in the page
    cache, not in this process's RSS. A full disk is an ``OSError`` here, turned into a clear message.
    """

    def __init__(self, path: Path, dtype: npt.DTypeLike) -> None:
        self.path = path
        self.dtype = np.dtype(dtype)
        self.size = 0
        self._handle: BinaryIO | None = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._map: np.memmap | None = None

    def append(self, values: np.ndarray) -> None:
        assert self._handle is not None, "appending after view()"
        data = np.ascontiguousarray(values, dtype=self.dtype)
        try:
            self._handle.write(data.data.cast("B"))
        except OSError as exc:
            raise _disk_error(self.path.parent, exc) from None
        self.size += len(data)

    def view(self) -> np.ndarray:
        """The whole array, memory-mapped read-only (appends end here)."""
        self._close_handle()
        if self.size == 0:
            return np.zeros(0, dtype=self.dtype)
        if self._map is None:
            self._map = np.memmap(self.path, dtype=self.dtype, mode="r", shape=(self.size,))
        return self._map

    def release(self) -> None:
        """Drop the mapped pages from this process (they stay in the page cache; reads fault them back)."""
        raw = getattr(self._map, "_mmap", None)
        if raw is not None and hasattr(raw, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
            raw.madvise(mmap.MADV_DONTNEED)

    def _close_handle(self) -> None:
        if self._handle is not None:
            try:
                self._handle.close()
            except OSError as exc:
                raise _disk_error(self.path.parent, exc) from None
            self._handle = None

    def close(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.close()
            self._handle = None
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
        self._tokens = _AppendFile(directory / "tokens.u32", np.uint32)
        self._mask = _AppendFile(directory / "mask.u8", np.uint8)
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

    def release_pages(self) -> None:
        """Keep pass 2's resident memory bounded: drop the pages read so far (called per row group)."""
        self._tokens.release()
        self._mask.release()

    def remove(self) -> None:
        """Close the maps and delete the directory (called on success, error and Ctrl-C alike)."""
        self._tokens.close()
        self._mask.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def default_scratch_dir(out_dir: Path) -> Path:
    """A hidden directory inside the output directory, unique per process."""
    return out_dir / f".seqpack-scratch-{os.getpid()}"
