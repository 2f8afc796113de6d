"""Text records -> stored examples with a local Hugging Face tokenizer (batched, one chunk at a time).

Two shapes of record, and how the loss mask is derived (documented in ``docs/pack.md``):

* **prompt-completion** ``{"prompt": "...", "completion": "..."}``: ``ids = tok(prompt) + tok(completion,
  no special tokens) + [EOS]``; mask 0 on the prompt, 1 on the completion and the EOS. The two texts are
  tokenized separately (batched over the chunk), so the boundary never falls inside a token.
* **chat** ``{"messages": [{"role": ..., "content": ...}, ...]}``: the whole conversation is rendered once
  with the tokenizer's chat template and tokenized with character offsets. For every assistant turn ``i``
  the template is rendered twice more: ``messages[:i]`` with the generation prompt (where the answer
  starts) and ``messages[:i+1]`` (where it ends). Tokens whose characters start inside such a span get
  mask 1, everything else (system, user, role headers) 0. If the rendering does not end with EOS, EOS is
  appended, supervised when the last turn is the assistant's.

Nothing is downloaded: the tokenizer is a local directory loaded with ``local_files_only=True``.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seqpack.data._examples import Examples, location, records_of
from seqpack.data._readers import RawChunk
from seqpack.errors import DataError, InputError

_TOKENIZERS: dict[str, Any] = {}


def load_tokenizer(path: Path) -> Any:
    """A fast tokenizer from a local directory (cached per process); an InputError if it cannot load."""
    key = os.fspath(path)
    if key in _TOKENIZERS:
        return _TOKENIZERS[key]
    if not path.is_dir():
        raise InputError(f"{key}: tokenizer directory does not exist")
    try:
        from transformers import AutoTokenizer
    except ImportError:  # pragma: no cover - optional extra
        raise InputError("text input needs `pip install seqpack[text]` (transformers, tokenizers)") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(key, local_files_only=True)
    except Exception as exc:
        raise InputError(f"{key}: cannot load a tokenizer ({type(exc).__name__}: {str(exc)[:160]})") from None
    if not getattr(tokenizer, "is_fast", False):
        raise InputError(f"{key}: not a fast tokenizer (character offsets are needed for loss masks)")
    _TOKENIZERS[key] = tokenizer
    return tokenizer


def tokenizer_hash(path: Path) -> str:
    """SHA-256 over the tokenizer directory's files (names and bytes), so packs record what made them."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        digest.update(file.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class TextSpec:
    """How to turn text records into stored examples."""

    tokenizer: str
    eos_id: int
    prompt_field: str | None = None
    completion_field: str | None = None
    messages_field: str = "messages"

    @property
    def is_chat(self) -> bool:
        return self.prompt_field is None


def _text(path: str, chunk: RawChunk, index: int, record: dict[str, Any], field: str) -> str:
    value = record.get(field)
    if value is None:
        raise DataError(f"{location(path, chunk, index, field)}: missing (expected a string)")
    if not isinstance(value, str):
        raise DataError(
            f"{location(path, chunk, index, field)}: expected a string, found {type(value).__name__}"
        )
    return value


def tokenize_chunk(path: str, chunk: RawChunk, spec: TextSpec) -> Examples:
    """Stored examples of one chunk of text records (batched tokenizer calls)."""
    tokenizer = load_tokenizer(Path(spec.tokenizer))
    records = records_of(path, chunk)
    if spec.is_chat:
        tokens, mask, lengths = _chat(path, chunk, records, spec, tokenizer)
    else:
        tokens, mask, lengths = _prompt_completion(path, chunk, records, spec, tokenizer)
    return Examples(chunk.source, chunk.locs, tokens, mask, lengths, line_based=chunk.is_lines)


def _flat(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The tokenizer's id lists as one flat int64 array and their lengths (no per-token Python objects)."""
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
    return flat, lengths


def _segment_positions(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[starts[i], starts[i] + lengths[i])`` for every ``i``, concatenated."""
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


def _prompt_completion(
    path: str, chunk: RawChunk, records: list[dict[str, Any]], spec: TextSpec, tokenizer: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Example ``i`` = prompt ``i`` + completion ``i`` + EOS; mask 0 on the prompt, 1 on the rest.

    E.g. prompt ``[7 8]`` and completion ``[9]`` give tokens ``[7 8 9 EOS]`` and mask ``[0 0 1 1]``.
    """
    assert spec.prompt_field is not None and spec.completion_field is not None
    prompts = [_text(path, chunk, i, r, spec.prompt_field) for i, r in enumerate(records)]
    completions = [_text(path, chunk, i, r, spec.completion_field) for i, r in enumerate(records)]
    prompt_ids, prompt_len = _flat(tokenizer(prompts)["input_ids"])
    completion_ids, completion_len = _flat(tokenizer(completions, add_special_tokens=False)["input_ids"])
    lengths = prompt_len + completion_len + 1
    ends = np.cumsum(lengths)
    starts = ends - lengths
    tokens = np.empty(int(lengths.sum()), dtype=np.int64)
    mask = np.ones(len(tokens), dtype=np.uint8)
    in_prompt = _segment_positions(starts, prompt_len)
    tokens[in_prompt] = prompt_ids
    mask[in_prompt] = 0
    tokens[_segment_positions(starts + prompt_len, completion_len)] = completion_ids
    tokens[ends - 1] = spec.eos_id
    return tokens, mask, lengths


def _messages(
    path: str, chunk: RawChunk, index: int, record: dict[str, Any], field: str
) -> list[dict[str, Any]]:
    messages = record.get(field)
    if not isinstance(messages, list) or not messages:
        raise DataError(f"{location(path, chunk, index, field)}: expected a non-empty list of messages")
    for turn in messages:
        if not isinstance(turn, dict) or not isinstance(turn.get("role"), str) or "content" not in turn:
            raise DataError(
                f"{location(path, chunk, index, field)}: every message needs a 'role' string and 'content'"
            )
    return messages


def _chat(
    path: str, chunk: RawChunk, records: list[dict[str, Any]], spec: TextSpec, tokenizer: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not getattr(tokenizer, "chat_template", None):
        raise InputError(
            f"{spec.tokenizer}: the tokenizer has no chat template (needed for 'messages' input)"
        )
    conversations = [_messages(path, chunk, i, r, spec.messages_field) for i, r in enumerate(records)]
    texts = tokenizer.apply_chat_template(conversations, tokenize=False)
    encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    ids_parts, mask_parts = [], []
    for conversation, text, ids, offsets in zip(
        conversations, texts, encoded["input_ids"], encoded["offset_mapping"], strict=True
    ):
        spans = _assistant_spans(tokenizer, conversation, text)
        starts = np.fromiter((start for start, _ in offsets), dtype=np.int64, count=len(offsets))
        token_ids = np.asarray(ids, dtype=np.int64)
        mask = np.zeros(len(token_ids), dtype=np.uint8)
        for lo, hi in spans:
            mask[(starts >= lo) & (starts < hi)] = 1
        if not len(token_ids) or token_ids[-1] != spec.eos_id:
            token_ids = np.append(token_ids, spec.eos_id)
            mask = np.append(mask, np.uint8(conversation[-1]["role"] == "assistant"))
        ids_parts.append(token_ids)
        mask_parts.append(mask)
    lengths = np.fromiter(map(len, ids_parts), dtype=np.int64, count=len(ids_parts))
    return np.concatenate(ids_parts), np.concatenate(mask_parts), lengths


def _assistant_spans(tokenizer: Any, conversation: list[dict[str, Any]], text: str) -> list[tuple[int, int]]:
    """Character spans of the assistant answers in ``text`` (rendered prefix differences)."""
    spans = []
    for i, turn in enumerate(conversation):
        if turn["role"] != "assistant":
            continue
        before = tokenizer.apply_chat_template(conversation[:i], tokenize=False, add_generation_prompt=True)
        through = tokenizer.apply_chat_template(conversation[: i + 1], tokenize=False)
        if not text.startswith(through) or not through.startswith(before):
            name = getattr(tokenizer, "name_or_path", "tokenizer")
            raise DataError(
                f"{name}: the chat template does not render conversations as prefixes of each other; "
                "assistant masks cannot be derived"
            )
        spans.append((len(before), len(through)))
    return spans
