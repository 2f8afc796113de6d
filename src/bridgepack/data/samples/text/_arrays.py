"""Shared helpers of the text shapes: checked string fields, flat id arrays (no per-token Python objects)."""

from __future__ import annotations

import itertools

import numpy as np


def flat_ids(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The tokenizer's id lists as one flat int64 array and their lengths (no per-token Python objects)."""
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
    return flat, lengths


def segment_positions(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[starts[i], starts[i] + lengths[i])`` for every ``i``, concatenated."""
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
