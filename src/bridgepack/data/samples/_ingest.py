"""Pass 1's conversion of raw chunks into stored examples, in order, over ``K`` workers.

Chunks go to workers through a bounded window (``2 K`` chunks in flight) and come back in submission
order (:func:`bridgepack._ordered.map_ordered`), so the result is identical for every ``K`` and memory stays
bounded by the window. A worker process that dies (killed, out of memory) fails the run naming the input
and line/row range it held.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from bridgepack._ordered import WorkerLost, map_ordered
from bridgepack.data.samples._examples import Examples, location, pretokenized, records_of
from bridgepack.data.samples._formats import iter_chunks
from bridgepack.data.samples._readers import DEFAULT_CHUNK_ROWS, RawChunk
from bridgepack.data.samples.text import PROMPT_COMPLETION, TOKEN_IDS, ResolvedText, row_kind, tokenize_chunk
from bridgepack.errors import DataError

T_co = TypeVar("T_co", covariant=True)


class ChunkJob(Protocol[T_co]):
    """Work done on every chunk by a worker: picklable, names its inputs, says where it runs best."""

    @property
    def paths(self) -> tuple[str, ...]:
        """The input files, by source index (for error messages)."""
        ...

    @property
    def needs_processes(self) -> bool:
        """True when the work holds the GIL (tokenizers), so only processes run it in parallel."""
        ...

    def __call__(self, chunk: RawChunk) -> T_co: ...


@dataclass(frozen=True)
class ChunkToExamples:
    """Turns one raw chunk into examples on a worker: pre-tokenized rows checked and parsed, or text rows
    tokenized with the spec (what the worker needs: the input names and, for text, the tokenizer spec)."""

    paths: tuple[str, ...]
    text: ResolvedText | None = None

    @property
    def needs_processes(self) -> bool:
        return self.text is not None

    def __call__(self, chunk: RawChunk) -> Examples:
        path = self.paths[chunk.source]
        if self.text is None:
            return pretokenized(path, chunk)
        return tokenize_chunk(path, chunk, self.text)


def first_record(inputs: list[Path]) -> tuple[dict[str, Any], str] | None:
    """The inputs' first record and where it stands (``a.jsonl:1``): its kind decides whether input is
    pre-tokenized or text, and which text mode (:mod:`bridgepack.data.samples.text._mode`). ``None`` for an
    empty or unreadable input (the conversion reports it in full)."""
    chunks = iter_chunks(inputs, 1)
    try:
        chunk = next(chunks)
        path = os.fspath(inputs[chunk.source])
        return records_of(path, chunk)[0], location(path, chunk, 0)
    except (StopIteration, OSError, ValueError, DataError, IndexError):
        return None
    finally:
        getattr(chunks, "close", lambda: None)()  # a generator: close the file it holds open


def text_fields(
    inputs: list[Path], prompt_field: str | None, completion_field: str | None, messages_field: str
) -> tuple[bool, str | None, str | None, str | None]:
    """(is text, prompt field, completion field, the row that decided the mode) for inputs read with a
    tokenizer: the first record's kind (:func:`row_kind`), unless the fields are given (every row is then
    prompt-completion, decided by no row). Pre-tokenized records (``input_ids``) only take the EOS from
    the tokenizer."""
    if prompt_field is not None:
        return True, prompt_field, completion_field, None
    first = first_record(inputs)
    if first is None:
        return True, None, None, None
    record, at = first
    kind = row_kind(record, messages_field)
    if kind is not None and kind[0] == TOKEN_IDS:
        return False, None, None, None
    if kind is not None and kind[0] == PROMPT_COMPLETION:
        return True, kind[1][0], kind[1][1], at
    return True, None, None, at


#: Records per chunk of text: tokenizing a chat costs ~1 ms of one core, ~100x scanning a row of token ids,
#: so a worker's chunk of 1,024 rows is a second of work and a 5,000-row file splits 3:2 over two workers;
#: 256 rows keep the workers evenly loaded (5,000 chats on 2 cores: 8.6-9.1 s for the whole process
#: instead of 9.8-9.9 s) and cost nothing measurable on one core.
TEXT_CHUNK_ROWS = 256


def chunk_rows_for(text: ResolvedText | None, chosen: int | None) -> int:
    """Records per chunk: ``chosen`` (``--chunk-rows``), else the default for the input's kind."""
    if chosen is not None:
        return chosen
    return DEFAULT_CHUNK_ROWS if text is None else TEXT_CHUNK_ROWS


def default_workers() -> int:
    """All cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _range(paths: tuple[str, ...], chunk: RawChunk) -> str:
    unit = "lines" if chunk.is_lines else "rows"
    return f"{paths[chunk.source]} {unit} {int(chunk.locs[0])}-{int(chunk.locs[-1])}"


def convert_all(chunks: Iterator[RawChunk], job: ChunkJob[T_co], workers: int) -> Iterator[T_co]:
    """Run ``job`` on every chunk, results in order; ``workers <= 1`` runs it in this process.

    Pre-tokenized chunks go to threads: the scanner is a numba kernel that releases the GIL, and a chunk
    handed to a thread costs nothing to ship. Text goes to processes: tokenizers hold the GIL.
    """
    if workers <= 1:
        for chunk in chunks:
            yield job(chunk)
        return
    executor: Executor
    if not job.needs_processes:
        executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bridgepack-scan")
    else:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
        executor = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    with executor:
        try:
            yield from map_ordered(executor, job, chunks, 2 * workers)
        except WorkerLost as lost:
            first, last = (
                _range(job.paths, lost.in_flight[0]),
                _range(job.paths, lost.in_flight[-1]),
            )
            held = first if len(lost.in_flight) == 1 else f"{first} .. {last}"
            raise DataError(f"{held}: a worker process died while converting these samples") from None


def as_paths(inputs: list[Path]) -> tuple[str, ...]:
    return tuple(os.fspath(p) for p in inputs)
