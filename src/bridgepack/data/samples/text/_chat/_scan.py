"""Numba kernels that find assistant turns in rendered token ids, the two ways Bridge 0.6.2 does
(bridge-format §13).

Both read a chunk's rows as one flat id array with row offsets and the markers of
:mod:`bridgepack.data.samples.text._chat._markers` (assistant start ``A``, other roles' starts ``U``,
turn end ``E``)::

    ids   U u u E A a a E U u E A b E         (one row)
    scan  0 0 0 0 0 1 1 1 0 0 0 0 1 1         every A..E span, E included

* :func:`boundary_scan` is Bridge's guarded token scan: every role start is a marker; each assistant
  marker's span ends at the single turn end found before the next marker (two different ends there, or a
  number of assistant markers other than the conversation's assistant turns, and the row has no scan mask).
* :func:`marker_spans` reads explicit markers (``--assistant-start``/``--assistant-end``, bridgepack's default
  mode): each assistant start's span runs from after it through the first turn end after it (end included);
  a start with no end before the next start fails the row.
* :func:`turn_spans` is the per-turn step of Bridge's prefix-render path: given where a turn may start
  (``s``, the tokens shared with the render of the turns before it) and where it must end (``l``, those
  shared with the render through it), the first assistant start at or after ``s`` and the *last* turn end
  that fits before ``l``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def _find(ids: np.ndarray, hi: int, pattern: np.ndarray, size: int, start: int) -> int:
    """First ``i >= start`` with ``ids[i:i+size] == pattern[:size]`` and ``i + size <= hi``; -1 if none."""
    for i in range(start, hi - size + 1):
        match = True
        for k in range(size):
            if ids[i + k] != pattern[k]:
                match = False
                break
        if match:
            return i
    return -1


@numba.njit(cache=True)
def boundary_scan(
    ids: np.ndarray,
    offsets: np.ndarray,
    rows: np.ndarray,
    starts: np.ndarray,
    start_lens: np.ndarray,
    start_roles: np.ndarray,
    ends: np.ndarray,
    end_lens: np.ndarray,
    expected: np.ndarray,
    include_content: bool,
    mask: np.ndarray,
) -> np.ndarray:
    """Bridge's guarded scan on ``rows``: writes 1s into ``mask``; returns 1 per row that got a mask.

    ``expected[r]`` is row ``r``'s number of assistant turns (Bridge compares the roles of the markers it
    finds with the conversation's, and only the assistant role counts).
    """
    found = np.zeros(len(rows), dtype=np.uint8)
    n_starts = len(start_lens)
    for j in range(len(rows)):
        r = rows[j]
        lo = offsets[r]
        hi = offsets[r + 1]
        # every occurrence of every start marker (non-overlapping per marker), then by position, longest first
        pos_list = []
        len_list = []
        role_list = []
        for k in range(n_starts):
            size = start_lens[k]
            at = lo
            while at < hi:
                p = _find(ids, hi, starts[k], size, at)
                if p < 0:
                    break
                pos_list.append(p)
                len_list.append(size)
                role_list.append(start_roles[k])
                at = p + size
        if not pos_list:
            continue
        pos = np.array(pos_list)
        lens = np.array(len_list)
        roles = np.array(role_list)
        order = np.argsort(pos * 4096 - lens, kind="mergesort")
        keep = np.ones(len(order), dtype=np.bool_)
        for t in range(1, len(order)):
            if pos[order[t]] == pos[order[t - 1]]:
                keep[t] = False
        order = order[keep]
        assistants = 0
        for t in range(len(order)):
            if roles[order[t]] == 0:
                assistants += 1
        if assistants != expected[r]:
            continue
        ok = True
        any_span = False
        for t in range(len(order)):
            m = order[t]
            if roles[m] != 0:
                continue
            content = pos[m] + lens[m]
            limit = pos[order[t + 1]] if t + 1 < len(order) else hi
            best_start = -1
            best_end = -1
            distinct = 0
            for e in range(len(end_lens)):
                size = end_lens[e]
                at = content
                while at < limit:
                    p = _find(ids, hi, ends[e], size, at)
                    if p < 0 or p + size > limit:
                        break
                    if best_start < 0:
                        best_start = p
                        best_end = p + size
                        distinct = 1
                    elif p != best_start:
                        distinct += 1
                        if p < best_start:
                            best_start = p
                            best_end = p + size
                    at = p + 1
            if best_start < 0:
                continue
            if distinct != 1:
                ok = False
                break
            any_span = True
            if include_content:
                mask[content:best_start] = 1
            mask[best_start:best_end] = 1
        if not ok:
            mask[lo:hi] = 0
            continue
        if any_span:
            found[j] = 1
        else:
            mask[lo:hi] = 0
    return found


@numba.njit(cache=True)
def turn_spans(
    ids: np.ndarray,
    his: np.ndarray,
    s: np.ndarray,
    limit: np.ndarray,
    start: np.ndarray,
    start_len: int,
    ends: np.ndarray,
    end_lens: np.ndarray,
) -> np.ndarray:
    """One turn per entry (absolute positions): ``[content, end, after_end]``, or -1s when it fails.

    ``his[t]`` is the end of the turn's row (the start marker is searched up to it, as Bridge does).
    """
    out = np.full((len(s), 3), -1, dtype=np.int64)
    for t in range(len(s)):
        if s[t] >= limit[t]:
            continue
        role_start = _find(ids, his[t], start, start_len, s[t])
        if role_start < 0 or role_start + start_len > limit[t]:
            continue
        content = role_start + start_len
        best_start = -1
        best_priority = 0
        best_end = -1
        for e in range(len(end_lens)):
            size = end_lens[e]
            at = content
            while at < limit[t]:
                p = _find(ids, his[t], ends[e], size, at)
                if p < 0 or p + size > limit[t]:
                    break
                # Bridge keeps the last end; at the same position the primary end beats a variant
                if p > best_start or (p == best_start and e < best_priority):
                    best_start = p
                    best_priority = e
                    best_end = p + size
                at = p + 1
        if best_start < 0:
            continue
        out[t, 0] = content
        out[t, 1] = best_start
        out[t, 2] = best_end
    return out


@numba.njit(cache=True)
def marker_spans(
    ids: np.ndarray, offsets: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every row's explicit-marker spans: ``(spans, counts)``, ``spans`` ``[content, after_end)`` relative to
    the row, row after row; ``counts[r]`` spans of row ``r``, or -1 (and none kept) when a start has no end
    before the next start."""
    n = len(offsets) - 1
    counts = np.zeros(n, dtype=np.int64)
    lows: list[int] = []
    highs: list[int] = []
    for r in range(n):
        lo = offsets[r]
        hi = offsets[r + 1]
        first = len(lows)
        at = lo
        while True:
            p = _find(ids, hi, start, len(start), at)
            if p < 0:
                break
            content = p + len(start)
            e = _find(ids, hi, end, len(end), content)
            following = _find(ids, hi, start, len(start), content)
            if e < 0 or (0 <= following < e + len(end)):
                counts[r] = -1
                break
            lows.append(content - lo)
            highs.append(e + len(end) - lo)
            counts[r] += 1
            at = e + len(end)
        if counts[r] < 0:
            while len(lows) > first:
                lows.pop()
                highs.pop()
    spans = np.zeros((len(lows), 2), dtype=np.int64)
    for k in range(len(lows)):
        spans[k, 0] = lows[k]
        spans[k, 1] = highs[k]
    return spans, counts
