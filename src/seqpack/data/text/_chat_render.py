"""Rendering conversations with a chat template and tokenizing the texts, batched (one chunk at a time).

Rendering goes through the tokenizer's own ``apply_chat_template`` (what Bridge calls), one call per group of
rows that share their tools; the texts are then encoded in one batch with character offsets. Bridge also
tokenizes renders of conversation *prefixes* and counts the tokens they share with the full render;
:func:`shared_tokens` gets that count from the texts, encoding only the few characters where it must.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

#: Exceptions Bridge 0.6.2 turns into "no mask from prefix renders" (others stop its run).
PREFIX_RENDER_ERRORS = (AssertionError, AttributeError, KeyError, TypeError, ValueError)


@dataclass
class Encoded:
    """A batch of rendered rows: flat ids, row offsets, and each token's character span in its text."""

    texts: list[str]
    ids: np.ndarray
    offsets: np.ndarray  # n + 1
    char_starts: np.ndarray
    char_ends: np.ndarray

    def row(self, r: int) -> slice:
        return slice(int(self.offsets[r]), int(self.offsets[r + 1]))


class Renderer:
    """A tokenizer and the chat template it renders with (an override, or the tokenizer's own)."""

    def __init__(self, tokenizer: Any, template: str | None) -> None:
        self.tokenizer = tokenizer
        self.template = template
        self._backend = tokenizer.backend_tokenizer
        # Encoding through the backend skips the Python wrapper (a third of the time); it must then hold no
        # truncation or padding of its own (the wrapper would switch them off for the call).
        self._direct = self._backend.truncation is None and self._backend.padding is None
        added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
        self.added_ids = np.array(sorted(added), dtype=np.int64)
        self.substring_safe = _substring_safe(self._backend)

    def render(
        self, conversations: Sequence[list[dict[str, Any]]], tools: Sequence[Any]
    ) -> list[str | Exception]:
        """Each conversation's text (no generation prompt), or the exception its rendering raised."""
        out: list[str | Exception] = [""] * len(conversations)
        groups: dict[bytes, list[int]] = {}
        for i, row_tools in enumerate(tools):
            groups.setdefault(b"" if row_tools is None else b"t" + _key(row_tools), []).append(i)
        for rows in groups.values():
            row_tools = tools[rows[0]]
            try:
                texts = self._apply([conversations[i] for i in rows], row_tools)
            except Exception:  # find the rows that fail, render the others
                for i in rows:
                    try:
                        out[i] = self._apply([conversations[i]], row_tools)[0]
                    except Exception as exc:
                        out[i] = exc
                continue
            for i, text in zip(rows, texts, strict=True):
                out[i] = text
        return out

    def _apply(self, conversations: list[list[dict[str, Any]]], tools: Any) -> list[str]:
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": False}
        if tools is not None:
            kwargs["tools"] = tools
        if self.template is not None:
            kwargs["chat_template"] = self.template
        texts = self.tokenizer.apply_chat_template(conversations, **kwargs)
        return list(texts)

    def encode(self, texts: list[str]) -> Encoded:
        """One batched encode (no special tokens added: the template wrote them) with offsets."""
        if self._direct:
            encodings = self._backend.encode_batch(texts, add_special_tokens=False)
        else:
            encodings = self.tokenizer(texts, add_special_tokens=False).encodings
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        total = int(lengths.sum())
        ids = np.fromiter(
            itertools.chain.from_iterable(e.ids for e in encodings), dtype=np.int64, count=total
        )
        spans = np.fromiter(
            itertools.chain.from_iterable(itertools.chain.from_iterable(e.offsets for e in encodings)),
            dtype=np.int64,
            count=2 * total,
        )
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return Encoded(texts, ids, offsets, spans[0::2], spans[1::2])

    def encode_one(self, text: str) -> np.ndarray:
        if self._direct:
            return np.asarray(self._backend.encode(text, add_special_tokens=False).ids, dtype=np.int64)
        return np.asarray(self.tokenizer(text, add_special_tokens=False)["input_ids"], dtype=np.int64)

    def shared_tokens(self, prefix: str, enc: Encoded, r: int) -> int:
        """How many leading tokens ``encode(prefix)`` shares with row ``r``'s ids (Bridge's common prefix).

        When ``prefix`` is a prefix of the row's text and the row has an added (special) token starting right
        where it ends, the tokenizer split both texts there, so the count is that token's index. Otherwise
        everything up to the last added token both texts hold is shared, and only the rest of ``prefix`` is
        encoded and compared.
        """
        text = enc.texts[r]
        span = enc.row(r)
        ids = enc.ids[span]
        starts = enc.char_starts[span]
        ends = enc.char_ends[span]
        if text.startswith(prefix):
            c = len(prefix)
            if c == len(text):
                return len(ids)
            j = int(np.searchsorted(starts, c))
            if j < len(ids) and starts[j] == c and self._is_added(ids[j]) and (j == 0 or ends[j - 1] <= c):
                return j
        else:
            c = _common_chars(prefix, text)
        if self.substring_safe:
            inside = np.flatnonzero((ends <= c) & np.isin(ids, self.added_ids))
            if inside.size:
                j = int(inside[-1])
                return j + 1 + _common(self.encode_one(prefix[int(ends[j]) :]), ids[j + 1 :])
        return _common(self.encode_one(prefix), ids)

    def _is_added(self, token: int) -> bool:
        k = int(np.searchsorted(self.added_ids, token))
        return k < len(self.added_ids) and int(self.added_ids[k]) == int(token)


def _key(tools: Any) -> bytes:
    try:
        return orjson.dumps(tools)
    except TypeError:
        return repr(tools).encode()


def _common(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if differ.size else n


def _common_chars(a: str, b: str) -> int:
    """Length of the common prefix of two strings (binary search over C-level comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _substring_safe(backend: Any) -> bool:
    """True when encoding the text after an added token alone gives the tokens it gets in context.

    Byte-level pre-tokenizers without an added prefix space are; ones that mark the first word of a text
    (SentencePiece's Metaspace, a prefix space) are not.
    """
    try:
        text = json.dumps(json.loads(backend.pre_tokenizer.__getstate__()))
    except Exception:
        return False
    return "Metaspace" not in text and '"add_prefix_space": true' not in text and "ByteLevel" in text
