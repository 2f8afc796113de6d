"""Writing the packed Arrow stream straight from the input's memory: each token is copied once, by the kernel.

Building a record batch copies its runs into a buffer and writing the batch copies them again, into the
page cache. Here pyarrow's own IPC writer lays the stream out -- message headers, offsets, padding, its
exact bytes -- against *placeholder* value buffers of the right size, which it hands to the sink unread;
the sink records where each piece of the file goes instead of writing it (:func:`record_stream`). Then
:func:`write_stream` writes the pieces, each placeholder's bytes gathered from the input's runs by
``pwritev`` (up to 1,024 runs a call, front to back)::

    stream   [schema] [batch 0 header + offsets] [input_ids: placeholder] [pad] [completion_mask: ...]
    written  header bytes as recorded;  input_ids <- pwritev(fd, [run 0, run 1, ...], offset)

The file is byte for byte the one writing the built batches gives (the tests compare them). Should a
pyarrow release stop handing a placeholder over as one buffer, :func:`record_stream` notices before anything
is written and returns None: the caller then builds the batches.
"""

from __future__ import annotations

import ctypes
import os
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from bridgepack.trl._columns import PackedBatches

IovecArray = npt.NDArray[np.uint64]
#: Runs per ``pwritev`` call: Linux's ``IOV_MAX``.
IOVECS_PER_CALL = 1024


def _libc_pwritev() -> Any:
    """libc's ``pwritev(fd, iov, iovcnt, offset)``, called through ctypes (which releases the GIL), or None
    where the C library has none."""
    try:
        function = ctypes.CDLL(None, use_errno=True).pwritev
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]
    function.restype = ctypes.c_ssize_t
    return function


_PWRITEV = _libc_pwritev()


@dataclass(frozen=True)
class StreamPieces:
    """A stream file as pieces at file offsets: bytes to write as they are, or runs of the input to gather
    (iovecs). ``size`` is the file's length."""

    pieces: list[tuple[int, bytes | IovecArray]]
    size: int


class _RecordingSink:
    """A write-only file for pyarrow's IPC writer that records what each write puts where.

    A write of the next expected placeholder buffer (the same address and size) is recorded as that
    placeholder's runs; anything else as its bytes. ``missed`` says a placeholder never came as one write.
    """

    closed = False

    def __init__(self) -> None:
        self.pieces: list[tuple[int, bytes | IovecArray]] = []
        self.position = 0
        self._expected: deque[tuple[int, int, IovecArray]] = deque()
        self.missed = False

    def expect(self, placeholders: list[tuple[int, int, IovecArray]]) -> None:
        """The ``(address, bytes, runs)`` of the placeholders the next batch writes, in column order."""
        self.missed = self.missed or bool(self._expected)
        self._expected = deque(p for p in placeholders if p[1])  # an empty buffer may not be written

    def write(self, data: pa.Buffer | bytes) -> int:
        size = data.size if isinstance(data, pa.Buffer) else len(data)
        piece: bytes | IovecArray
        expected = self._expected[0] if self._expected else None
        if isinstance(data, pa.Buffer) and expected is not None and expected[:2] == (data.address, size):
            piece = self._expected.popleft()[2]
        else:
            piece = data.to_pybytes() if isinstance(data, pa.Buffer) else bytes(data)
        self.pieces.append((self.position, piece))
        self.position += size
        return size

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.missed = self.missed or bool(self._expected)
        self.closed = True


def record_stream(packed: PackedBatches) -> StreamPieces | None:
    """The stream file of ``packed``'s batches as pieces, nothing read from the input and nothing written;
    None when the writer did not write a placeholder as one buffer (then build the batches instead).
    Needs ``packed.copyable`` and at least one batch."""
    if _PWRITEV is None:
        return None
    tokens = packed.max_batch_tokens()
    placeholders = [np.zeros(tokens, dtype=s.view.dtype) for s in packed.sources if s.view is not None]
    sink = _RecordingSink()
    writer = None
    for batch in range(len(packed)):
        record_batch, iovecs = packed.outline(batch, placeholders)
        if writer is None:
            writer = pa.ipc.new_stream(pa.PythonFile(sink, mode="w"), record_batch.schema)
        values = (record_batch.column(c).values for c in range(len(iovecs)))  # the token columns'
        sink.expect(
            [
                (int(column.buffers()[1].address), int(runs[:, 1].sum()), runs)
                for column, runs in zip(values, iovecs, strict=True)
            ]
        )
        writer.write_batch(record_batch)
    assert writer is not None
    writer.close()
    sink.close()
    if sink.missed:
        return None
    return StreamPieces(_coalesced(sink.pieces), sink.position)


def _coalesced(pieces: list[tuple[int, bytes | IovecArray]]) -> list[tuple[int, bytes | IovecArray]]:
    """Neighbouring byte pieces joined (a header, its offsets and padding become one write)."""
    out: list[tuple[int, bytes | IovecArray]] = []
    run: list[bytes] = []  # byte pieces not yet joined, starting at ``start``
    start = 0
    for offset, piece in pieces:
        if isinstance(piece, bytes):
            start = offset if not run else start
            run.append(piece)
            continue
        if run:
            out.append((start, b"".join(run)))
            run = []
        out.append((offset, piece))
    if run:
        out.append((start, b"".join(run)))
    return out


def write_stream(fd: int, stream: StreamPieces) -> None:
    """Write ``stream`` into the empty file ``fd``, front to back.

    One thread: a file system takes the file's lock for each buffered write, so more threads only add
    contention (measured on 2 cores, 148M tokens, median of 6: 1 thread 1.5 s wall and CPU, 2 threads
    1.8 s wall, 2.5 s CPU). Raises ``OSError`` as ``write`` does (a full disk, a quota)."""
    for offset, piece in stream.pieces:
        if isinstance(piece, bytes):
            _write_piece(fd, offset, piece)
            continue
        ends = np.cumsum(piece[:, 1], dtype=np.uint64)
        for lo in range(0, len(piece), IOVECS_PER_CALL):
            start = offset + (int(ends[lo - 1]) if lo else 0)
            _write_piece(fd, start, np.ascontiguousarray(piece[lo : lo + IOVECS_PER_CALL]))
    if os.fstat(fd).st_size != stream.size:  # every piece lands back to back: a gap would be a bug here
        raise OSError(f"wrote {os.fstat(fd).st_size} bytes of a {stream.size}-byte stream")


def _write_piece(fd: int, offset: int, piece: bytes | IovecArray) -> None:
    if isinstance(piece, bytes):
        view = memoryview(piece)
        while view:
            done = os.pwrite(fd, view, offset)
            view, offset = view[done:], offset + done
        return
    _pwritev_all(fd, piece, offset)


def _pwritev_all(fd: int, iovecs: IovecArray, offset: int) -> None:
    """``pwritev`` until every byte of ``iovecs`` is written (a call may write less)."""
    assert _PWRITEV is not None
    while len(iovecs):
        done = int(_PWRITEV(fd, iovecs.ctypes.data, len(iovecs), offset))
        if done < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        if done == 0:
            raise OSError(f"pwritev wrote nothing at offset {offset}")
        if done == int(iovecs[:, 1].sum()):
            return
        ends = np.cumsum(iovecs[:, 1], dtype=np.uint64)
        k = int(np.searchsorted(ends, done, side="right"))  # runs 0..k-1 written, run k partly
        written_of_k = done - (int(ends[k - 1]) if k else 0)
        iovecs = iovecs[k:].copy()
        iovecs[0, 0] += np.uint64(written_of_k)
        iovecs[0, 1] -= np.uint64(written_of_k)
        offset += done
