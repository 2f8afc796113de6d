"""Where every token of a packed ``datasets`` column comes from: row lengths in, fragments out.

A *fragment* is a run of one input row, ``(row, skip, length)``: tokens ``skip .. skip + length`` of that row.
A pack is a run of consecutive fragments (``pack_offsets``, CSR). The three strategies of TRL's
``pack_dataset`` are three ways of cutting rows into fragments, on lengths only (no token is touched here)::

    seq_length 4, rows of lengths [5, 2, 3, 1]
    bfd        fragments (0,0,4) (2,0,3) (3,0,1) (1,0,2)       packs [4] [3, 1] [2]   row 0 loses 1 token
    bfd_split  fragments (0,0,4) (2,0,3) (0,4,1) (1,0,2) (3,0,1)   packs [4] [3, 1] [2, 1]
    wrapped    fragments (0,0,4) (0,4,1) (1,0,2) (2,0,1) (2,1,2) (3,0,1)   packs [4] [1, 2, 1] [2, 1]

``bfd`` and ``bfd_split`` place the fragments with bridgepack's best-fit-decreasing planner over the *whole*
dataset (TRL plans each ``map`` batch of 1,000 rows apart); ``wrapped`` cuts the concatenation of all rows
every ``seq_length`` tokens (TRL restarts at each batch, leaving a short pack per batch). Empty rows hold no
token and appear in no fragment, as in TRL.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bridgepack.packing import BEST_FIT_DECREASING, pack_lengths

IntArray = npt.NDArray[np.int64]

#: TRL 1.16's strategies, in its order.
STRATEGIES = ("bfd", "bfd_split", "wrapped")


@dataclass(frozen=True)
class Fragments:
    """The packing of a dataset as fragments of rows; pack ``p`` is fragments
    ``pack_offsets[p] .. pack_offsets[p + 1]``, in stored order. All arrays int64."""

    rows: IntArray
    skips: IntArray
    lengths: IntArray
    pack_offsets: IntArray

    @property
    def num_packs(self) -> int:
        return int(self.pack_offsets.shape[0]) - 1


def plan_fragments(row_lengths: IntArray, seq_length: int, strategy: str) -> Fragments:
    """Cut rows of ``row_lengths`` tokens into fragments and packs of at most ``seq_length`` tokens."""
    if strategy == "wrapped":
        return _wrapped(row_lengths, seq_length)
    rows = np.flatnonzero(row_lengths > 0)
    lengths = row_lengths[rows]
    if strategy == "bfd":
        skips = np.zeros(rows.shape[0], dtype=np.int64)
        lengths = np.minimum(lengths, seq_length)
    else:  # bfd_split: full seq_length pieces, the rest last
        pieces = -(-lengths // seq_length)
        first = np.repeat(np.cumsum(pieces) - pieces, pieces)
        skips = (np.arange(first.shape[0], dtype=np.int64) - first) * seq_length
        rows = np.repeat(rows, pieces)
        lengths = np.minimum(np.repeat(lengths, pieces) - skips, seq_length)
    plan = pack_lengths(lengths, seq_length, algorithm=BEST_FIT_DECREASING)
    items = plan.items
    return Fragments(rows[items], skips[items], lengths[items], plan.pack_offsets)


def _wrapped(row_lengths: IntArray, seq_length: int) -> Fragments:
    """Cut all rows, end to end, every ``seq_length`` tokens; a fragment ends at a row end or a cut."""
    total = int(row_lengths.sum())
    rows = np.flatnonzero(row_lengths > 0)
    row_starts = np.cumsum(row_lengths[rows]) - row_lengths[rows]
    cuts = np.arange(0, total, seq_length, dtype=np.int64)
    starts = np.union1d(row_starts, cuts)  # sorted, unique: every fragment start
    ends = np.append(starts[1:], total)
    owner = np.searchsorted(row_starts, starts, side="right") - 1
    pack_offsets = np.append(np.searchsorted(starts, cuts), starts.shape[0]).astype(np.int64)
    return Fragments(rows[owner], starts - row_starts[owner], ends - starts, pack_offsets)
