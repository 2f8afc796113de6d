"""Samples for the diff tests: chat-like stored sequences and packings of them, written as real Parquet."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from _support.packs import make_row, write_packs

#: One stored sequence: (tokens, rolled loss mask); one pack: its sequences in order.
Seq = tuple[Sequence[int], Sequence[int]]
EOS = 2


def chat(prompt: Sequence[int], answer: Sequence[int]) -> Seq:
    """Stored ``prompt + answer + [EOS]`` with Bridge's rolled mask (labels of the answer and EOS)."""
    tokens = [*prompt, *answer, EOS]
    supervised = [0] * len(prompt) + [1] * (len(answer) + 1)
    return tokens, [*supervised[1:], 0]


def packs_of(samples: Sequence[Seq], sizes: Sequence[int]) -> list[list[Seq]]:
    """Cut ``samples`` into consecutive packs of ``sizes`` sequences."""
    out, i = [], 0
    for size in sizes:
        out.append(list(samples[i : i + size]))
        i += size
    assert i == len(samples)
    return out


def write_packed(path: Path, packs: Sequence[Sequence[Seq]], row_group_size: int = 500) -> Path:
    """Write packs of (tokens, mask) sequences with Bridge's schema."""
    rows = [make_row([s[0] for s in pack], [s[1] for s in pack]) for pack in packs]
    return write_packs(path, rows, row_group_size=row_group_size)
