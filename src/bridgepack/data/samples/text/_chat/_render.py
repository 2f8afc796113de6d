"""Rendering conversations with a chat template and tokenizing the texts, batched (one chunk at a time).

Rendering goes through the tokenizer's own ``apply_chat_template`` (what Bridge calls), one call per group of
rows that share their tools; the texts are then encoded in one batch with character offsets. Bridge also
tokenizes renders of conversation *prefixes* and counts the tokens they share with the full render;
:func:`shared_tokens` gets that count from the texts, encoding only the few characters where it must.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from bridgepack.data.samples.text._arrays import flat_ids
from bridgepack.data.samples.text._chat._jinja import FastTemplate, fast_template
from bridgepack.data.samples.text._tokenizer import encodings

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
        added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
        self.added_ids = np.array(sorted(added), dtype=np.int64)
        self.substring_safe = _substring_safe(self._backend)
        self._splits = AddedTokenSplits.of(self._backend) if self.substring_safe else None
        own = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else None
        source = template if template is not None else own
        self._fast = fast_template(tokenizer, source) if source else None
        self._checked = False
        self._messages: dict[int, tuple[Any, dict[str, Any]]] = {}

    def render(
        self,
        conversations: Sequence[list[dict[str, Any]]],
        tools: Sequence[Any],
        generation_prompt: bool = False,
    ) -> list[str | Exception]:
        """Each conversation's text (with the generation prompt when ``generation_prompt``), or the exception
        its rendering raised."""
        out: list[str | Exception] = [""] * len(conversations)
        for rows in _by_tools(tools):
            row_tools = tools[rows[0]]
            try:
                texts = self._apply([conversations[i] for i in rows], row_tools, generation_prompt)
            except Exception:  # find the rows that fail, render the others
                for i in rows:
                    try:
                        out[i] = self._apply([conversations[i]], row_tools, generation_prompt)[0]
                    except Exception as exc:
                        out[i] = exc
                continue
            for i, text in zip(rows, texts, strict=True):
                out[i] = text
        return out

    def assistant_masks(
        self, conversations: Sequence[list[dict[str, Any]]], tools: Sequence[Any]
    ) -> list[tuple[list[int], list[int]]]:
        """Each conversation's ids and Hugging Face's ``{% generation %}`` mask
        (``apply_chat_template(..., return_assistant_tokens_mask=True)``, one call per group of rows that
        share their tools)."""
        out: list[tuple[list[int], list[int]]] = [([], [])] * len(conversations)
        for rows in _by_tools(tools):
            kwargs: dict[str, Any] = {"tokenize": True, "return_dict": True}
            kwargs["return_assistant_tokens_mask"] = True
            if tools[rows[0]] is not None:
                kwargs["tools"] = tools[rows[0]]
            if self.template is not None:
                kwargs["chat_template"] = self.template
            batch = self.tokenizer.apply_chat_template(
                [conversations[i] for i in rows], add_generation_prompt=False, **kwargs
            )
            for k, i in enumerate(rows):
                out[i] = (list(batch["input_ids"][k]), list(batch["assistant_masks"][k]))
        return out

    def _apply(
        self, conversations: list[list[dict[str, Any]]], tools: Any, generation_prompt: bool = False
    ) -> list[str]:
        fast = self._fast
        if fast is None or not (
            tools is None or (isinstance(tools, list) and all(isinstance(t, dict) for t in tools))
        ):
            return self._apply_hf(conversations, tools, generation_prompt)
        if not self._checked:  # the first conversation rendered both ways must agree, else no shortcut
            self._checked = True
            try:
                chat = [self._prepared(fast, m) for m in conversations[0]]
                same = fast.render(chat, tools) == self._apply_hf(conversations[:1], tools)[0]
            except Exception:
                same = False
            if not same:
                self._fast = None
                return self._apply_hf(conversations, tools, generation_prompt)
        texts = []
        for conversation in conversations:
            try:
                chat = [self._prepared(fast, m) for m in conversation]
                texts.append(fast.render(chat, tools, generation_prompt))
            except Exception:  # the tokenizer's own call raises its own exception
                texts.append(self._apply_hf([conversation], tools, generation_prompt)[0])
        return texts

    def _prepared(self, fast: FastTemplate, message: Any) -> dict[str, Any]:
        """``fast.prepare(message)``, once per message object: prefix renders reuse the full render's (the
        cache holds the message too, so its id is not reused while the renderer lives)."""
        key = id(message)
        hit = self._messages.get(key)
        if hit is None:
            hit = self._messages[key] = (message, fast.prepare(message))
        return hit[1]

    def _apply_hf(
        self, conversations: list[list[dict[str, Any]]], tools: Any, generation_prompt: bool = False
    ) -> list[str]:
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": generation_prompt}
        if tools is not None:
            kwargs["tools"] = tools
        if self.template is not None:
            kwargs["chat_template"] = self.template
        texts = self.tokenizer.apply_chat_template(conversations, **kwargs)
        return list(texts)

    def encode(self, texts: list[str]) -> Encoded:
        """One batched encode (no special tokens added: the template wrote them)."""
        encoded = encodings(self.tokenizer, texts)
        ids, lengths = flat_ids([e.ids for e in encoded])  # each ``.ids`` builds a new list: read once
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return Encoded(texts, ids, offsets, np.isin(ids, self.added_ids), encoded)

    def encode_many(self, texts: list[str]) -> list[list[int]]:
        """Each text's ids (no special tokens added), in one batched call."""
        return [e.ids for e in encodings(self.tokenizer, texts)] if texts else []

    def shared_tokens(self, prefixes: Sequence[str], enc: Encoded, rows: Sequence[int]) -> list[int]:
        """For each ``(prefix, row)``: how many leading tokens ``encode(prefix)`` shares with the row's ids
        (Bridge's common prefix). The texts that must be encoded go to the tokenizer in one batch.

        When ``prefix`` is a prefix of the row's text and the row has an added (special) token starting right
        where it ends, the tokenizer split both texts there, so the count is that token's index. Otherwise
        everything up to the last added token both texts hold is shared, and only the rest of ``prefix`` is
        encoded and compared -- and of that rest only the text before the point where ``prefix`` leaves the
        row's text, when an added token starts there (Qwen3's ``<think>`` in a render through an earlier
        turn): the tokenizer splits ``prefix`` at that token, so its tokens are the text's, then the token's.
        """
        counts: list[int] = []
        plans: list[tuple[int, _Rest]] = []
        for k, (prefix, r) in enumerate(zip(prefixes, rows, strict=True)):
            plan = self._shared_plan(prefix, enc, r)
            if isinstance(plan, _Rest):
                plans.append((k, plan))
                plan = plan.known
            counts.append(plan)
        heads = self.encode_many([rest.text[: rest.head] for _, rest in plans])
        whole: list[tuple[int, _Rest]] = []
        for (k, rest), ids in zip(plans, heads, strict=True):
            row = enc.ids[enc.row(rows[k])][rest.known :]
            shared = _common(np.asarray(ids, dtype=np.int64), row)
            counts[k] = rest.known + shared
            if (
                rest.head < len(rest.text)
                and shared == len(ids)
                and shared < len(row)
                and row[shared] == rest.then
            ):
                whole.append((k, rest))  # the row goes on with that very token: compare the whole rest
        for (k, rest), ids in zip(whole, self.encode_many([rest.text for _, rest in whole]), strict=True):
            row = enc.ids[enc.row(rows[k])][rest.known :]
            counts[k] = rest.known + _common(np.asarray(ids, dtype=np.int64), row)
        return counts

    def _shared_plan(self, prefix: str, enc: Encoded, r: int) -> int | _Rest:
        """The shared count when the texts tell it, else what of ``prefix`` is left to encode and compare
        (see :meth:`shared_tokens`)."""
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
                e = encoding.token_to_chars(j)[1]
                then = None if self._splits is None else self._splits.split_at(prefix, e, c)
                head = len(prefix) - e if then is None else c - e
                return _Rest(j + 1, prefix[e:], head, -1 if then is None else then)
        return _Rest(0, prefix, len(prefix), -1)


@dataclass(frozen=True)
class _Rest:
    """What is left to compare of a prefix: ``text`` (after its first ``known`` tokens, which the row shares),
    whose tokens start with those of ``text[:head]``, followed by added token ``then`` when ``head`` is short
    of the whole text."""

    known: int
    text: str
    head: int
    then: int


@dataclass(frozen=True)
class AddedTokenSplits:
    """Where the tokenizer splits a text at its added tokens, for tokenizers that match them plainly: every
    added token matched on the raw text (``normalized=False``) with no ``lstrip``/``rstrip``/``single_word``
    and special tokens not encoded as text -- then the splits are the leftmost-longest occurrences of their
    contents (Qwen3, Llama 3; otherwise :meth:`of` gives ``None`` and nothing is assumed)."""

    by_first: dict[str, tuple[tuple[str, int], ...]]  # first character -> (content, id), longest first
    longest: int

    @classmethod
    def of(cls, backend: Any) -> AddedTokenSplits | None:
        try:
            decoder = backend.get_added_tokens_decoder()
        except AttributeError:
            return None
        if not decoder or getattr(backend, "encode_special_tokens", False):
            return None
        tokens = list(decoder.items())
        if any(t.normalized or t.lstrip or t.rstrip or t.single_word or not t.content for _, t in tokens):
            return None
        by_first: dict[str, list[tuple[str, int]]] = {}
        for token_id, token in sorted(tokens, key=lambda item: -len(item[1].content)):
            by_first.setdefault(token.content[0], []).append((token.content, int(token_id)))
        longest = max(len(t.content) for _, t in tokens)
        return cls({first: tuple(group) for first, group in by_first.items()}, longest)

    def split_at(self, text: str, after: int, at: int) -> int | None:
        """The id of the added token that ``text`` is split at, at character ``at``, when the text between
        ``after`` (the end of an added token the tokenizer matched) and ``at`` is one piece of it; else None.

        That holds when an added token's content starts at ``at`` (the longest one is matched) and no
        occurrence starting before ``at`` reaches past ``after`` (it would be matched first)."""
        if at >= len(text):
            return None
        for s in range(max(after - self.longest + 1, 0), at):
            for content, _ in self.by_first.get(text[s], ()):
                if text.startswith(content, s):
                    if s + len(content) > after:
                        return None
                    break
        for content, token_id in self.by_first.get(text[at], ()):
            if text.startswith(content, at):
                return token_id
        return None


def _by_tools(tools: Sequence[Any]) -> list[list[int]]:
    """Row indices grouped by equal ``tools`` (a template call takes one ``tools`` for all its rows)."""
    groups: dict[bytes, list[int]] = {}
    for i, row_tools in enumerate(tools):
        groups.setdefault(b"" if row_tools is None else b"t" + _key(row_tools), []).append(i)
    return list(groups.values())


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
