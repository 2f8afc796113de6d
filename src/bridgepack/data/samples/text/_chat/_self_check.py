"""The check every inferred assistant mask passes before it is written, against the row itself.

A mask inferred by rendering (or from explicit markers) is only as good as the inference: a template that
renders a turn twice, a marker a message happens to contain, a bug. So each row's spans are read back
against its own messages, walked in order through the rendered text:

* each assistant turn's span holds the message's own ``content`` (after the last ``</think>``, which
  templates often move or drop; stripped) and the name of each of its tool calls, every token of them
  trained;
* no user, system or tool text is trained: the message's stripped content, found after the text of the
  messages before it, must have an occurrence that is not trained before the span of the next assistant
  turn (one inside the previous assistant turn's span, e.g. ``end`` inside ``<|end|>``, is skipped). Text a
  template rewrites (a tool answer re-serialised) is not found and not judged.

E.g. ``[user "hi", assistant "yo"]`` rendered ``<|user|>\\nhi<|end|>\\n<|assistant|>\\nyo<|end|>\\n``: a span
over ``yo<|end|>\\n`` passes; one starting at ``hi`` fails (user text trained); one over ``<|end|>\\n`` only
fails (``yo`` not trained).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bridgepack.data.samples.text._chat._by_render import overlapping

_THINK_END = "</think>"


def check_row(
    conversation: list[dict[str, Any]],
    text: str,
    encoding: Any,
    spans: list[tuple[int, int]],
    length: int,
) -> str | None:
    """Why the token ``spans`` (one per assistant turn, in order) are not this row's assistant turns; None
    when they pass every check of the module docstring."""
    assistants = [k for k, m in enumerate(conversation) if m.get("role") == "assistant"]
    if len(spans) != len(assistants):
        return f"{len(spans)} assistant span(s) found for {len(assistants)} assistant turn(s)"
    mask = np.zeros(length, dtype=bool)
    for start, stop in spans:
        mask[start:stop] = True
    span_of = dict(zip(assistants, spans, strict=True))
    cursor = 0
    previous_end = 0  # character end of the previous assistant turn's span
    for k, message in enumerate(conversation):
        role = message.get("role")
        if role == "assistant":
            start, stop = span_of[k]
            if stop <= start:
                return f"assistant turn {k}: nothing of it is trained"
            low, high = encoding.token_to_chars(start)[0], encoding.token_to_chars(stop - 1)[1]
            for piece, what in _assistant_pieces(message):
                at = text.find(piece, low, high)
                if at < 0 or not _all(mask, encoding, at, len(piece), True):
                    return f"assistant turn {k}: its {what} is not all in the trained span"
                cursor = max(cursor, at + len(piece))
            previous_end = max(previous_end, high)
            continue
        for piece in _pieces(message.get("content")):
            at = text.find(piece, cursor)
            while 0 <= at < previous_end and not _all(mask, encoding, at, len(piece), False):
                at = text.find(piece, at + 1)  # inside the previous assistant turn's span: look further
            if at < 0:
                continue  # the template rewrote it: not judged
            if not _all(mask, encoding, at, len(piece), False):
                return f"turn {k} ({role}): its text is trained"
            cursor = at + len(piece)
    return None


def _all(mask: np.ndarray, encoding: Any, at: int, size: int, value: bool) -> bool:
    """True when every token overlapping characters ``[at, at + size)`` has mask ``value``."""
    first, stop = overlapping(encoding, at, at + size, len(mask))
    return bool(np.all(mask[first:stop] == value))


def _pieces(content: Any) -> list[str]:
    """The texts of a message's content (a string, or a list of parts with ``text``), stripped, non-empty."""
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    else:
        texts = []
    return [t.strip() for t in texts if t.strip()]


def _assistant_pieces(message: dict[str, Any]) -> list[tuple[str, str]]:
    """What an assistant turn's span must hold: its answer (after ``</think>``) and its tool calls' names."""
    out = []
    for piece in _pieces(message.get("content")):
        answer = piece.rsplit(_THINK_END, 1)[-1].strip()
        if answer:
            out.append((answer, "content"))
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            function = call.get("function", call)
            name = function.get("name") if isinstance(function, dict) else None
            if isinstance(name, str) and name:
                out.append((name, f"tool call {name!r}"))
    return out
