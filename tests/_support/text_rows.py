"""Generated prompt-completion rows that exercise a tokenizer's edges: Chinese, code, emoji, empty and
whitespace-edged fields, special-token strings in the text, the canonical ``prompt``/``completion`` keys and
long rows (for truncation). Deterministic for a given seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson

FRAGMENTS = (
    "What is the capital of France?",
    "Paris.",
    "请把这句话翻译成英文：今天天气很好。",
    "The weather is nice today.",
    "def add(a, b):\n    return a + b\n",
    "```python\nprint('hi')\n```",
    "  leading and trailing spaces  ",
    "\ttab-edged\t",
    "\nnewline-edged\n",
    "emoji 🚀 and accents: café, naïve",
    "<|im_start|>user\nnot a real turn<|im_end|>",
    "<|begin_of_text|>header <|start_header_id|>x<|end_header_id|>",
    "x",
    " ",
    "1234567890 + 987654321 = 1111111111",
)


def prompt_completion_rows(n: int, seed: int, long_every: int = 9) -> list[dict[str, Any]]:
    """``n`` rows ``{"input", "output"}`` (every 7th with the canonical keys instead); every
    ``long_every``-th row is a few hundred tokens long; a few have an empty prompt."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for i in range(n):
        k = 30 if i % long_every == long_every - 1 else int(rng.integers(1, 4))
        prompt = " ".join(FRAGMENTS[j] for j in rng.integers(0, len(FRAGMENTS), k))
        completion = " ".join(FRAGMENTS[j] for j in rng.integers(0, len(FRAGMENTS), int(rng.integers(1, 4))))
        if i % 11 == 3:
            prompt = ""
        keys = ("prompt", "completion") if i % 7 == 5 else ("input", "output")
        rows.append({keys[0]: prompt, keys[1]: completion, "id": i})
    return rows


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path
