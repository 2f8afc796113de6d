"""The numba kernel that turns the bytes of a training log into record and field arrays.

One pass over the bytes finds every record header ``<word> <N>/<M> |`` (the word is the line format's,
:mod:`._log_lines`: ``iteration`` for Megatron and NeMo) wherever it sits on a line
(after a timestamp, a launcher prefix, or glued to the previous record) and splits its body into
``key: value`` fields up to the end of the line, a ``[`` (a glued ``[Rank N]`` line) or the next header::

    b" [2026-...] iteration   10/  100 | lm loss: 9.87E+00 | grad norm: 1.2 |\\n"
                  ^header              ^key    ^value       ^key      ^value  ^closed

Keys are identified by a 64-bit FNV-1a hash of their trimmed bytes (Python decodes one sample per
hash). Values are parsed here when exactly representable by the fast path (<= 15 significant digits,
decimal exponent within +-22: one correctly rounded multiply or divide, the same double ``float()``
gives); anything else is flagged for Python's ``float`` (``status`` 2) or as not a number (0).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
import numpy.typing as npt

_SPACE, _TAB, _CR, _NL = 32, 9, 13, 10
_PIPE, _COLON, _BRACKET, _SLASH = 124, 58, 91, 47
POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)  # exact doubles up to 1e22
_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)

STATUS_BAD, STATUS_OK, STATUS_SLOW = 0, 1, 2
KEY_SLOTS = 4096  # open-addressing table of distinct keys per block (Megatron prints < 40)
MAX_KEYS = KEY_SLOTS // 2
TOO_MANY_KEYS = -1


@numba.njit(cache=True, inline="always")
def _is_space(c: int) -> bool:
    return (c == _SPACE) | (c == _TAB) | (c == _CR)


@numba.njit(cache=True)
def _header(buf: npt.NDArray[np.uint8], i: int, n: int, word: npt.NDArray[np.uint8]) -> tuple[int, int]:
    """If a record header (``word``, the iteration, ``/``, the total, ``|``) starts at ``i``, return (body
    start, iteration); else (-1, 0)."""
    length = word.size
    if i + length > n:
        return -1, 0
    for k in range(length):
        if buf[i + k] != word[k]:
            return -1, 0
    j = i + length
    if j >= n or not (_is_space(buf[j])):
        return -1, 0
    while j < n and _is_space(buf[j]):
        j += 1
    start = j
    value = 0
    while j < n and 48 <= buf[j] <= 57:
        value = value * 10 + (buf[j] - 48)
        j += 1
    if j == start:
        return -1, 0
    while j < n and _is_space(buf[j]):
        j += 1
    if j >= n or buf[j] != _SLASH:
        return -1, 0
    j += 1
    while j < n and _is_space(buf[j]):
        j += 1
    start = j
    while j < n and 48 <= buf[j] <= 57:
        j += 1
    if j == start:
        return -1, 0
    while j < n and _is_space(buf[j]):
        j += 1
    if j >= n or buf[j] != _PIPE:
        return -1, 0
    return j + 1, value


@numba.njit(cache=True)
def _lower(c: int) -> int:
    return c + 32 if 65 <= c <= 90 else c


@numba.njit(cache=True)
def _parse_float(
    buf: npt.NDArray[np.uint8], s: int, e: int, pow10: npt.NDArray[np.float64]
) -> tuple[float, int]:
    """Parse ``buf[s:e]`` (trimmed) as a float: (value, status)."""
    if s >= e:
        return 0.0, STATUS_BAD
    i = s
    negative = False
    if buf[i] == 45 or buf[i] == 43:
        negative = buf[i] == 45
        i += 1
    sign = -1.0 if negative else 1.0
    rest = e - i
    if rest == 3 and _lower(buf[i]) == 110 and _lower(buf[i + 1]) == 97 and _lower(buf[i + 2]) == 110:
        return np.nan, STATUS_OK
    if (
        (rest == 3 or rest == 8)
        and _lower(buf[i]) == 105
        and _lower(buf[i + 1]) == 110
        and _lower(buf[i + 2]) == 102
    ):
        return sign * np.inf, STATUS_OK
    mantissa = 0
    significant = 0
    exponent = 0
    digits = 0
    while i < e and 48 <= buf[i] <= 57:
        d = buf[i] - 48
        if significant > 0 or d != 0:
            significant += 1
        if significant <= 18:
            mantissa = mantissa * 10 + d
        else:
            exponent += 1
        digits += 1
        i += 1
    if i < e and buf[i] == 46:
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            d = buf[i] - 48
            if significant > 0 or d != 0:
                significant += 1
            if significant <= 18:
                mantissa = mantissa * 10 + d
                exponent -= 1
            digits += 1
            i += 1
    if digits == 0:
        return 0.0, STATUS_BAD
    if i < e and (buf[i] == 101 or buf[i] == 69):
        i += 1
        exp_negative = False
        if i < e and (buf[i] == 45 or buf[i] == 43):
            exp_negative = buf[i] == 45
            i += 1
        start = i
        value = 0
        while i < e and 48 <= buf[i] <= 57 and value < 100000:
            value = value * 10 + (buf[i] - 48)
            i += 1
        if i == start:
            return 0.0, STATUS_BAD
        exponent += -value if exp_negative else value
    if i != e:
        return 0.0, STATUS_BAD
    if mantissa == 0:
        return sign * 0.0, STATUS_OK
    if significant > 15 or exponent > 22 or exponent < -22:
        return 0.0, STATUS_SLOW
    if exponent >= 0:
        return sign * (float(mantissa) * pow10[exponent]), STATUS_OK
    return sign * (float(mantissa) / pow10[-exponent]), STATUS_OK


class ScanResult(NamedTuple):
    """What :func:`scan_records` found in a block: its records, their fields, the block's distinct keys."""

    iterations: npt.NDArray[np.int64]  #: of each record, the line format's offset added
    positions: npt.NDArray[np.int64]  #: byte offset of each record's header
    closed: npt.NDArray[np.bool_]  #: the record ended with ``|`` (a whole Megatron line)
    field_record: npt.NDArray[np.int64]  #: the record each field belongs to
    field_key: npt.NDArray[np.int16]  #: key id of each field (:data:`TOO_MANY_KEYS`: the table overflowed)
    value_start: npt.NDArray[np.int64]  #: byte span of each field's value
    value_end: npt.NDArray[np.int64]
    value: npt.NDArray[np.float64]  #: the parsed value (when ``status`` is :data:`STATUS_OK`)
    status: npt.NDArray[np.int8]  #: STATUS_OK, STATUS_SLOW (for Python's float) or STATUS_BAD
    key_hash: npt.NDArray[np.uint64]  #: FNV-1a hash of each key id's bytes
    key_span: npt.NDArray[np.int64]  #: (n, 2) byte span of one sample of each key id
    newlines: int

    def records(self, keep: int) -> ScanResult:
        """The first ``keep`` records and their fields only."""
        fields = self.field_record < keep
        return self._replace(
            iterations=self.iterations[:keep],
            positions=self.positions[:keep],
            closed=self.closed[:keep],
            field_record=self.field_record[fields],
            field_key=self.field_key[fields],
            value_start=self.value_start[fields],
            value_end=self.value_end[fields],
            value=self.value[fields],
            status=self.status[fields],
        )


def scan_records(block: bytes, header: bytes, iteration_offset: int) -> ScanResult:
    """Scan ``block`` once for records whose header word is ``header`` (see :class:`ScanResult`)."""
    if not header or header[0] in b" \t\r\n|":
        raise ValueError(f"a record header word must start with a visible character, got {header!r}")
    return ScanResult(
        *_scan(
            np.frombuffer(block, dtype=np.uint8),
            iteration_offset,
            len(block) // (len(header) + MIN_BODY_BYTES) + 1,
            block.count(b":"),
            np.frombuffer(header, dtype=np.uint8),
            POW10,
        )
    )


#: The fewest bytes a record has beyond its header word: `` 1/1|``.
MIN_BODY_BYTES = 5


@numba.njit(cache=True)
def _scan(
    buf: npt.NDArray[np.uint8],
    offset: int,
    max_records: int,
    max_fields: int,
    word: npt.NDArray[np.uint8],
    pow10: npt.NDArray[np.float64],
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.bool_],
    npt.NDArray[np.int64],
    npt.NDArray[np.int16],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.int8],
    npt.NDArray[np.uint64],
    npt.NDArray[np.int64],
    int,
]:
    """Scan ``buf`` once: the arrays of :class:`ScanResult`, in its order."""
    n = buf.size
    rec_iter = np.empty(max_records, dtype=np.int64)
    rec_pos = np.empty(max_records, dtype=np.int64)
    rec_closed = np.zeros(max_records, dtype=np.bool_)
    f_rec = np.empty(max_fields, dtype=np.int64)
    f_key = np.empty(max_fields, dtype=np.int16)
    f_vstart = np.empty(max_fields, dtype=np.int64)
    f_vend = np.empty(max_fields, dtype=np.int64)
    f_value = np.empty(max_fields, dtype=np.float64)
    f_status = np.empty(max_fields, dtype=np.int8)
    slot_hash = np.zeros(KEY_SLOTS, dtype=np.uint64)
    slot_id = np.full(KEY_SLOTS, -1, dtype=np.int16)
    key_hash = np.empty(MAX_KEYS, dtype=np.uint64)
    key_span = np.empty((MAX_KEYS, 2), dtype=np.int64)
    n_keys = 0
    newlines = 0
    nr = 0
    nf = 0
    first = word[0]
    i = 0
    while i < n:
        if buf[i] != first:
            if buf[i] == _NL:
                newlines += 1
            i += 1
            continue
        body, iteration = _header(buf, i, n, word)
        if body < 0:
            i += 1
            continue
        if nr >= max_records:
            break
        r = nr
        nr += 1
        rec_iter[r] = iteration + offset
        rec_pos[r] = i
        j = body
        last_pipe = True
        while True:  # one field per turn
            while j < n and _is_space(buf[j]):
                j += 1
            if j >= n or buf[j] == _NL or buf[j] == _BRACKET:
                break
            if buf[j] == first and _header(buf, j, n, word)[0] >= 0:
                break
            last_pipe = False
            key_start = j
            h = _FNV_OFFSET
            key_end = j
            stop = False
            while j < n:
                c = buf[j]
                if c == _COLON or c == _PIPE or c == _NL or c == _BRACKET:  # noqa: SIM109
                    break
                if c == first and _header(buf, j, n, word)[0] >= 0:
                    stop = True
                    break
                if not _is_space(c):
                    key_end = j + 1
                j += 1
            if stop or j >= n or buf[j] != _COLON:
                if j < n and buf[j] == _PIPE and not stop:
                    j += 1  # a field without ':' -- skip it
                    last_pipe = True
                    continue
                break
            for k in range(key_start, key_end):
                h = (h ^ np.uint64(buf[k])) * _FNV_PRIME
            j += 1
            while j < n and _is_space(buf[j]):
                j += 1
            value_start = j
            value_end = j
            while j < n:
                c = buf[j]
                if c == _PIPE or c == _NL or c == _BRACKET:  # noqa: SIM109
                    break
                if c == first and _header(buf, j, n, word)[0] >= 0:
                    break
                if not _is_space(c):
                    value_end = j + 1
                j += 1
            if nf < max_fields:
                slot = np.int64(h & np.uint64(KEY_SLOTS - 1))
                while slot_id[slot] >= 0 and slot_hash[slot] != h:
                    slot = np.int64((slot + 1) % KEY_SLOTS)
                if slot_id[slot] < 0:
                    if n_keys < MAX_KEYS:
                        slot_hash[slot] = h
                        slot_id[slot] = n_keys
                        key_hash[n_keys] = h
                        key_span[n_keys, 0] = key_start
                        key_span[n_keys, 1] = key_end
                        n_keys += 1
                        f_key[nf] = n_keys - 1
                    else:
                        f_key[nf] = TOO_MANY_KEYS
                else:
                    f_key[nf] = slot_id[slot]
                f_rec[nf] = r
                f_vstart[nf] = value_start
                f_vend[nf] = value_end
                value, status = _parse_float(buf, value_start, value_end, pow10)
                f_value[nf] = value
                f_status[nf] = status
                nf += 1
            if j < n and buf[j] == _PIPE:
                j += 1
                last_pipe = True
                continue
            break
        rec_closed[r] = last_pipe
        i = j
    return (
        rec_iter[:nr],
        rec_pos[:nr],
        rec_closed[:nr],
        f_rec[:nf],
        f_key[:nf],
        f_vstart[:nf],
        f_vend[:nf],
        f_value[:nf],
        f_status[:nf],
        key_hash[:n_keys],
        key_span[:n_keys],
        newlines,
    )
