"""Balanced packing: packs whose estimated step cost is as even as token capacity allows.

Why in the packs: Bridge's batch sampler draws a fresh random permutation of the rows every epoch and deals
each global batch to the data-parallel ranks interleaved (bridge-format §5), so which packs meet on a step is
random and an order on disk does not survive. What a rank waits for is the sum of its packs' costs, and
with random dealing the spread of that sum is the spread of single pack costs (times sqrt(packs per
rank)). So the goal is a low spread of pack costs, with (almost) no more packs than the tightest packing.

The algorithm is longest-processing-time scheduling with a capacity constraint: sequences in
descending length go, one by one, to the pack with the **smallest attention work (sum of squared
lengths) that still has room**, over as many packs as best-fit-decreasing needs (a new pack opens only
when nothing has room). It is keyed on the attention part because every pack ends (nearly) full --
that is what efficiency within 0.1% of best-fit-decreasing means -- so the dense parts end (nearly)
equal whatever the order, and what still differs between packs is the sum of squares. (With no
attention term it balances tokens.)::

    pack 10, cost L + L^2/10, lengths 5 3 1 1 1; best_fit_decreasing needs 2 packs
    best_fit_decreasing:  [5, 3, 1, 1] cost 13.6   [1] cost 1.1
    smallest sum of squares with room:
                          5 -> p0 (25)   3 -> p1 (9)   1, 1, 1 -> p1, the smaller one (10, 11, 12)
                          [5] cost 7.5    [3, 1, 1, 1] cost 7.2

Long sequences spread one per pack, medium ones go to the packs without a long one, and the packs
holding the longest sequences are topped up last with the shortest ones. Two heaps make it
O(n log packs): open packs by load, and packs set aside (too full for the current length) by room,
released when the lengths get short enough.

A sequence's own cost cannot be split, so packs holding one very long sequence stay the most expensive
ones; balancing removes the avoidable spread (two long sequences meeting in one pack, medium sequences
piling up where a long one already is).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from bridgepack.packing._algorithms import BALANCED
from bridgepack.packing._cost import CostModel, pack_costs
from bridgepack.packing._plan import PackPlan

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Balanced packs may lose at most this much token efficiency (a fraction: 0.001 = 0.1 points)
#: against best_fit_decreasing; otherwise best_fit_decreasing's packs are kept.
EFFICIENCY_TOLERANCE = 0.001


@numba.njit(cache=True)
def _heap_push(keys: FloatArray, ids: IntArray, size: int, key: float, ident: int) -> int:
    """Push onto a binary min-heap stored in ``keys``/``ids[:size]``; returns the new size."""
    pos = size
    while pos > 0:
        parent = (pos - 1) >> 1
        if keys[parent] <= key:
            break
        keys[pos] = keys[parent]
        ids[pos] = ids[parent]
        pos = parent
    keys[pos] = key
    ids[pos] = ident
    return size + 1


@numba.njit(cache=True)
def _heap_pop(keys: FloatArray, ids: IntArray, size: int) -> int:
    """Remove the minimum (``ids[0]``) from the heap; returns the new size."""
    size -= 1
    key = keys[size]
    ident = ids[size]
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and keys[child + 1] < keys[child]:
            child += 1
        if keys[child] >= key:
            break
        keys[pos] = keys[child]
        ids[pos] = ids[child]
        pos = child
    if size > 0:
        keys[pos] = key
        ids[pos] = ident
    return size


@numba.njit(cache=True)
def _grown(array: npt.NDArray[Any], size: int, fill: float) -> npt.NDArray[Any]:
    """``array`` copied into one of ``size`` entries, the new ones set to ``fill``."""
    out = np.empty(size, dtype=array.dtype)
    # Loops, not slice assignments: cheapest_fit (three kinds of arrays grown) compiles in 2.3 s, not 5.5 s
    for i in range(array.shape[0]):
        out[i] = array[i]
    for i in range(array.shape[0], size):
        out[i] = fill
    return out


@numba.njit(cache=True)
def cheapest_fit(
    seq: IntArray, pack_size: int, n_open: int, attention: float, dense: float
) -> tuple[IntArray, int]:
    """Each length of ``seq`` (non-increasing) to the least loaded pack with room: ``(bin_of, n_bins)``.

    ``n_open`` packs exist from the start; more open only when no pack has room. The load a length ``L``
    adds to its pack is ``attention * L * L`` when ``attention > 0``, else ``dense * L``. The per-pack
    arrays start at ``n_open`` packs (plus a few) and double when a pack opens past them, so memory
    follows the packs, not the samples: a driver plans 10^9 lengths without 10^9-entry heaps.
    """
    n = seq.shape[0]
    capacity = max(n_open + n_open // 64 + 16, 1)
    room = np.full(capacity, pack_size, dtype=np.int64)
    load = np.zeros(capacity, dtype=np.float64)
    open_keys = np.zeros(capacity, dtype=np.float64)  # min-heap of fitting candidates by cost
    open_ids = np.zeros(capacity, dtype=np.int64)
    aside_keys = np.zeros(capacity, dtype=np.float64)  # min-heap of -room: packs too full for now
    aside_ids = np.zeros(capacity, dtype=np.int64)
    n_heap = 0
    for b in range(n_open):
        n_heap = _heap_push(open_keys, open_ids, n_heap, 0.0, b)
    n_aside = 0
    n_bins = n_open
    bin_of = np.empty(n, dtype=np.int64)
    for pos in range(n):
        need = seq[pos]
        while n_aside > 0 and -aside_keys[0] >= need:
            b = aside_ids[0]
            n_aside = _heap_pop(aside_keys, aside_ids, n_aside)
            n_heap = _heap_push(open_keys, open_ids, n_heap, load[b], b)
        while n_heap > 0 and room[open_ids[0]] < need:
            b = open_ids[0]
            n_heap = _heap_pop(open_keys, open_ids, n_heap)
            n_aside = _heap_push(aside_keys, aside_ids, n_aside, -float(room[b]), b)
        if n_heap > 0:
            b = open_ids[0]
            n_heap = _heap_pop(open_keys, open_ids, n_heap)
        else:
            b = n_bins
            n_bins += 1
            if n_bins > capacity:  # every heap holds at most n_bins packs
                capacity *= 2
                room = _grown(room, capacity, pack_size)
                load = _grown(load, capacity, 0.0)
                open_keys = _grown(open_keys, capacity, 0.0)
                open_ids = _grown(open_ids, capacity, 0)
                aside_keys = _grown(aside_keys, capacity, 0.0)
                aside_ids = _grown(aside_ids, capacity, 0)
        room[b] -= need
        value = float(need)
        load[b] += attention * value * value if attention > 0 else dense * value
        n_heap = _heap_push(open_keys, open_ids, n_heap, load[b], b)
        bin_of[pos] = b
    return bin_of, n_bins


def cost_spread(plan: PackPlan, model: CostModel) -> float:
    """Coefficient of variation (std / mean) of the packs' costs: what random dealing turns into imbalance."""
    dense, attention = pack_costs(plan, model)
    total = dense + attention
    mean = float(total.mean()) if total.size else 0.0
    return float(total.std()) / mean if mean > 0 else 0.0


def efficiency(plan: PackPlan) -> float:
    """Runtime tokens / (packs * pack size)."""
    return plan.total_length / (plan.num_packs * plan.pack_size) if plan.num_packs else 0.0


def balance_plan(reference: PackPlan, model: CostModel, tolerance: float = EFFICIENCY_TOLERANCE) -> PackPlan:
    """Re-pack ``reference`` (best_fit_decreasing's plan of the same lengths) so that pack costs under
    ``model`` are as even as possible.

    Keeps ``reference``'s number of packs and places sequences with :func:`cheapest_fit`, keyed on each
    sequence's attention cost (module docstring). The result's ``algorithm`` is ``"balanced"``; if it would
    lose more than ``tolerance`` efficiency against ``reference``, or spread costs more, ``reference`` is
    returned instead (its ``algorithm`` says so).
    """
    if reference.num_packs == 0:
        return reference
    array = reference.lengths
    pack_size = reference.pack_size
    order = np.argsort(-array, kind="stable")
    seq = np.ascontiguousarray(array[order])
    bin_of, n_bins = cheapest_fit(seq, pack_size, reference.num_packs, model.attention, model.dense)
    del seq
    positions = np.argsort(bin_of, kind="stable")
    offsets = np.zeros(n_bins + 1, dtype=np.int64)
    np.cumsum(np.bincount(bin_of, minlength=n_bins), out=offsets[1:])
    candidate = PackPlan(
        lengths=array,
        pack_size=pack_size,
        pack_offsets=offsets,
        items=order[positions],
        algorithm=BALANCED,
        seed=reference.seed,
    )
    if efficiency(candidate) < efficiency(reference) - tolerance:
        return reference
    if cost_spread(candidate, model) > cost_spread(reference, model):
        return reference
    return candidate
