"""A row's list field as an int64 array, checked as ``bridgepack pack`` checks a JSONL row's ids and mask.

``np.asarray([1.5, 2.0], dtype=np.int64)`` truncates to ``[1, 2]`` and ``[True, 2]`` becomes ``[1, 2]``:
a collator that converted so would train on ids nobody wrote. Here floats, booleans (in id fields),
strings, nesting and integers beyond int64 are refused with the row and the field named, in the CLI's
words (``row 3: field 'input_ids': expected integer token ids, found 1.5``). Lists are checked with one
C-level pass over their element types (no Python loop per token), arrays and tensors by their dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bridgepack.data.packset import MAX_TOKEN_ID
from bridgepack.errors import DataError, shown

_INTEGER_TYPES = frozenset({int, *(np.dtype(c).type for c in np.typecodes["AllInteger"])})
_MASK_TYPES = _INTEGER_TYPES | {bool, np.bool_}


def _found(value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "a boolean"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "null" if value is None else shown(value)


def _array(at: str, value: Any, what: str, allowed: frozenset[type]) -> np.ndarray:
    if value is None:
        raise DataError(f"{at}: missing (expected a list of {what})")
    if not isinstance(value, np.ndarray) and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        kind = value.dtype.type
        if kind not in allowed:
            bad = value.reshape(-1)[0].item() if value.size else value.dtype
            raise DataError(f"{at}: expected {what}, found {_found(bad)}")
        array = value.astype(np.int64, copy=False)
    elif isinstance(value, (list, tuple)):
        if not set(map(type, value)) <= allowed:
            bad = next(v for v in value if type(v) not in allowed)
            raise DataError(f"{at}: expected {what}, found {_found(bad)}")
        try:
            array = np.fromiter(value, dtype=np.int64, count=len(value))
        except OverflowError:
            bad = next(v for v in value if not -(2**63) <= int(v) < 2**63)
            raise DataError(f"{at}: {bad} is out of the int64 range") from None
    else:
        raise DataError(f"{at}: expected a list of {what}, found {_found(value)}")
    if array.ndim != 1:
        raise DataError(f"{at}: expected a flat list of {what}, found {array.ndim}-D values")
    return array


def token_ids(index: int, field: str, value: Any) -> np.ndarray:
    """Token ids in ``[0, MAX_TOKEN_ID]``, the range ``bridgepack pack`` accepts."""
    at = f"row {index}: field {field!r}"
    array = _array(at, value, "integer token ids", _INTEGER_TYPES)
    bad = np.flatnonzero((array < 0) | (array > MAX_TOKEN_ID))
    if bad.size:
        raise DataError(f"{at}: token id {int(array[bad[0]])} out of range [0, {MAX_TOKEN_ID}]")
    return array


def integers(index: int, field: str, value: Any) -> np.ndarray:
    """Integers of any sign (labels: -100 is the ignored label; positions; sequence lengths)."""
    return _array(f"row {index}: field {field!r}", value, "integers", _INTEGER_TYPES)


def mask(index: int, field: str, value: Any) -> np.ndarray:
    """0/1 integers or booleans (the CLI's rule for ``loss_mask``)."""
    at = f"row {index}: field {field!r}"
    array = _array(at, value, "0/1 integers or booleans", _MASK_TYPES)
    bad = np.flatnonzero((array != 0) & (array != 1))
    if bad.size:
        raise DataError(f"{at}: expected 0/1 integers or booleans, found {int(array[bad[0]])}")
    return array
