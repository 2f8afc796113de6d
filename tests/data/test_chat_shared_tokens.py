"""Bridge's prefix-render step counts the tokens ``encode(prefix)`` shares with a conversation's ids;
``Renderer.shared_tokens`` gets that count while encoding as little of the prefix as it can. Checked here
against the plain count (encode the whole prefix, compare) with both real tokenizers, on texts built from
their added tokens, fragments of them, words, Chinese, code and whitespace -- where the shortcuts must hold
or stand aside."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken

from _support.tokenizers import llama32_tokenizer_dir, qwen3_tokenizer_dir
from bridgepack.data.samples.text import load_tokenizer
from bridgepack.data.samples.text._chat._render import AddedTokenSplits, Renderer

pytestmark = pytest.mark.network

PIECES = {
    "qwen": [
        "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "<|endoftext|>",
        "<|im_", "<thi", "think>", "assistant\n", "user\n", "\n", "\n\n", " ", "  ", "Hello", " world",
        "你好", "世界", "def f(x):\n    return x", "123", "!", "é", "e\u0301",
    ],
    "llama": [
        "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|start_header",
        "_id|>", "assistant", "user", "\n\n", " ", "Hello", " world", "你好", "for i in range(3):", "42", "?",
    ],
}  # fmt: skip
TOKENIZERS = {"qwen": qwen3_tokenizer_dir, "llama": llama32_tokenizer_dir}


@cache
def renderer(name: str) -> Renderer:
    return Renderer(load_tokenizer(TOKENIZERS[name]()), None)


def plain_count(r: Renderer, prefix: str, ids: np.ndarray) -> int:
    mine = np.asarray(r.encode_many([prefix])[0], dtype=np.int64)
    n = min(len(mine), len(ids))
    differ = np.flatnonzero(mine[:n] != ids[:n])
    return int(differ[0]) if differ.size else n


def texts(name: str) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(PIECES[name]), min_size=1, max_size=14).map("".join)


@pytest.mark.parametrize("name", ["qwen", "llama"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_shared_tokens_is_the_plain_count(name: str, data: Any) -> None:
    r = renderer(name)
    rows = data.draw(st.lists(texts(name), min_size=1, max_size=4), label="rows")
    prefixes = []
    for row in rows:  # a cut of the row (maybe all of it, maybe nothing) and something else after it
        cut = data.draw(st.integers(0, len(row)), label="cut")
        tail = data.draw(st.one_of(st.just(""), texts(name)), label="tail")
        prefixes.append(row[:cut] + tail)
    enc = r.encode(rows)
    got = r.shared_tokens(prefixes, enc, list(range(len(rows))))
    want = [plain_count(r, p, enc.ids[enc.row(i)]) for i, p in enumerate(prefixes)]
    assert got == want


def test_qwen3_think_prefix_encodes_only_the_text_before_the_think_token() -> None:
    """The render through an earlier turn leaves the full render at ``<think>``: the rest to encode is
    the assistant header's text, not the turn's content."""
    r = renderer("qwen")
    full = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nYo there<|im_end|>\n<|im_start|>user\nX"
    prefix = (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nYo there<|im_end|>\n"
    )
    enc = r.encode([full])
    want = plain_count(r, prefix, enc.ids)
    seen: list[list[str]] = []
    encode_many = r.encode_many
    r.encode_many = lambda batch: seen.append(batch) or encode_many(batch)  # type: ignore[method-assign]
    try:
        assert r.shared_tokens([prefix], enc, [0]) == [want]
    finally:
        del r.encode_many
    assert [batch for batch in seen if batch] == [["assistant\n"]]


class _Backend:
    def __init__(self, tokens: dict[int, AddedToken]) -> None:
        self.tokens = tokens
        self.encode_special_tokens = False

    def get_added_tokens_decoder(self) -> dict[int, AddedToken]:
        return self.tokens


@pytest.mark.parametrize(
    "flag", [{"lstrip": True}, {"rstrip": True}, {"single_word": True}, {"normalized": True}]
)
def test_added_tokens_matched_other_than_plainly_are_not_split_by_us(flag: dict[str, bool]) -> None:
    plain = AddedToken("<a>", special=True, normalized=False)
    assert AddedTokenSplits.of(_Backend({1: plain})) is not None
    odd = AddedToken("<b>", special=True, **{"normalized": False, **flag})
    assert AddedTokenSplits.of(_Backend({1: plain, 2: odd})) is None


def test_split_at_needs_the_leftmost_longest_match() -> None:
    contents = {1: "<a>", 2: "<a>>", 3: "x<a"}
    splits = AddedTokenSplits.of(_Backend({i: AddedToken(c, normalized=False) for i, c in contents.items()}))
    assert splits is not None
    assert splits.split_at("<a>hi<a>>", 3, 5) == 2  # the longest content at 5
    assert splits.split_at("<a>hix<a>", 3, 6) is None  # "x<a" starts before 6 and is matched first
    assert splits.split_at("<a>hi", 3, 5) is None  # nothing after the cut
    assert splits.split_at("<a>hi there", 3, 5) is None  # no added token at the cut


def test_a_row_going_on_with_the_split_token_compares_the_whole_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the row's next token is the very added token the prefix was split at, the head's count proves
    nothing: the whole rest is encoded (a split claimed where there is none stands in for that case)."""
    r = renderer("qwen")
    full, prefix = "a<|im_end|>b<|im_end|>", "a<|im_end|>bb<|im_end|>"  # "bb" is one token, "b" another
    enc = r.encode([full])
    end_id = int(enc.ids[-1])
    assert r._splits is not None
    monkeypatch.setattr(AddedTokenSplits, "split_at", lambda self, text, after, at: end_id)
    assert r.shared_tokens([prefix], enc, [0]) == [plain_count(r, prefix, enc.ids)]
