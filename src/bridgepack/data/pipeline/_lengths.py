"""Runtime lengths of a dataset, read through ``bridgepack pack``'s streaming ingest (pass 1 only).

What ``bridgepack plan`` (and anything else that decides from lengths alone) reads.

Pre-tokenized records give their lengths directly; text records are tokenized with the same chat
template / prompt-completion rules ``bridgepack pack`` uses, so the plan sees exactly the lengths the packer
will pack. Only an int64 array of lengths is kept (8 bytes per sample), never the tokens.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from bridgepack._progress import progress
from bridgepack.data.pipeline._input import checked_text, resolve_input
from bridgepack.data.pipeline._options import InputOptions, resolve_workers
from bridgepack.data.samples import ChunkToExamples, as_paths, chunk_rows_for, convert_all, iter_chunks
from bridgepack.data.samples.text import TextOptions
from bridgepack.errors import DataError

IntArray = npt.NDArray[np.int64]


def read_lengths(
    inputs: list[Path],
    *,
    tokenizer: Path | None = None,
    eos_id: int | None = None,
    prompt_field: str | None = None,
    completion_field: str | None = None,
    messages_field: str = "messages",
    chat_template: Path | None = None,
    tool_schemas: Path | None = None,
    workers: int | None = None,
    quiet: bool = False,
) -> IntArray:
    """Runtime lengths ``r = len(input_ids) - 1`` of every sample of ``inputs``, in input order, as
    ``bridgepack pack`` (default mode) shapes them with the same text options."""
    fields = TextOptions(
        prompt_field=prompt_field, completion_field=completion_field, messages_field=messages_field
    )
    options = InputOptions(tuple(inputs), tokenizer, eos_id, fields, chat_template, tool_schemas)
    options.check()
    text = resolve_input(options).text
    if text is not None:
        text = checked_text(text, options)
    n_workers = resolve_workers(workers)
    converter = ChunkToExamples(as_paths(inputs), text)
    parts: list[IntArray] = []
    with progress(quiet) as bar:
        task = bar.add_task("read lengths", total=None)
        for examples in convert_all(iter_chunks(inputs, chunk_rows_for(text, None)), converter, n_workers):
            parts.append(examples.lengths - 1)
            bar.advance(task, len(examples.lengths))
    if not parts:
        raise DataError(f"{', '.join(converter.paths)}: empty input (no samples)")
    return np.concatenate(parts).astype(np.int64, copy=False)
