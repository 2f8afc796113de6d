"""Multiset matching of two sequence-hash tables: which sequences are shared, changed, or only on one side.

Both sides are reduced to sorted uint64 keys, then walked once in step (a merge join), so two sets of a
million sequences compare in memory proportional to their hashes, never their tokens. Matching runs in two
rounds::

    A: (t1,m1) (t2,m2) (t3,m3)        round 1, key (tokens, mask): (t1,m1) is identical in both
    B: (t1,m1) (t2,m9) (t4,m4)        round 2, key tokens only, on the rest: t2 pairs up (mask changed)
                                      left over: t3 only in A, t4 only in B

Duplicated sequences count as often as they occur (a multiset), so dropping one of two equal samples
shows up as "only in A: 1".
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt


@numba.njit(cache=True)
def _merge_join(
    a1: npt.NDArray[np.uint64],
    a2: npt.NDArray[np.uint64],
    b1: npt.NDArray[np.uint64],
    b2: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Pair equal keys of two lexicographically sorted key lists; returns the paired positions."""
    n = min(a1.shape[0], b1.shape[0])
    pa = np.empty(n, dtype=np.int64)
    pb = np.empty(n, dtype=np.int64)
    i = 0
    j = 0
    k = 0
    while i < a1.shape[0] and j < b1.shape[0]:
        if a1[i] == b1[j] and a2[i] == b2[j]:
            pa[k] = i
            pb[k] = j
            k += 1
            i += 1
            j += 1
        elif a1[i] < b1[j] or (a1[i] == b1[j] and a2[i] < b2[j]):
            i += 1
        else:
            j += 1
    return pa[:k], pb[:k]


def _pair(
    index_a: npt.NDArray[np.int64],
    keys_a: tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]],
    index_b: npt.NDArray[np.int64],
    keys_b: tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Pairs of original indices (from ``index_a``/``index_b``) whose two-part keys are equal."""
    order_a = np.lexsort((keys_a[1][index_a], keys_a[0][index_a]))
    order_b = np.lexsort((keys_b[1][index_b], keys_b[0][index_b]))
    sa = index_a[order_a]
    sb = index_b[order_b]
    pa, pb = _merge_join(keys_a[0][sa], keys_a[1][sa], keys_b[0][sb], keys_b[1][sb])
    return sa[pa], sb[pb]


@dataclass(frozen=True)
class SequenceMatch:
    """Indices (stored order) of sequences: identical pairs, mask-changed pairs, and the unmatched."""

    identical_a: npt.NDArray[np.int64]
    identical_b: npt.NDArray[np.int64]
    changed_a: npt.NDArray[np.int64]
    changed_b: npt.NDArray[np.int64]
    only_a: npt.NDArray[np.int64]
    only_b: npt.NDArray[np.int64]


def match_sequences(
    tok_a: npt.NDArray[np.uint64],
    mask_a: npt.NDArray[np.uint64],
    tok_b: npt.NDArray[np.uint64],
    mask_b: npt.NDArray[np.uint64],
) -> SequenceMatch:
    """Match A's sequences to B's: first on (tokens, mask), then on tokens among the rest."""
    all_a = np.arange(len(tok_a), dtype=np.int64)
    all_b = np.arange(len(tok_b), dtype=np.int64)
    same_a, same_b = _pair(all_a, (tok_a, mask_a), all_b, (tok_b, mask_b))
    rest_a = np.setdiff1d(all_a, same_a, assume_unique=True)
    rest_b = np.setdiff1d(all_b, same_b, assume_unique=True)
    zeros_a = np.zeros(len(tok_a), dtype=np.uint64)
    zeros_b = np.zeros(len(tok_b), dtype=np.uint64)
    changed_a, changed_b = _pair(rest_a, (tok_a, zeros_a), rest_b, (tok_b, zeros_b))
    only_a = np.setdiff1d(rest_a, changed_a, assume_unique=True)
    only_b = np.setdiff1d(rest_b, changed_b, assume_unique=True)
    order = np.argsort(changed_a, kind="stable")
    return SequenceMatch(np.sort(same_a), np.sort(same_b), changed_a[order], changed_b[order], only_a, only_b)
