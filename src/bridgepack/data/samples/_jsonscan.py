"""A numba fast path for pre-tokenized JSON lines: ``input_ids``/``loss_mask`` straight into int arrays.

Parsing ``{"input_ids": [5, 6, 2], ...}`` with a general JSON parser creates one Python int per token;
that is most of pass 1's time. This scanner reads the bytes of a chunk of lines once, validates each line
against the JSON grammar, and writes the two integer arrays directly into flat buffers.

It is deliberately conservative: it *declines* the whole chunk (returns ``None``) whenever the line is
anything but the plain case -- any grammar error, a non-ASCII byte, an escaped top-level key, a float,
boolean, negative or out-of-range id, a mask value other than 0/1, a duplicate key, an empty
``input_ids``, a mask of another length, a mix of rows with and without ``loss_mask``, nesting deeper
than 64. The orjson path then runs on that chunk and names the exact row and field of any error, so the
fast path never changes what is accepted, only how fast.
"""

from __future__ import annotations

import numba
import numpy as np

from bridgepack.data.packset import MAX_TOKEN_ID

# Module-level arrays are compile-time constants inside the kernels.
_IDS_KEY = np.frombuffer(b"input_ids", dtype=np.uint8).copy()
_MASK_KEY = np.frombuffer(b"loss_mask", dtype=np.uint8).copy()
_TRUE = np.frombuffer(b"true", dtype=np.uint8).copy()
_FALSE = np.frombuffer(b"false", dtype=np.uint8).copy()
_NULL = np.frombuffer(b"null", dtype=np.uint8).copy()
_MAX_DEPTH = 64

# Byte values.
_QUOTE, _BACKSLASH, _COLON, _COMMA = 34, 92, 58, 44
_LBRACE, _RBRACE, _LBRACKET, _RBRACKET = 123, 125, 91, 93
_MINUS, _PLUS, _DOT, _ZERO, _NINE = 45, 43, 46, 48, 57


@numba.njit(cache=True)
def _ws(buf: np.ndarray, pos: int, end: int) -> int:
    while pos < end and (buf[pos] == 32 or buf[pos] == 9 or buf[pos] == 10 or buf[pos] == 13):
        pos += 1
    return pos


@numba.njit(cache=True)
def _is_hex(c: int) -> bool:
    return (48 <= c <= 57) or (65 <= c <= 70) or (97 <= c <= 102)


@numba.njit(cache=True)
def _string(buf: np.ndarray, pos: int, end: int) -> int:
    """``pos`` at the opening quote; returns the position after the closing quote, or -1."""
    pos += 1
    while pos < end:
        c = buf[pos]
        if c == _QUOTE:
            return pos + 1
        if c == _BACKSLASH:
            if pos + 1 >= end:
                return -1
            e = buf[pos + 1]
            if e == 117:  # \uXXXX
                if pos + 6 > end:
                    return -1
                for k in range(pos + 2, pos + 6):
                    if not _is_hex(buf[k]):
                        return -1
                pos += 6
            elif e == 34 or e == 92 or e == 47 or e == 98 or e == 102 or e == 110 or e == 114 or e == 116:
                pos += 2
            else:
                return -1
        elif c < 32 or c >= 128:
            return -1
        else:
            pos += 1
    return -1


@numba.njit(cache=True)
def _digits(buf: np.ndarray, pos: int, end: int) -> int:
    start = pos
    while pos < end and _ZERO <= buf[pos] <= _NINE:
        pos += 1
    return pos if pos > start else -1


@numba.njit(cache=True)
def _number(buf: np.ndarray, pos: int, end: int) -> int:
    if pos < end and buf[pos] == _MINUS:
        pos += 1
    if pos >= end:
        return -1
    if buf[pos] == _ZERO:
        pos += 1
    else:
        pos = _digits(buf, pos, end)
        if pos < 0:
            return -1
    if pos < end and buf[pos] == _DOT:
        pos = _digits(buf, pos + 1, end)
        if pos < 0:
            return -1
    if pos < end and (buf[pos] == 101 or buf[pos] == 69):
        pos += 1
        if pos < end and (buf[pos] == _PLUS or buf[pos] == _MINUS):
            pos += 1
        pos = _digits(buf, pos, end)
    return pos


@numba.njit(cache=True)
def _literal(buf: np.ndarray, pos: int, end: int, word: np.ndarray) -> int:
    if pos + len(word) > end:
        return -1
    for k in range(len(word)):
        if buf[pos + k] != word[k]:
            return -1
    return pos + len(word)


@numba.njit(cache=True)
def _key(buf: np.ndarray, pos: int, end: int) -> int:
    """An object key and its colon (``"name" :``) starting at ``pos``; the position after, or -1."""
    if pos >= end or buf[pos] != _QUOTE:
        return -1
    pos = _string(buf, pos, end)
    if pos < 0:
        return -1
    pos = _ws(buf, pos, end)
    if pos >= end or buf[pos] != _COLON:
        return -1
    return pos + 1


@numba.njit(cache=True)
def _value(buf: np.ndarray, pos: int, end: int) -> int:
    """Validate one JSON value of any kind (iteratively, depth <= 64); the position after it, or -1."""
    stack = np.zeros(_MAX_DEPTH, dtype=np.uint8)  # 1 = array, 2 = object
    sp = 0
    while True:
        # Parse a value at pos.
        pos = _ws(buf, pos, end)
        if pos >= end:
            return -1
        c = buf[pos]
        opened = False
        if c == _LBRACE or c == _LBRACKET:  # noqa: SIM109 - plain compares inside numba kernels
            pos = _ws(buf, pos + 1, end)
            close = _RBRACE if c == _LBRACE else _RBRACKET
            if pos < end and buf[pos] == close:
                pos += 1
            else:
                if sp >= _MAX_DEPTH:
                    return -1
                stack[sp] = 2 if c == _LBRACE else 1
                sp += 1
                opened = True
                if c == _LBRACE:
                    pos = _key(buf, pos, end)
                    if pos < 0:
                        return -1
        elif c == _QUOTE:
            pos = _string(buf, pos, end)
        elif c == _MINUS or _ZERO <= c <= _NINE:
            pos = _number(buf, pos, end)
        elif c == 116:
            pos = _literal(buf, pos, end, _TRUE)
        elif c == 102:
            pos = _literal(buf, pos, end, _FALSE)
        elif c == 110:
            pos = _literal(buf, pos, end, _NULL)
        else:
            return -1
        if pos < 0:
            return -1
        if opened:
            continue
        # After a value: close containers or move to the next element.
        while True:
            if sp == 0:
                return pos
            pos = _ws(buf, pos, end)
            if pos >= end:
                return -1
            c = buf[pos]
            top = stack[sp - 1]
            if c == _COMMA:
                pos += 1
                if top == 2:
                    pos = _key(buf, _ws(buf, pos, end), end)
                    if pos < 0:
                        return -1
                break
            if (c == _RBRACKET and top == 1) or (c == _RBRACE and top == 2):
                sp -= 1
                pos += 1
                continue
            return -1


@numba.njit(cache=True)
def _int_array(
    buf: np.ndarray, pos: int, end: int, out: np.ndarray, n_out: int, max_value: int
) -> tuple[int, int]:
    """``pos`` at ``[``: integers in [0, max_value] appended to ``out``; (position after ``]``, new n_out)."""
    pos = _ws(buf, pos + 1, end)
    if pos < end and buf[pos] == _RBRACKET:
        return pos + 1, n_out
    while True:
        if pos >= end or not (_ZERO <= buf[pos] <= _NINE):
            return -1, n_out
        if buf[pos] == _ZERO and pos + 1 < end and _ZERO <= buf[pos + 1] <= _NINE:
            return -1, n_out
        value = 0
        ndigits = 0
        while pos < end and _ZERO <= buf[pos] <= _NINE:
            value = value * 10 + (buf[pos] - _ZERO)
            ndigits += 1
            pos += 1
            if ndigits > 10:
                return -1, n_out
        if value > max_value:
            return -1, n_out
        out[n_out] = value
        n_out += 1
        pos = _ws(buf, pos, end)
        if pos >= end:
            return -1, n_out
        if buf[pos] == _COMMA:
            pos = _ws(buf, pos + 1, end)
        elif buf[pos] == _RBRACKET:
            return pos + 1, n_out
        else:
            return -1, n_out


@numba.njit(cache=True)
def _key_is(buf: np.ndarray, start: int, stop: int, key: np.ndarray) -> bool:
    if stop - start != len(key):
        return False
    for k in range(len(key)):  # noqa: SIM110 - an explicit loop compiles to a tight kernel
        if buf[start + k] != key[k]:
            return False
    return True


@numba.njit(cache=True, nogil=True)  # nogil: chunks are scanned on several threads at once
def _scan(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    max_id: int,
    out_ids: np.ndarray,
    out_mask: np.ndarray,
    ids_len: np.ndarray,
    mask_len: np.ndarray,
) -> tuple[bool, int, int]:
    n_ids = 0
    n_mask = 0
    for line in range(len(starts)):
        end = ends[line]
        pos = _ws(buf, starts[line], end)
        if pos >= end or buf[pos] != _LBRACE:
            return False, n_ids, n_mask
        ids_len[line] = -1
        mask_len[line] = -1
        pos = _ws(buf, pos + 1, end)
        if pos < end and buf[pos] == _RBRACE:
            return False, n_ids, n_mask  # {} has no input_ids
        while True:
            if pos >= end or buf[pos] != _QUOTE:
                return False, n_ids, n_mask
            key_start = pos + 1
            pos = _string(buf, pos, end)
            if pos < 0:
                return False, n_ids, n_mask
            key_stop = pos - 1
            for k in range(key_start, key_stop):
                if buf[k] == _BACKSLASH:
                    return False, n_ids, n_mask
            pos = _ws(buf, pos, end)
            if pos >= end or buf[pos] != _COLON:
                return False, n_ids, n_mask
            pos = _ws(buf, pos + 1, end)
            if pos >= end:
                return False, n_ids, n_mask
            if _key_is(buf, key_start, key_stop, _IDS_KEY):
                if ids_len[line] >= 0 or buf[pos] != _LBRACKET:
                    return False, n_ids, n_mask
                before = n_ids
                pos, n_ids = _int_array(buf, pos, end, out_ids, n_ids, max_id)
                ids_len[line] = n_ids - before
            elif _key_is(buf, key_start, key_stop, _MASK_KEY):
                if mask_len[line] >= 0 or buf[pos] != _LBRACKET:
                    return False, n_ids, n_mask
                before = n_mask
                pos, n_mask = _int_array(buf, pos, end, out_mask, n_mask, 1)
                mask_len[line] = n_mask - before
            else:
                pos = _value(buf, pos, end)
            if pos < 0:
                return False, n_ids, n_mask
            pos = _ws(buf, pos, end)
            if pos >= end:
                return False, n_ids, n_mask
            if buf[pos] == _COMMA:
                pos = _ws(buf, pos + 1, end)
                continue
            if buf[pos] == _RBRACE:
                pos = _ws(buf, pos + 1, end)
                if pos != end:
                    return False, n_ids, n_mask
                break
            return False, n_ids, n_mask
        if ids_len[line] <= 0:
            return False, n_ids, n_mask
    return True, n_ids, n_mask


def scan_lines(lines: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(tokens uint32, mask uint8, lengths int64)`` for a chunk of plain pre-tokenized lines, else None."""
    sizes = np.fromiter((len(line) for line in lines), dtype=np.int64, count=len(lines))
    ends = np.cumsum(sizes)
    return scan_block(b"".join(lines), ends - sizes, ends)


def scan_block(
    data: bytes, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`scan_lines` on lines given as byte spans ``[starts[i], ends[i])`` of one buffer.

    Tokens come back as uint32 and the mask as uint8, the scratch store's types, written once: views of
    buffers sized for the worst case (a one-digit number per two bytes), whose untouched tail the OS never
    backs with memory.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    capacity = len(buf) // 2 + 1
    out_ids = np.empty(capacity, dtype=np.uint32)
    out_mask = np.empty(capacity, dtype=np.uint8)
    ids_len = np.empty(len(starts), dtype=np.int64)
    mask_len = np.empty(len(starts), dtype=np.int64)
    # Contiguous spans (a reader's are columns of one (n, 2) array): one compiled signature, not one per
    # layout (~4 s of compiling each, on a machine's first JSONL read).
    starts, ends = np.ascontiguousarray(starts, dtype=np.int64), np.ascontiguousarray(ends, dtype=np.int64)
    ok, n_ids, n_mask = _scan(buf, starts, ends, MAX_TOKEN_ID, out_ids, out_mask, ids_len, mask_len)
    if not ok:
        return None
    has_mask = mask_len >= 0
    if has_mask.all():
        if not np.array_equal(mask_len, ids_len):
            return None
        mask = out_mask[:n_mask]
    elif not has_mask.any():
        mask = np.ones(n_ids, dtype=np.uint8)
    else:
        return None
    return out_ids[:n_ids], mask, ids_len
