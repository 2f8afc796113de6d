"""Assistant turns found by rendering, for chat templates without ``{% generation %}`` blocks or turn markers
Bridge knows (bridgepack's default mode only; Bridge 0.6.2 refuses these templates).

For each assistant turn ``i`` of a conversation the template renders the turns before it with the
generation prompt (``P``: what a model is given before it answers) and the turns through it without
(``Q``); the characters ``Q`` adds to ``P`` are what the turn contributes -- its content, reasoning and
tool-call text as the template writes them, and its end marker. Phi-3's format::

    P  <|user|>\\nhi<|end|>\\n<|assistant|>\\n
    Q  <|user|>\\nhi<|end|>\\n<|assistant|>\\nyo<|end|>\\n
                                              ^^^^^^^^^^^ the turn: chars [len(P), len(Q))

The spans are read in the whole conversation's render ``F`` (one tokenization): the template must be
*prefix-consistent* for the row -- ``P`` a prefix of ``Q`` and ``Q`` a prefix of ``F`` -- or a later turn
changed how this one renders (reasoning dropped from earlier turns, a system prompt that depends on later
turns), and the row is refused with that reason rather than masked from texts that are not its own.

Characters become tokens as ``apply_chat_template(return_assistant_tokens_mask=True)`` turns a
``{% generation %}`` block into a mask: every token whose characters overlap the span, so a token
straddling a boundary is trained (Llama 3.2's ``>\\n`` when a turn's text starts with the newline after a
plain-text ``<|assistant|>``). The same template with ``{% generation %}`` around exactly
``Q - P`` gives the same ids and mask (tests/data/test_text_by_render_families.py proves it against
Bridge 0.6.2).

All prefix renders of a chunk go to the template in two batched calls (with and without the prompt); the
last assistant turn of a conversation that ends with it needs no ``Q`` (it is ``F``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bridgepack.data.samples.text._chat._render import Encoded, Renderer

#: Why a template's renders cannot be compared: refused before any row is read when two renders of a probe
#: conversation differ (:mod:`._path`), else for a row whose renders differ (the date changed mid-run).
DIFFERING_RENDERS = (
    "the chat template renders the same conversation differently on two calls (it writes the time or "
    "another value that changes, e.g. strftime_now), so its assistant turns cannot be found by rendering"
)


@dataclass(frozen=True)
class RowTurns:
    """One row's assistant turns as token spans ``[start, stop)`` in the row (in turn order), or the reason
    the row is refused."""

    spans: list[tuple[int, int]]
    refused: str | None = None


def turns_by_render(
    conversations: list[list[dict[str, Any]]],
    tools: list[Any],
    assistant_turns: list[list[int]],
    enc: Encoded,
    renderer: Renderer,
) -> list[RowTurns]:
    """Every row's assistant token spans (see the module docstring); rows are independent."""
    asks: list[tuple[int, int]] = [(r, i) for r, turns in enumerate(assistant_turns) for i in turns]
    before = renderer.render(
        [conversations[r][:i] for r, i in asks], [tools[r] for r, _ in asks], generation_prompt=True
    )
    inner = [(r, i) for r, i in asks if i + 1 < len(conversations[r])]
    through_texts = renderer.render(
        [conversations[r][: i + 1] for r, i in inner], [tools[r] for r, _ in inner]
    )
    through = dict(zip(inner, through_texts, strict=True))
    chars: list[list[tuple[int, int]]] = [[] for _ in conversations]
    refused: dict[int, str] = {}
    for (r, i), prompt in zip(asks, before, strict=True):
        if r in refused:
            continue
        whole = enc.texts[r]
        turn = through.get((r, i), whole)
        reason = _inconsistent(i, prompt, turn, whole)
        if reason is not None:
            again = renderer.render([conversations[r]], [tools[r]])[0]
            refused[r] = reason if again == whole else f"assistant turn {i}: {DIFFERING_RENDERS}"
            continue
        assert isinstance(prompt, str) and isinstance(turn, str)
        chars[r].append((len(prompt), len(turn)))
    out = []
    for r, spans in enumerate(chars):
        if r in refused:
            out.append(RowTurns([], refused[r]))
        else:
            length = int(enc.offsets[r + 1] - enc.offsets[r])
            out.append(RowTurns(token_spans(enc.encodings[r], spans, length)))
    return out


def _inconsistent(i: int, prompt: str | Exception, turn: str | Exception, whole: str) -> str | None:
    """Why turn ``i``'s renders cannot place it in the whole render (None: they can)."""
    for text, what in ((prompt, "with the generation prompt"), (turn, "through it")):
        if isinstance(text, Exception):
            brief = str(text).splitlines()[0][:120] if str(text) else ""
            return (
                f"assistant turn {i}: the chat template fails on the conversation up to it ({what}: "
                f"{type(text).__name__}: {brief})"
            )
    assert isinstance(prompt, str) and isinstance(turn, str)
    if not turn.startswith(prompt):
        return (
            f"assistant turn {i}: the render up to it with the generation prompt is not a prefix of the "
            "render through it (the template opens a turn otherwise than its generation prompt)"
        )
    if not whole.startswith(turn):
        return (
            f"assistant turn {i}: later turns change how the template renders it (the render through it is "
            "not a prefix of the whole conversation's)"
        )
    return None


def token_spans(encoding: Any, chars: list[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    """Character spans -> token spans, as transformers masks a ``{% generation %}`` block: every token whose
    characters overlap the span (a token straddling a boundary is in)."""
    return [overlapping(encoding, start, stop, length) for start, stop in chars]


def overlapping(encoding: Any, start: int, stop: int, length: int) -> tuple[int, int]:
    """``[first, last + 1)``: the tokens whose character offsets overlap ``[start, stop)`` -- the first token
    ending after ``start`` through the last one starting before ``stop`` (a character split over several
    byte tokens is in all of them). Asks the encoding about a few tokens; all offsets only when a boundary
    character has no token (a normalizer dropped it)."""
    first = encoding.char_to_token(start)
    last = encoding.char_to_token(stop - 1) if stop > 0 else None
    if first is None or last is None:
        offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
        after = np.flatnonzero(offsets[:, 1] > start)
        before = np.flatnonzero(offsets[:, 0] < stop)
        if not after.size or not before.size:
            return (0, 0)
        return (int(after[0]), max(int(before[-1]) + 1, int(after[0])))
    while first > 0 and encoding.token_to_chars(first - 1)[1] > start:
        first -= 1
    while last + 1 < length and encoding.token_to_chars(last + 1)[0] < stop:
        last += 1
    return (int(first), max(int(last) + 1, int(first)))
