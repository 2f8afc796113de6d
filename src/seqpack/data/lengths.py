"""Runtime lengths of a dataset, read through ``seqpack pack``'s streaming ingest (pass 1 only).

What ``seqpack plan`` (and anything else that decides from lengths alone) reads.

Pre-tokenized records give their lengths directly; text records are tokenized with the same chat
template / prompt-completion rules ``seqpack pack`` uses, so the plan sees exactly the lengths the packer
will pack. Only an int64 array of lengths is kept (8 bytes per sample), never the tokens.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import numpy.typing as npt

from seqpack._progress import progress
from seqpack.data._ingest import Converter, as_paths, convert_all, default_workers, text_fields
from seqpack.data._readers import DEFAULT_CHUNK_ROWS, iter_chunks
from seqpack.data.text import TextSpec, load_tokenizer
from seqpack.errors import DataError, UsageError

IntArray = npt.NDArray[np.int64]


def read_lengths(
    inputs: list[Path],
    *,
    tokenizer: Path | None = None,
    eos_id: int | None = None,
    prompt_field: str | None = None,
    completion_field: str | None = None,
    messages_field: str = "messages",
    workers: int | None = None,
    quiet: bool = False,
) -> IntArray:
    """Runtime lengths ``r = len(input_ids) - 1`` of every sample of ``inputs``, in input order."""
    if not inputs:
        raise UsageError("no input files given")
    if (prompt_field is None) != (completion_field is None):
        raise UsageError("--prompt-field and --completion-field go together")
    text: TextSpec | None = None
    if tokenizer is not None:
        if eos_id is None:
            eos_id = load_tokenizer(tokenizer).eos_token_id
            if eos_id is None:
                raise UsageError(f"{tokenizer}: the tokenizer has no EOS token; pass --eos-id")
        is_text, prompt, completion = text_fields(inputs, prompt_field, completion_field, messages_field)
        if is_text:
            text = TextSpec(os.fspath(tokenizer), int(eos_id), prompt, completion, messages_field)
    elif prompt_field is not None:
        raise UsageError("--prompt-field/--completion-field need --tokenizer")
    n_workers = default_workers() if workers is None else workers
    if n_workers < 1:
        raise UsageError(f"--workers must be >= 1, got {n_workers}")
    converter = Converter(as_paths(inputs), text)
    parts: list[IntArray] = []
    with progress(quiet) as bar:
        task = bar.add_task("read lengths", total=None)
        for examples in convert_all(iter_chunks(inputs, DEFAULT_CHUNK_ROWS), converter, n_workers):
            parts.append(examples.lengths - 1)
            bar.advance(task, len(examples.lengths))
    if not parts:
        raise DataError(f"{', '.join(converter.paths)}: empty input (no samples)")
    return np.concatenate(parts).astype(np.int64, copy=False)
