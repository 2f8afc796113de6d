"""Numba kernels of the packing core: they see only int64 arrays of lengths, never tokens.

Three jobs, each O(n log n) or better:

* :func:`order_by_length` -- a stable counting sort of item indices by length, O(n + longest length)
  (sized by the data, never by the pack size: two short items in packs of 10^8 tokens allocate a few
  bytes); ascending it *is* Bridge's histogram ``create_hist`` (one bucket per length, items in input
  order).
* :func:`first_fit` / :func:`best_fit` -- assign each item of a sequence of lengths to a bin.
* :func:`group_by_bin` and :func:`fill_like_bridge` -- turn "bin of each position" into the CSR plan
  (``pack_offsets``, ``items``).

Both fits keep a max segment tree in a flat array (``tree[1]`` is the root, node ``k`` has children
``2k`` and ``2k+1``, leaves start at ``size``, a power of two)::

                 [7]            first fit, pack 10, remaining capacities of bins 0..2 = 4, 7, 1
            [7]       [1]       (leaf 3 is an unopened bin: -1, so it never fits anything)
          [4] [7]   [1] [-1]    need 5: root 7 >= 5 -> left 7 >= 5 -> leaf 0 is 4 < 5 -> leaf 1 = bin 1
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


@numba.njit(cache=True)
def _tree_size(n: int) -> int:
    """Smallest power of two >= ``max(n, 1)``: the number of leaves of a segment tree over ``n`` slots."""
    size = 1
    while size < n:
        size *= 2
    return size


@numba.njit(cache=True)
def _tree_set(tree: IntArray, size: int, leaf: int, value: int) -> None:
    """Set one leaf and restore the max invariant on its path to the root (O(log size)).

    Stops early once a node's max is unchanged: nothing above it can change either.
    """
    node = leaf + size
    tree[node] = value
    node >>= 1
    while node >= 1:
        left = tree[2 * node]
        right = tree[2 * node + 1]
        best = left if left >= right else right
        if tree[node] == best:
            break
        tree[node] = best
        node >>= 1


@numba.njit(cache=True)
def order_by_length(lengths: IntArray, descending: bool) -> tuple[IntArray, IntArray]:
    """Stable counting sort: item indices ordered by length, ties in input order; also the histogram.

    Returns ``(order, counts)`` with ``counts[L]`` the number of items of length ``L`` (0..longest).
    Ascending, ``order`` lists Bridge's ``create_hist`` buckets one after another: lengths 3,1,3,0 ->
    order [3, 1, 0, 2] (bucket 0: [3], bucket 1: [1], bucket 3: [0, 2]).
    """
    max_length = 0
    for length in lengths:
        max_length = max(max_length, length)
    counts = np.zeros(max_length + 1, dtype=np.int64)
    for length in lengths:
        counts[length] += 1
    starts = np.empty(max_length + 1, dtype=np.int64)
    total = 0
    if descending:
        for length in range(max_length, -1, -1):
            starts[length] = total
            total += counts[length]
    else:
        for length in range(max_length + 1):
            starts[length] = total
            total += counts[length]
    order = np.empty(lengths.shape[0], dtype=np.int64)
    for i in range(lengths.shape[0]):
        length = lengths[i]
        order[starts[length]] = i
        starts[length] += 1
    return order, counts


@numba.njit(cache=True)
def first_fit(seq: IntArray, pack_size: int) -> tuple[IntArray, int]:
    """Lowest-index first fit over ``seq`` (lengths in the order they arrive): ``(bin_of_position, n_bins)``.

    Each length goes to the lowest-index open bin whose remaining capacity is >= the length, else opens a
    new bin -- the rule of Bridge's ``first_fit`` (bridge-format §2), with its segment tree in a flat array
    (unopened bins hold -1 so that even a zero length never lands in one).

    The tree needs a leaf per bin that can ever open: at most ``2 * sum // pack_size + 1``, because a
    bin is opened only by an item that fits in no earlier bin, so the loads of any two bins sum to more
    than ``pack_size`` (at most one bin is half full or less). A smaller tree stays in cache.
    """
    n = seq.shape[0]
    max_bins = 2 * seq.sum() // pack_size + 1
    size = _tree_size(min(n, max_bins))
    tree = np.full(2 * size, -1, dtype=np.int64)
    bin_of = np.empty(n, dtype=np.int64)
    n_bins = 0
    for pos in range(n):
        need = seq[pos]
        if tree[1] < need:
            bin_id = n_bins
            n_bins += 1
            _tree_set(tree, size, bin_id, pack_size - need)
        else:
            node = 1
            while node < size:
                node = 2 * node if tree[2 * node] >= need else 2 * node + 1
            bin_id = node - size
            _tree_set(tree, size, bin_id, tree[node] - need)
        bin_of[pos] = bin_id
    return bin_of, n_bins


@numba.njit(cache=True)
def _first_flagged_at_or_after(tree: IntArray, size: int, lo: int) -> int:
    """Smallest leaf index >= ``lo`` whose flag is set (tree of 0/1 flags, max-combined), or -1."""
    node = lo + size
    if tree[node] > 0:
        return lo
    while True:
        while node & 1:  # a right child: nothing further right at this level, climb
            node >>= 1
            if node <= 1:
                return -1
        node += 1  # the right sibling covers the next block of leaves
        if tree[node] > 0:
            break
    while node < size:  # descend to the leftmost flagged leaf of that block
        node = 2 * node if tree[2 * node] > 0 else 2 * node + 1
    return node - size


@numba.njit(cache=True)
def best_fit(seq: IntArray, pack_size: int) -> tuple[IntArray, int]:
    """Best fit over ``seq``: each length goes to an open bin with the *smallest* remaining capacity that
    still holds it, else a new bin. Returns ``(bin_of_position, n_bins)``.

    Bins are kept in one stack per remaining capacity (``head[c]`` -> ``next_bin[b]`` -> ...) and a
    segment tree of "capacity c has bins" flags finds the smallest capacity >= the length in
    O(log longest). Among bins of equal capacity the most recently touched one is taken (any choice gives
    the same bin count: such bins are interchangeable).

    Capacities above the longest length ``M`` share one slot, ``M + 1``, so memory grows with the data,
    not with ``pack_size``. That slot never holds two bins: a bin with more than ``M`` left takes any item,
    so while one exists no new bin opens. Its true capacity lives in ``room[b]``::

        pack 100, seq 9 8 3 (M = 9): 9 -> bin 0 (room 91, slot 10); 8 -> slot 10 is the only fit -> bin 0
        (room 83, slot 10); 3 -> bin 0 (room 80): one bin, capacity slots 0..10 instead of 0..100
    """
    n = seq.shape[0]
    longest = 0
    for need in seq:
        longest = max(longest, need)
    big = longest + 1  # the shared slot of every capacity > longest
    size = _tree_size(big + 1)
    flags = np.zeros(2 * size, dtype=np.int64)
    head = np.full(big + 1, -1, dtype=np.int64)
    count = np.zeros(big + 1, dtype=np.int64)
    room = np.empty(n, dtype=np.int64)
    next_bin = np.empty(n, dtype=np.int64)
    bin_of = np.empty(n, dtype=np.int64)
    n_bins = 0
    for pos in range(n):
        need = seq[pos]
        slot = _first_flagged_at_or_after(flags, size, need)
        if slot < 0:
            bin_id = n_bins
            n_bins += 1
            room[bin_id] = pack_size
        else:
            bin_id = head[slot]
            head[slot] = next_bin[bin_id]
            count[slot] -= 1
            if count[slot] == 0:
                _tree_set(flags, size, slot, 0)
        room[bin_id] -= need
        new_slot = min(room[bin_id], big)
        next_bin[bin_id] = head[new_slot]
        head[new_slot] = bin_id
        count[new_slot] += 1
        if count[new_slot] == 1:
            _tree_set(flags, size, new_slot, 1)
        bin_of[pos] = bin_id
    return bin_of, n_bins


@numba.njit(cache=True)
def group_by_bin(bin_of: IntArray, n_bins: int) -> tuple[IntArray, IntArray]:
    """CSR of positions by bin, positions in arrival order inside each bin: ``(offsets, positions)``.

    bin_of [0, 1, 0, 2] -> offsets [0, 2, 3, 4], positions [0, 2, 1, 3].
    """
    offsets = np.zeros(n_bins + 1, dtype=np.int64)
    for b in bin_of:
        offsets[b + 1] += 1
    for b in range(n_bins):
        offsets[b + 1] += offsets[b]
    cursor = offsets[:-1].copy()
    positions = np.empty(bin_of.shape[0], dtype=np.int64)
    for pos in range(bin_of.shape[0]):
        b = bin_of[pos]
        positions[cursor[b]] = pos
        cursor[b] += 1
    return offsets, positions


@numba.njit(cache=True)
def fill_like_bridge(
    seq: IntArray, positions: IntArray, order: IntArray, counts: IntArray, perms: IntArray
) -> IntArray:
    """Which example fills each slot, the way Bridge's ``fill_packing_strategy`` picks it (bridge-format §2).

    ``order``/``counts`` are the ascending buckets of :func:`order_by_length`; ``perms`` holds, bucket by
    bucket, the permutation Bridge draws for that bucket. Bridge reorders bucket ``L`` by its permutation
    and then, walking the bins in order, *pops the last* remaining item of length ``L`` for each slot of
    length ``L``: the j-th such slot gets ``bucket[perm[n_L - 1 - j]]``.
    """
    starts = np.empty(counts.shape[0], dtype=np.int64)
    total = 0
    for length in range(counts.shape[0]):
        starts[length] = total
        total += counts[length]
    taken = np.zeros(counts.shape[0], dtype=np.int64)
    items = np.empty(positions.shape[0], dtype=np.int64)
    for slot in range(positions.shape[0]):
        length = seq[positions[slot]]
        j = taken[length]
        taken[length] = j + 1
        base = starts[length]
        items[slot] = order[base + perms[base + counts[length] - 1 - j]]
    return items
