"""Statistics of packed data, streamed block by block, and the check of a metadata entry against them.

Bridge's six metadata values (bridge-format §3) are computed over *runtime* lengths, ``stored - 1`` per
sequence
(alignment padding included), so they can be recomputed from the rows alone::

    rows: seq_start_id [0, 7] in 11 stored tokens -> stored [7, 4] -> runtime [6, 3] -> pack sum 9
    dataset_max_seqlen = max runtime length        max_samples_per_bin = max sequences in a pack
    packing_factor     = round(sequences / packs, 2)
    packing_efficiency = round(sum(pack sums) / packs / pack_size * 100, 2)
    min_packed_seqlen  = min pack sum              pack_size = the capacity

Memory is bounded by the longest sequence, not by the data: lengths are kept as histograms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridgepack.data.packed._reader import PackedBlock
from bridgepack.data.packset import MetadataEntry
from bridgepack.errors import DataError, where
from bridgepack.packing import BRIDGE_METADATA_KEYS, bridge_metadata_values

#: Keys Bridge rounds to two decimals; compared with this tolerance (the stored value is the rounded one).
_ROUNDED_KEYS = frozenset({"packing_factor", "packing_efficiency"})
_ROUND_TOLERANCE = 1e-6


def _add_counts(hist: np.ndarray, values: np.ndarray) -> np.ndarray:
    counts = np.bincount(values, minlength=hist.size)
    if counts.size > hist.size:
        counts[: hist.size] += hist
        return counts
    return hist + counts


@dataclass
class PackedStats:
    """What a pass over packed rows found; lengths are runtime lengths (stored - 1) unless named stored."""

    packs: int = 0
    sequences: int = 0
    stored_tokens: int = 0
    runtime_tokens: int = 0
    max_samples_per_bin: int = 0
    min_packed_seqlen: int | None = None
    max_packed_seqlen: int = 0
    #: ``sequences_per_pack[k]`` = number of packs holding k sequences.
    sequences_per_pack: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: ``length_counts[r]`` = number of sequences of runtime length r.
    length_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def dataset_max_seqlen(self) -> int:
        nonzero = np.flatnonzero(self.length_counts)
        return int(nonzero[-1]) if nonzero.size else 0

    def length_percentile(self, q: float) -> int:
        """The runtime length at percentile ``q`` (0-100; nearest rank, lower side)."""
        cumulative = np.cumsum(self.length_counts)
        if not cumulative.size or cumulative[-1] == 0:
            return 0
        rank = max(1, int(np.ceil(q / 100 * cumulative[-1])))
        return int(np.searchsorted(cumulative, rank))

    def add(self, block: PackedBlock, runtime: np.ndarray, pack_runtime: np.ndarray) -> None:
        """Count one block, given its sequences' and packs' runtime lengths
        (:class:`~bridgepack.data.packed.PackedScan` computes them once for every consumer)."""
        per_pack = block.sequences_per_row()
        self.packs += block.num_rows
        self.sequences += int(per_pack.sum())
        self.stored_tokens += int(runtime.sum()) + runtime.size
        self.runtime_tokens += int(pack_runtime.sum())
        self.max_samples_per_bin = max(self.max_samples_per_bin, int(per_pack.max(initial=0)))
        if block.num_rows:
            low = int(pack_runtime.min())
            known = self.min_packed_seqlen
            self.min_packed_seqlen = low if known is None else min(known, low)
            self.max_packed_seqlen = max(self.max_packed_seqlen, int(pack_runtime.max()))
        self.sequences_per_pack = _add_counts(self.sequences_per_pack, per_pack)
        self.length_counts = _add_counts(self.length_counts, np.maximum(runtime, 0))

    def efficiency(self, pack_size: int) -> float:
        """Runtime tokens over the capacity of all packs, in percent (Bridge's packing_efficiency)."""
        return self.runtime_tokens / self.packs / pack_size * 100 if self.packs and pack_size > 0 else 0.0

    def bridge_metadata(self, pack_size: int) -> dict[str, int | float]:
        """The six values Bridge would have written for these rows (bridge-format §3), in Bridge's key
        order."""
        return bridge_metadata_values(
            max_length=self.dataset_max_seqlen,
            max_per_pack=self.max_samples_per_bin,
            sequences=self.sequences,
            packs=self.packs,
            total_length=self.runtime_tokens,
            pack_size=pack_size,
            min_pack_sum=self.min_packed_seqlen or 0,
        )


def check_pack_capacity(block: PackedBlock, pack_size: int, pack_runtime: np.ndarray | None = None) -> None:
    """A :class:`DataError` naming the first pack whose runtime tokens (stored - 1 per sequence, bridge-format
    §2) exceed ``pack_size``; ``pack_runtime`` may be passed when the caller has it already."""
    if pack_runtime is None:
        pack_runtime = block.row_lengths() - block.sequences_per_row()
    over = np.flatnonzero(pack_runtime > pack_size)
    if over.size:
        r = int(over[0])
        raise DataError(
            f"{where(block.path, row=block.first_row + r)}: {pack_runtime[r]} runtime tokens exceed "
            f"pack_size {pack_size}"
        )


@dataclass(frozen=True)
class MetadataMismatch:
    """One key of a metadata entry that the rows contradict."""

    key: str
    stored: Any
    recomputed: Any


def compare_metadata(entry: MetadataEntry | Mapping[str, Any], stats: PackedStats) -> list[MetadataMismatch]:
    """Keys of a Bridge metadata entry whose value differs from what the rows give (empty: consistent)."""
    values = entry.bridge_values() if isinstance(entry, MetadataEntry) else entry
    expected = stats.bridge_metadata(int(values["pack_size"]))
    mismatches = []
    for key in BRIDGE_METADATA_KEYS:
        stored, recomputed = values[key], expected[key]
        if key in _ROUNDED_KEYS:
            same = abs(float(stored) - float(recomputed)) <= _ROUND_TOLERANCE
        else:
            same = float(stored) == float(recomputed)
        if not same:
            mismatches.append(MetadataMismatch(key, stored, recomputed))
    return mismatches
