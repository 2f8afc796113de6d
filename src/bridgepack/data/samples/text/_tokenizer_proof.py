"""Proof that a tokenizer directory holds the tokenizer its files declare, before a single id is trusted.

``AutoTokenizer.from_pretrained`` builds *something* from nearly any directory: from Qwen3's
``tokenizer_config.json`` alone it builds a 26-token tokenizer (its added tokens renumbered 0-25, an empty
vocabulary), which encodes ``"hello world"`` as nothing, so every word of a pack would be silently gone. The
``tokenizers`` library also renumbers added tokens that do not fit the vocabulary it holds (a truncated
``tokenizer.json``: ``<|im_end|>`` 151645 becomes 502). Both leave a trace that costs nothing to read:

* **no vocabulary** -- the model's vocabulary holds no token besides the added (special) ones and its
  unknown token;
* **ids that moved** -- an added token that ``tokenizer_config.json`` (``added_tokens_decoder``),
  ``tokenizer.json`` (``added_tokens``) or ``added_tokens.json`` gives one id has another id, or none, in
  the tokenizer built from the directory: its vocabulary is far smaller than those ids, or another
  tokenizer's.

Either is an :class:`InputError` naming the directory and what is missing, raised where the tokenizer is
loaded (:func:`bridgepack.data.samples.text._tokenizer.load_tokenizer`), so before anything is read or
written.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from bridgepack.errors import InputError

#: Files that declare added tokens' ids, and how each stores them.
DECLARING_FILES = ("tokenizer_config.json", "tokenizer.json", "added_tokens.json")


def prove_real(path: Path, tokenizer: Any) -> None:
    """Raise an InputError unless ``tokenizer`` (built from ``path``) has a vocabulary and every added-token
    id the directory's files declare (see the module docstring)."""
    key = os.fspath(path)
    backend = tokenizer.backend_tokenizer
    model_size = int(backend.get_vocab_size(with_added_tokens=False))
    special = {token_id for token_id in backend.get_added_tokens_decoder() if token_id < model_size}
    unknown = _unknown_id(backend)
    if unknown is not None and unknown < model_size:
        special.add(unknown)
    plain = model_size - len(special)
    if plain <= 0:
        raise InputError(
            f"{key}: no vocabulary ({_holdings(path)}): transformers would build a {len(tokenizer)}-token "
            "tokenizer that has no token for any word; a tokenizer directory needs tokenizer.json or the "
            "vocabulary files of its class (e.g. vocab.json and merges.txt)"
        )
    size = len(tokenizer)
    for file, token_id, content in _declared(path):
        got = backend.token_to_id(content)
        if got == token_id:
            continue
        built = f"gives it {got}" if got is not None else "has no such token"
        if token_id >= size:
            raise InputError(
                f"{key}: {file} gives {content!r} id {token_id}, beyond the {size} tokens the directory's "
                f"vocabulary holds (the tokenizer built from it {built}): the vocabulary is far smaller than "
                "the tokenizer's ids -- truncated, or another tokenizer's"
            )
        raise InputError(
            f"{key}: {file} gives {content!r} id {token_id}, the tokenizer built from the directory {built}: "
            "its vocabulary is not the one the ids were made for"
        )


def _unknown_id(backend: Any) -> int | None:
    """The id of the model's unknown token (BPE, WordPiece, WordLevel: ``unk_token``; Unigram: ``unk_id``)."""
    model = backend.model
    token = getattr(model, "unk_token", None)
    if isinstance(token, str):
        found = backend.token_to_id(token)
        return None if found is None else int(found)
    unk_id = getattr(model, "unk_id", None)
    return unk_id if isinstance(unk_id, int) else None


def _declared(path: Path) -> Iterator[tuple[str, int, str]]:
    """``(file, id, content)`` of every added token a file of ``path`` declares (unreadable or oddly shaped
    entries are skipped: transformers read the same files and loaded them)."""
    for file in DECLARING_FILES:
        try:
            raw = (path / file).read_bytes()
            data = {"added_tokens": _added_tokens(raw)} if file == "tokenizer.json" else orjson.loads(raw)
        except (OSError, orjson.JSONDecodeError):
            continue
        if not isinstance(data, dict):
            continue
        if file == "tokenizer_config.json":
            decoder = data.get("added_tokens_decoder")
            entries = decoder.items() if isinstance(decoder, dict) else ()
            pairs = ((i, token.get("content")) for i, token in entries if isinstance(token, dict))
        elif file == "tokenizer.json":
            tokens = data.get("added_tokens")
            listed = tokens if isinstance(tokens, list) else ()
            pairs = ((token.get("id"), token.get("content")) for token in listed if isinstance(token, dict))
        else:
            pairs = ((token_id, content) for content, token_id in data.items())
        for token_id, content in pairs:
            number = _as_id(token_id)
            if number is not None and isinstance(content, str) and content:
                yield file, number, content


def _added_tokens(data: bytes) -> Any:
    """``tokenizer.json``'s ``added_tokens`` array, parsed alone: the whole file (Qwen3's is 11 MB, most
    of it the model's vocabulary and merges) takes orjson ~0.3-1 s, the array a millisecond. The
    ``tokenizers`` library writes it as the fourth key, after ``version``, ``truncation`` and ``padding``,
    so it is looked for near the start; the array ends at the first ``]`` after which it parses."""
    key = data.find(b'"added_tokens"', 0, 1 << 20)
    start = data.find(b"[", key)
    if key < 0 or start < 0 or data[key + len(b'"added_tokens"') : start].strip() != b":":
        return None
    end = start
    while (end := data.find(b"]", end + 1)) >= 0:
        try:
            return orjson.loads(data[start : end + 1])
        except orjson.JSONDecodeError:
            continue
    return None


def _as_id(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _holdings(path: Path) -> str:
    """What the directory holds, for the message: ``holds only tokenizer_config.json``."""
    names = sorted(p.name for p in path.iterdir() if p.is_file())
    if not names:
        return "the directory is empty"
    listed = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return f"it holds only {listed}"
