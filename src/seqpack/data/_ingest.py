"""Pass 1's conversion of raw chunks into stored examples, in order, over ``K`` worker processes.

Chunks go to workers through a bounded window (``2 K`` chunks in flight) and come back in submission
order, so the result is identical for every ``K`` and memory stays bounded by the window. A worker
that dies (killed, out of memory) fails the run naming the input and line/row range it held.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from seqpack.data._examples import Examples, pretokenized
from seqpack.data._readers import RawChunk
from seqpack.data._text import TextSpec, tokenize_chunk
from seqpack.errors import DataError


@dataclass(frozen=True)
class Converter:
    """What a worker needs to convert a chunk: input names and, for text, the tokenizer spec."""

    paths: tuple[str, ...]
    text: TextSpec | None = None

    def __call__(self, chunk: RawChunk) -> Examples:
        path = self.paths[chunk.source]
        if self.text is None:
            return pretokenized(path, chunk)
        return tokenize_chunk(path, chunk, self.text)


def default_workers() -> int:
    """All cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _range(paths: tuple[str, ...], chunk: RawChunk) -> str:
    unit = "lines" if chunk.is_lines else "rows"
    return f"{paths[chunk.source]} {unit} {int(chunk.locs[0])}-{int(chunk.locs[-1])}"


def convert_all(chunks: Iterator[RawChunk], converter: Converter, workers: int) -> Iterator[Examples]:
    """Convert every chunk, in order; ``workers <= 1`` converts in this process."""
    if workers <= 1:
        for chunk in chunks:
            yield converter(chunk)
        return
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    pending: deque[tuple[RawChunk, Future[Examples]]] = deque()
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        try:
            for chunk in chunks:
                pending.append((chunk, pool.submit(converter, chunk)))
                if len(pending) >= 2 * workers:
                    yield _result(converter.paths, pending)
            while pending:
                yield _result(converter.paths, pending)
        finally:
            for _, future in pending:
                future.cancel()


def _result(paths: tuple[str, ...], pending: deque[tuple[RawChunk, Future[Examples]]]) -> Examples:
    """The oldest chunk's result; a dead worker fails the run naming the samples that were in flight."""
    try:
        return pending[0][1].result()
    except BrokenProcessPool:
        first, last = _range(paths, pending[0][0]), _range(paths, pending[-1][0])
        held = first if len(pending) == 1 else f"{first} .. {last}"
        raise DataError(f"{held}: a worker process died while converting these samples") from None
    finally:
        if pending and pending[0][1].done():
            pending.popleft()


def as_paths(inputs: list[Path]) -> tuple[str, ...]:
    return tuple(os.fspath(p) for p in inputs)
