"""Explicit assistant markers (``assistant_start``/``assistant_end``, bridgepack's default mode): the user
names the text that opens an assistant turn and the text that closes it, for a template bridgepack should not
infer the turns of.

Each must be one token of the tokenizer (``<|assistant|>``) or text that encodes to tokens decoding back to
exactly itself (``[/INST]``); the rendered ids are then scanned as Bridge scans its own markers: a turn is the
tokens after a start through the first end after it, end included::

    ids   <|user|> h i <|end|> <|assistant|> y o <|end|>     start <|assistant|>, end <|end|>
    mask     0     0 0    0         0        1 1    1

A row whose starts do not pair with ends, or whose number of spans is not its number of assistant turns, is
refused with that reason. A marker's tokens can differ in context (a newline merging with the next word):
such rows find no turn and are refused, never masked from a guess.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bridgepack.data.samples.text._chat._render import Encoded
from bridgepack.data.samples.text._chat._scan import marker_spans
from bridgepack.errors import UsageError, param


def marker_ids(tokenizer: Any, text: str, name: str) -> np.ndarray:
    """``text`` as the token sequence the scan looks for, or a UsageError naming parameter ``name``."""
    if not text:
        raise UsageError(f"{param(name)} is empty; give the text that marks an assistant turn")
    single = tokenizer.convert_tokens_to_ids(text)
    if isinstance(single, int) and single != tokenizer.unk_token_id and single is not None:
        return np.array([single], dtype=np.int64)
    ids = [int(i) for i in tokenizer.encode(text, add_special_tokens=False)]
    back = tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    if not ids or back != text:
        raise UsageError(
            f"{param(name)} {text!r} is not a token of the tokenizer nor text its tokens give back exactly "
            f"(it encodes to {ids}, which decode to {back!r})"
        )
    return np.array(ids, dtype=np.int64)


def turns_by_markers(
    enc: Encoded, start: np.ndarray, end: np.ndarray, assistant_turns: list[list[int]]
) -> list[tuple[list[tuple[int, int]], str | None]]:
    """Each row's token spans (relative to the row) and the reason it is refused (None: it is not)."""
    spans, counts = marker_spans(enc.ids, enc.offsets, start, end)
    out: list[tuple[list[tuple[int, int]], str | None]] = []
    at = 0
    for r, count in enumerate(counts.tolist()):
        if count < 0:
            out.append(([], "an assistant start marker has no end marker before the next start"))
            continue
        row = [(int(a), int(b)) for a, b in spans[at : at + count]]
        at += count
        turns = len(assistant_turns[r])
        if count != turns:
            out.append(([], f"the assistant markers delimit {count} turn(s), the row has {turns}"))
        else:
            out.append((row, None))
    return out
