"""Chat records -> stored examples: render each conversation with its chat template, mask assistant turns."""

from __future__ import annotations

from typing import Any

import numpy as np

from seqpack.data._examples import location
from seqpack.data._readers import RawChunk
from seqpack.data.text._spec import TextSpec
from seqpack.errors import DataError, InputError


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


def chat(
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
