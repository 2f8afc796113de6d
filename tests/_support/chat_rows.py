"""Generated chat rows for the Bridge comparisons: every schema and the content that makes templates branch.

``chat_rows(seed, n)`` mixes, row by row: the three schemas (``messages``; ``conversation``;
``conversations`` with ``from``/``value`` and a top-level ``system``), one to many turns, with and without
a system turn, per-row ``tools`` with assistant ``tool_calls`` and ``tool`` answers, Qwen3 reasoning (a
``reasoning_content`` field, or ``<think>...</think>`` inside the content), Chinese, code, empty and
whitespace-edged content, and a few long conversations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

TEXTS = (
    "What is 406 plus 199?",
    "406 plus 199 is 605.",
    "Sort these numbers: 43 74 59 60 5",
    "Sorted: 5 43 59 60 74",
    "你好，世界。今天天气很好，我们去公园散步吧。",
    "当然可以！公园里有很多花。",
    "def double(x):\n    return x * 2\n",
    "```python\nprint('hi')\n```",
    "  padded on both sides  ",
    "trailing blank lines\n\n",
    "ends with a newline\n",
    "",
    "Tabs\tand  double  spaces.",
    "Emoji 🙂 and accents: café, naïve.",
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def _text(rng: np.random.Generator) -> str:
    return str(TEXTS[int(rng.integers(len(TEXTS)))])


def _assistant(rng: np.random.Generator, reasoning: bool) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": "assistant", "content": _text(rng)}
    kind = int(rng.integers(4)) if reasoning else 0
    if kind == 1:
        turn["reasoning_content"] = "Let me think.\n" + _text(rng)
    elif kind == 2:
        turn["content"] = "<think>\nworking it out\n</think>\n\n" + turn["content"]
    return turn


def _turns(rng: np.random.Generator, pairs: int, reasoning: bool, tools: bool) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for _ in range(pairs):
        turns.append({"role": "user", "content": _text(rng)})
        if tools and rng.random() < 0.5:
            call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
            turns.append({"role": "assistant", "content": "Let me check.", "tool_calls": [call]})
            turns.append({"role": "tool", "content": '{"temperature": 21}'})
        turns.append(_assistant(rng, reasoning))
    return turns


def chat_rows(seed: int, n: int, *, reasoning: bool = True, tools: bool = True) -> list[dict[str, Any]]:
    """``n`` rows (see the module docstring); the same ``seed`` gives the same rows."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for i in range(n):
        pairs = 20 if i % 37 == 5 else int(rng.integers(1, 4))
        with_tools = tools and rng.random() < 0.25
        turns = _turns(rng, pairs, reasoning, with_tools)
        system = "You are a careful assistant." if rng.random() < 0.5 else None
        schema = i % 3
        row: dict[str, Any]
        if schema == 2:
            plain = [t for t in turns if t["role"] in ("user", "assistant")]
            speaker = {"user": "human", "assistant": "gpt"}
            row = {"conversations": [{"from": speaker[t["role"]], "value": t["content"]} for t in plain]}
            if system is not None:
                row["system"] = system
        else:
            if system is not None:
                turns.insert(0, {"role": "system", "content": system})
            row = {"messages" if schema == 0 else "conversation": turns}
        if with_tools and schema != 2:
            row["tools"] = TOOLS
        rows.append(row)
    return rows
