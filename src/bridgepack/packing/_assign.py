"""``pack_lengths``: runtime lengths in, :class:`PackPlan` out.

Two families of algorithms:

* **Bridge's** ``first_fit_shuffle`` (its default) and ``first_fit_decreasing`` reproduce Megatron-Bridge
  0.6.2's offline path (bridge-format §2) item for item: for the same examples and seed, every pack holds the
  same
  examples in the same order. Bridge draws from NumPy's legacy global RNG after ``np.random.seed(seed)``::

      create_hist            buckets by length, input order inside a bucket (no RNG)
      create_packing_strategy  first_fit_shuffle: shuffle(ascending lengths)   <- draw 1
                             first_fit_decreasing: lengths descending          (no draw)
                             lowest-index first fit
      fill_packing_strategy  for each length L with items, ascending: permutation(n_L)  <- draws 2..
                             walk bins in order; each slot of length L pops the last left of bucket L

  We replay exactly that call sequence on a private ``np.random.RandomState(seed)`` (the same Mersenne
  Twister stream; global NumPy state is never touched) and do the rest in numba kernels.
* bridgepack's ``best_fit_decreasing``: lengths descending (ties in input order), each into the fullest pack
  that still holds it. Deterministic; it draws no random numbers, so ``seed`` only travels along in the plan.
* bridgepack's ``balanced`` (``bridgepack pack``'s default): best_fit_decreasing's number of packs, with pack
  costs under a :class:`CostModel` evened out (``_balance``); best_fit_decreasing's packs when balancing
  would cost more than 0.1 point of efficiency.

Callers that drop samples first (Bridge drops ``r > max_seq_length`` in ``create_hist``) pass the kept
lengths *in input order* and map back with ``kept_index[plan.items]``; the Bridge order is preserved
because buckets keep input order.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridgepack.errors import DataError, UsageError
from bridgepack.packing._algorithms import (
    ALGORITHMS,
    BALANCED,
    BEST_FIT_DECREASING,
    BRIDGE_DEFAULT_ALGORITHM,
    FIRST_FIT_SHUFFLE,
)
from bridgepack.packing._balance import EFFICIENCY_TOLERANCE, balance_plan
from bridgepack.packing._cost import CostModel
from bridgepack.packing._kernels import best_fit, fill_like_bridge, first_fit, group_by_bin, order_by_length
from bridgepack.packing._plan import PackPlan

IntArray = npt.NDArray[np.int64]


def _validated(lengths: npt.ArrayLike, pack_size: int) -> IntArray:
    if isinstance(pack_size, bool) or not isinstance(pack_size, (int, np.integer)) or pack_size <= 0:
        raise UsageError(f"pack size must be a positive integer, got {pack_size!r}")
    array = np.asarray(lengths)
    if array.ndim != 1:
        raise UsageError(f"lengths must be a 1-D array, got shape {array.shape}")
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(array.dtype, np.integer):
        raise UsageError(f"lengths must be integers, got dtype {array.dtype}")
    array = array.astype(np.int64, copy=False)
    bad = np.flatnonzero((array < 0) | (array > pack_size))
    if bad.size:
        i = int(bad[0])
        what = "negative" if array[i] < 0 else f"longer than the pack size {pack_size}"
        raise DataError(
            f"lengths[{i}] = {int(array[i])} is {what} ({bad.size} such item(s)); reject such samples first"
        )
    return np.ascontiguousarray(array)


def _bridge_order(lengths: IntArray, pack_size: int, algorithm: str, seed: int) -> tuple[IntArray, IntArray]:
    """Bridge 0.6.2's packs for ``lengths`` (see the module docstring): ``(pack_offsets, items)``."""
    rng = np.random.RandomState(seed)  # the stream np.random.seed(seed) gives the legacy global RNG
    order, counts = order_by_length(lengths, False)
    seq = lengths[order]  # Bridge's expanded ascending length list
    if algorithm == FIRST_FIT_SHUFFLE:
        rng.shuffle(seq)  # same Fisher-Yates draws as np.random.shuffle on Bridge's Python list
    else:
        seq = np.ascontiguousarray(seq[::-1])
    bin_of, n_bins = first_fit(seq, pack_size)
    offsets, positions = group_by_bin(bin_of, n_bins)
    perms = np.empty_like(order)
    start = 0
    for length in np.flatnonzero(counts):  # ascending, as fill_packing_strategy draws them
        n = int(counts[length])
        perms[start : start + n] = rng.permutation(n)
        start += n
    return offsets, fill_like_bridge(seq, positions, order, counts, perms)


def _best_fit_decreasing(lengths: IntArray, pack_size: int) -> tuple[IntArray, IntArray]:
    order, _ = order_by_length(lengths, True)
    bin_of, n_bins = best_fit(lengths[order], pack_size)
    offsets, positions = group_by_bin(bin_of, n_bins)
    return offsets, order[positions]


def pack_lengths(
    lengths: npt.ArrayLike,
    pack_size: int,
    algorithm: str = BRIDGE_DEFAULT_ALGORITHM,
    seed: int = 0,
    cost: CostModel | None = None,
) -> PackPlan:
    """Pack items of the given runtime lengths (Bridge's ``r = len(input_ids) - 1``) into packs of
    ``pack_size`` runtime tokens.

    Every length must be in ``[0, pack_size]`` (``DataError`` otherwise: reject long samples before).
    Empty input gives an empty plan. ``algorithm`` is one of :data:`ALGORITHMS`; ``cost`` is the cost model
    ``balanced`` evens out (the 7B-like :meth:`CostModel.default` when ``None``; other algorithms take none).

    To reproduce Bridge when samples were dropped first (its ``r > max_seq_length`` rule), pass the kept
    lengths in input order and map the plan back: ``kept = np.flatnonzero(r <= max_seq_length)``,
    ``plan = pack_lengths(r[kept], ...)``, original indices ``kept[plan.items]``.

    >>> pack_lengths([5, 3, 1, 1, 1], 10, algorithm="balanced").to_lists()
    [[0], [1, 2, 3, 4]]
    """
    if algorithm not in ALGORITHMS:
        raise UsageError(f"unknown packing algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise UsageError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    if cost is not None and algorithm != BALANCED:
        raise UsageError(f"a cost model only applies to the {BALANCED!r} algorithm, not {algorithm!r}")
    if algorithm == BALANCED:
        return balanced_pack(lengths, pack_size, cost or CostModel.default(), seed=seed)
    array = _validated(lengths, pack_size)
    if array.size == 0:
        offsets, items = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    elif algorithm == BEST_FIT_DECREASING:
        offsets, items = _best_fit_decreasing(array, int(pack_size))
    else:
        offsets, items = _bridge_order(array, int(pack_size), algorithm, int(seed))
    return PackPlan(
        lengths=array,
        pack_size=int(pack_size),
        pack_offsets=offsets,
        items=items,
        algorithm=algorithm,
        seed=int(seed),
    )


def balanced_pack(
    lengths: npt.ArrayLike,
    pack_size: int,
    model: CostModel,
    tolerance: float = EFFICIENCY_TOLERANCE,
    seed: int = 0,
) -> PackPlan:
    """``pack_lengths(..., algorithm="balanced", cost=model)`` with the efficiency ``tolerance`` (a fraction:
    0.001 = 0.1 points) below which best_fit_decreasing's packs are kept instead."""
    reference = pack_lengths(lengths, pack_size, algorithm=BEST_FIT_DECREASING, seed=seed)
    return balance_plan(reference, model, tolerance)
