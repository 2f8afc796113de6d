"""The one EOS-inference rule: the most common last token of the sequences."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.data.packed import PackedBlock
from bridgepack.data.packed import infer_eos_id as block_eos
from bridgepack.data.packset import most_common_last_token


def test_worked_example() -> None:
    tokens = np.array([5, 6, 2, 7, 2, 8, 9, 2])
    assert most_common_last_token(tokens, np.array([3, 5, 8])) == 2
    assert most_common_last_token(tokens, np.array([], dtype=np.int64)) == -1


@given(
    eos=st.integers(0, 50),
    bodies=st.lists(st.lists(st.integers(0, 50), max_size=6), min_size=1, max_size=20),
    odd=st.integers(51, 60),
)
def test_majority_of_last_tokens_wins(eos: int, bodies: list[list[int]], odd: int) -> None:
    """Most sequences end with ``eos``, a minority (a chat row ending in a newline) with ``odd``: the rule
    names ``eos``, and the packed-block reader agrees with the flat one."""
    sequences = [[*body, odd if i % 3 == 2 else eos] for i, body in enumerate(bodies)]
    flat = np.array([t for s in sequences for t in s], dtype=np.int64)
    ends = np.cumsum([len(s) for s in sequences])
    assert most_common_last_token(flat, ends) == eos
    starts = np.concatenate([[0], ends[:-1]])
    block = PackedBlock(
        "x.parquet", 0, 0,
        np.array([0, len(flat)]), flat,
        np.array([0, len(flat)]), np.zeros(len(flat), dtype=np.int8),
        np.array([0, len(starts)]), starts,
    )  # fmt: skip
    assert block_eos(block) == eos
