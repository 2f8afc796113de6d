"""Generate the demo's chat SFT dataset (``src/bridgepack/resources/demo/sft_chat.jsonl``), deterministically.

The conversations are small, learnable tasks (arithmetic, sorting, reversing, counting, unit conversion,
multi-turn follow-ups) whose lengths follow a long tail like real SFT data: most are short, a few are long
multi-turn exchanges. A tiny model trained for a minute visibly learns from them, so the demo's packed and
padded loss curves fall, and the long tail is what makes padding wasteful and packing worthwhile.

Run: ``python scripts/make_demo_data.py`` (rewrites the file; the output is fixed by the seed).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "bridgepack" / "resources" / "demo" / "sft_chat.jsonl"
WORDS = [
    "apple",
    "river",
    "stone",
    "cloud",
    "garden",
    "lamp",
    "window",
    "pencil",
    "harbor",
    "meadow",
    "candle",
    "violin",
    "tiger",
    "planet",
    "forest",
    "bridge",
    "mirror",
    "ocean",
    "rocket",
    "saddle",
    "silver",
    "thunder",
    "valley",
    "winter",
    "yellow",
    "zebra",
    "anchor",
    "basket",
]
UNITS = [
    ("meters", "centimeters", 100),
    ("kilometers", "meters", 1000),
    ("hours", "minutes", 60),
    ("minutes", "seconds", 60),
    ("kilograms", "grams", 1000),
    ("liters", "milliliters", 1000),
]
SYSTEM = "You are a careful assistant. Answer exactly."


def _add(rng: random.Random) -> tuple[str, str]:
    a, b = rng.randint(0, 999), rng.randint(0, 999)
    return f"What is {a} plus {b} ?", f"{a} plus {b} is {a + b} ."


def _multiply(rng: random.Random) -> tuple[str, str]:
    a, b = rng.randint(2, 99), rng.randint(2, 99)
    return f"Multiply {a} by {b} .", f"{a} times {b} is {a * b} ."


def _sort(rng: random.Random) -> tuple[str, str]:
    nums = [rng.randint(0, 99) for _ in range(rng.randint(3, 12))]
    return (
        f"Sort these numbers : {' '.join(map(str, nums))}",
        f"Sorted : {' '.join(map(str, sorted(nums)))}",
    )


def _reverse(rng: random.Random) -> tuple[str, str]:
    words = rng.sample(WORDS, rng.randint(2, 8))
    return f"Reverse the words : {' '.join(words)}", f"Reversed : {' '.join(reversed(words))}"


def _count(rng: random.Random) -> tuple[str, str]:
    word = rng.choice(WORDS)
    text = [rng.choice([word, *rng.sample(WORDS, 3)]) for _ in range(rng.randint(4, 16))]
    return (
        f"How many times does {word} appear in : {' '.join(text)}",
        f"{word} appears {text.count(word)} times .",
    )


def _convert(rng: random.Random) -> tuple[str, str]:
    big, small, factor = rng.choice(UNITS)
    n = rng.randint(1, 50)
    return f"How many {small} are in {n} {big} ?", f"{n} {big} is {n * factor} {small} ."


TASKS: list[Callable[[random.Random], tuple[str, str]]] = [_add, _multiply, _sort, _reverse, _count, _convert]


def conversation(rng: random.Random) -> dict[str, object]:
    """One conversation; the number of turns has a long tail (1 turn usually, up to 24 rarely)."""
    turns = min(24, max(1, int(rng.lognormvariate(0.0, 0.9))))
    messages: list[dict[str, str]] = [{"role": "system", "content": SYSTEM}] if rng.random() < 0.5 else []
    for _ in range(turns):
        question, answer = rng.choice(TASKS)(rng)
        messages.append({"role": "user", "content": question})
        messages.append({"role": "assistant", "content": answer})
    return {"messages": messages}


def main(count: int = 2000, seed: int = 1234) -> None:
    rng = random.Random(seed)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w") as handle:
        for _ in range(count):
            handle.write(json.dumps(conversation(rng)) + "\n")
    print(f"wrote {count} conversations to {OUT} ({OUT.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
