"""Shared helpers of the text shapes: checked string fields, flat id arrays (no per-token Python objects)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from seqpack.data._examples import location
from seqpack.data._readers import RawChunk
from seqpack.errors import DataError


def text_field(path: str, chunk: RawChunk, index: int, record: dict[str, Any], field: str) -> str:
    value = record.get(field)
    if value is None:
        raise DataError(f"{location(path, chunk, index, field)}: missing (expected a string)")
    if not isinstance(value, str):
        raise DataError(
            f"{location(path, chunk, index, field)}: expected a string, found {type(value).__name__}"
        )
    return value


def flat_ids(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The tokenizer's id lists as one flat int64 array and their lengths (no per-token Python objects)."""
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
    return flat, lengths


def segment_positions(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[starts[i], starts[i] + lengths[i])`` for every ``i``, concatenated."""
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
