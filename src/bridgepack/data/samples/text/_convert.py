"""Text records -> stored examples of one chunk, the chat templates checked up front, the metadata record
of a text pack, and the EOS check against a named tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bridgepack.data.samples._examples import Examples, records_of
from bridgepack.data.samples._readers import RawChunk
from bridgepack.data.samples.text._chat._options import chat_record
from bridgepack.data.samples.text._chat._path import mask_paths
from bridgepack.data.samples.text._chat._tokenize import chat
from bridgepack.data.samples.text._prompt_completion import prompt_completion
from bridgepack.data.samples.text._settings import ResolvedText
from bridgepack.data.samples.text._tokenizer import (
    library_versions,
    load_tokenizer,
    tokenizer_eos_id,
)


def eos_disagreement(record: dict[str, Any], tokenizer: Path) -> str | None:
    """A one-line finding when a pack's recorded EOS is not ``tokenizer``'s (None when they agree).

    Readers (``inspect``, ``train``, ...) take the EOS from the metadata record; a user who also names a
    tokenizer should hear when the pack was padded with another id, e.g. one inferred from the rows.
    """
    recorded = record.get("eos_id")
    eos = tokenizer_eos_id(tokenizer)
    if recorded is None or eos is None or int(recorded) == int(eos):
        return None
    source = record.get("eos_source") or "unknown source"
    return (
        f"the pack's EOS id is {recorded} ({source}), the tokenizer {tokenizer}'s is {eos}; "
        f"the pack's is used (re-pack with --tokenizer {tokenizer} or --eos-id {eos} to pad with the "
        "tokenizer's)"
    )


def check_templates(spec: ResolvedText) -> None:
    """Refuse, before anything is read, the chat templates a pack could not render with: a Jinja syntax
    error (one line naming the file and line), none at all, named templates Bridge cannot mask in compat
    mode, a template Bridge cannot mask or explicit assistant markers in compat mode, markers that are not
    the tokenizer's tokens. Workers check again (cached), so a run with any ``--workers`` says the same."""
    if spec.is_chat:
        mask_paths(spec, load_tokenizer(Path(spec.tokenizer)))


def text_record(spec: ResolvedText) -> dict[str, Any]:
    """The metadata record's ``text`` entry: what turned text into ids, so a pack can be reproduced (the
    same ids need the same tokenizer files, hashed beside it, and the same library versions)."""
    record: dict[str, Any] = {"format": "chat" if spec.is_chat else "prompt_completion"}
    if spec.is_chat:
        record.update(chat_record(spec))
        record["assistant_mask"] = mask_paths(spec, load_tokenizer(Path(spec.tokenizer)))
    else:
        record.update(
            prompt_field=spec.prompt_field,
            completion_field=spec.completion_field,
            loss_mode=spec.loss_mode or "completion",
            separator=spec.separator,
            prompt_template=spec.prompt_template,
            strip_whitespace=spec.strip_whitespace,
            add_bos=spec.add_bos,
            add_sep=spec.add_sep,
            add_eos=spec.add_eos,
            truncation_method=spec.truncation_method,
            truncate_to=spec.max_length,
        )
    record["versions"] = library_versions()
    return record


def tokenize_chunk(path: str, chunk: RawChunk, spec: ResolvedText) -> Examples:
    """Stored examples of one chunk of text records (batched tokenizer calls)."""
    tokenizer = load_tokenizer(Path(spec.tokenizer))
    records = records_of(path, chunk)
    before = None
    refused: dict[int, str] = {}
    if spec.is_chat:
        found = chat(path, chunk, records, spec, tokenizer)
        tokens, mask, lengths, refused = found.ids, found.mask, found.lengths, found.refused
    else:
        tokens, mask, lengths, before = prompt_completion(path, chunk, records, spec, tokenizer)
    examples = Examples(
        chunk.source, chunk.locs, tokens, mask, lengths, line_based=chunk.is_lines, lengths_before=before
    )
    rows = sorted(refused)
    return examples.without_rows(np.array(rows, dtype=np.int64), [refused[i] for i in rows])
