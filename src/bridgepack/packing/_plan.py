"""``PackPlan``: the result of packing, pure integer arrays in CSR form, plus Bridge's statistics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from bridgepack.errors import DataError

IntArray = npt.NDArray[np.int64]

# Bridge's pack metadata keys, in the order ``create_packing_strategy`` writes them (bridge-format §3).
BRIDGE_METADATA_KEYS = (
    "dataset_max_seqlen",
    "max_samples_per_bin",
    "packing_factor",
    "packing_efficiency",
    "pack_size",
    "min_packed_seqlen",
)
# Bridge rounds packing_factor and packing_efficiency with round(x, 2) (bridge-format §3).
BRIDGE_METADATA_DIGITS = 2


def _frozen(array: npt.ArrayLike) -> IntArray:
    out = np.array(array, dtype=np.int64)  # always a private copy
    out.flags.writeable = False
    return out


def packing_efficiency(total_length: int, packs: int, pack_size: int) -> float:
    """Bridge's ``packing_efficiency``: runtime tokens over packs x pack size, in percent, rounded as Bridge
    rounds it (0.0 for no packs)."""
    if not packs or pack_size <= 0:
        return 0.0
    return round(total_length / packs / pack_size * 100, BRIDGE_METADATA_DIGITS)


def bridge_metadata_values(
    *,
    max_length: int,
    max_per_pack: int,
    sequences: int,
    packs: int,
    total_length: int,
    pack_size: int,
    min_pack_sum: int,
) -> dict[str, Any]:
    """Bridge's six metadata values (bridge-format §3) in its key order, from the counts of a packing: the one
    formula behind the plan's values (what ``pack`` writes) and the rows' (what ``inspect`` recomputes).

    Python ints and the same float operations as Bridge's ``create_packing_strategy``, so the rounded
    values agree bit for bit; ``packing_factor`` and ``packing_efficiency`` are 0.0 for no packs.
    """
    values = (
        max_length,
        max_per_pack,
        round(sequences / packs, BRIDGE_METADATA_DIGITS) if packs else 0.0,
        packing_efficiency(total_length, packs, pack_size),
        pack_size,
        min_pack_sum,
    )
    return dict(zip(BRIDGE_METADATA_KEYS, values, strict=True))


@dataclass(frozen=True, eq=False)
class PackPlan:
    """Which items go into which pack, in which order.

    ``items[pack_offsets[p]:pack_offsets[p+1]]`` are the indices (into ``lengths``) of pack ``p``'s
    sequences in the order the pack stores them. Runtime lengths 4,2,6,3,2,5, pack 10, Bridge's
    ``first_fit_shuffle`` with seed 0 (bridge-format §2)::

        lengths       [4, 2, 6, 3, 2, 5]        index 0..5
        pack_offsets  [0, 2, 5, 6]
        items         [2, 3 | 4, 0, 1 | 5]      -> packs of lengths [6, 3], [2, 4, 2], [5]
        pack_sums     [9, 8, 5]                 lower_bound = ceil(22 / 10) = 3

    All arrays are int64 and read-only.
    """

    lengths: IntArray
    pack_size: int
    pack_offsets: IntArray
    items: IntArray
    algorithm: str
    seed: int
    pack_sums: IntArray = field(init=False)

    def __post_init__(self) -> None:
        for name in ("lengths", "pack_offsets", "items"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        sums: npt.ArrayLike = (
            np.add.reduceat(self.lengths[self.items], self.pack_offsets[:-1]) if self.num_packs else []
        )
        object.__setattr__(self, "pack_sums", _frozen(sums))

    @property
    def num_packs(self) -> int:
        return int(self.pack_offsets.shape[0]) - 1

    @property
    def num_items(self) -> int:
        return int(self.items.shape[0])

    @property
    def total_length(self) -> int:
        """Sum of all runtime lengths (the capacity actually used)."""
        return int(self.lengths.sum())

    @property
    def lower_bound(self) -> int:
        """``ceil(sum(lengths) / pack_size)``: no packing can use fewer packs."""
        return -(-self.total_length // self.pack_size)

    @property
    def sequences_per_pack(self) -> IntArray:
        """Number of sequences in each pack."""
        return np.diff(self.pack_offsets)

    def pack(self, index: int) -> IntArray:
        """Item indices of pack ``index``, in stored order."""
        return self.items[self.pack_offsets[index] : self.pack_offsets[index + 1]]

    def to_lists(self) -> list[list[int]]:
        """Item indices per pack as Python lists (for small plans, tests and debugging)."""
        return [self.pack(p).tolist() for p in range(self.num_packs)]

    def bridge_metadata(self) -> dict[str, Any]:
        """The six statistics Bridge's ``create_packing_strategy`` returns, same keys, order and rounding.

        Computed with Python ints and the same float operations as Bridge, so the rounded values agree
        bit for bit. ``dataset_max_seqlen`` is the largest length *given* (after any CP pre-padding).
        """
        if self.num_packs == 0:
            raise DataError("an empty plan has no Bridge metadata: there is nothing to pack")
        return bridge_metadata_values(
            max_length=int(self.lengths.max()),
            max_per_pack=int(self.sequences_per_pack.max()),
            sequences=self.num_items,
            packs=self.num_packs,
            total_length=self.total_length,
            pack_size=int(self.pack_size),
            min_pack_sum=int(self.pack_sums.min()),
        )

    def summary(self) -> dict[str, Any]:
        """bridgepack's own view: packs, the lower bound, efficiency without rounding."""
        return {
            "algorithm": self.algorithm,
            "seed": self.seed,
            "pack_size": self.pack_size,
            "items": self.num_items,
            "packs": self.num_packs,
            "lower_bound": self.lower_bound,
            "packs_above_lower_bound": self.num_packs - self.lower_bound,
            "efficiency": self.total_length / (self.num_packs * self.pack_size) if self.num_packs else 0.0,
        }
