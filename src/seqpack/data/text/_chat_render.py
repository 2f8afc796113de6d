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

from seqpack.data.text._chat_jinja import fast_template

#: Exceptions Bridge 0.6.2 turns into "no mask from prefix renders" (others stop its run).
PREFIX_RENDER_ERRORS = (AssertionError, AttributeError, KeyError, TypeError, ValueError)


@dataclass
class Encoded:
    """A batch of rendered rows: flat ids, row offsets, which ids are added (special) tokens, and the
    tokenizer's encodings (asked for a character's token only where a common prefix needs it)."""

    texts: list[str]
    ids: np.ndarray
    offsets: np.ndarray  # n + 1
    added: np.ndarray  # bool per id
    encodings: list[Any]

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
        own = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else None
        source = template if template is not None else own
        self._fast = fast_template(tokenizer, source) if source else None
        self._checked = False

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
        fast = self._fast
        if fast is None or not (
            tools is None or (isinstance(tools, list) and all(isinstance(t, dict) for t in tools))
        ):
            return self._apply_hf(conversations, tools)
        if not self._checked:  # the first conversation rendered both ways must agree, else no shortcut
            self._checked = True
            try:
                same = fast.render(conversations[0], tools) == self._apply_hf(conversations[:1], tools)[0]
            except Exception:
                same = False
            if not same:
                self._fast = None
                return self._apply_hf(conversations, tools)
        texts = []
        for conversation in conversations:
            try:
                texts.append(fast.render(conversation, tools))
            except Exception:  # the tokenizer's own call raises its own exception
                texts.append(self._apply_hf([conversation], tools)[0])
        return texts

    def _apply_hf(self, conversations: list[list[dict[str, Any]]], tools: Any) -> list[str]:
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": False}
        if tools is not None:
            kwargs["tools"] = tools
        if self.template is not None:
            kwargs["chat_template"] = self.template
        texts = self.tokenizer.apply_chat_template(conversations, **kwargs)
        return list(texts)

    def encode(self, texts: list[str]) -> Encoded:
        """One batched encode (no special tokens added: the template wrote them)."""
        if self._direct:
            encodings = self._backend.encode_batch(texts, add_special_tokens=False)
        else:
            encodings = self.tokenizer(texts, add_special_tokens=False).encodings
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        ids = np.fromiter(
            itertools.chain.from_iterable(e.ids for e in encodings), dtype=np.int64, count=int(lengths.sum())
        )
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return Encoded(texts, ids, offsets, np.isin(ids, self.added_ids), list(encodings))

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
        encoding = enc.encodings[r]
        added = np.flatnonzero(enc.added[span])
        if text.startswith(prefix):
            c = len(prefix)
            if c == len(text):
                return span.stop - span.start
            j = encoding.char_to_token(c)
            if j is not None and enc.added[span.start + j] and encoding.token_to_chars(j)[0] == c:
                return int(j)
        else:
            c = _common_chars(prefix, text)
        if self.substring_safe and added.size:
            k = int(np.searchsorted(added, _token_before(encoding, c), side="right")) - 1
            while k >= 0 and encoding.token_to_chars(int(added[k]))[1] > c:
                k -= 1
            if k >= 0:
                j = int(added[k])
                end = encoding.token_to_chars(j)[1]
                return j + 1 + _common(self.encode_one(prefix[end:]), enc.ids[span][j + 1 :])
        return _common(self.encode_one(prefix), enc.ids[span])


def _token_before(encoding: Any, c: int) -> int:
    """Index of the token covering the last character before ``c`` that some token covers (-1: none)."""
    for at in range(c - 1, -1, -1):
        j = encoding.char_to_token(at)
        if j is not None:
            return int(j)
    return -1


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
