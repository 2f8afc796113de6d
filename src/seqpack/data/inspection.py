"""One checked pass over a packed set: every row invariant, the statistics, and the metadata entry
recomputed from the rows (what ``seqpack inspect`` and :func:`seqpack.inspect` report).

The pass streams block by block; a caller that needs more from the same pass (a progress bar, the sampler
simulation's pack costs) gets every block through ``on_block`` after it was validated.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from seqpack._io import unreadable
from seqpack.data._legacy_npy import read_legacy_npy
from seqpack.data.metadata import find_metadata, packed_names, pick_entry, read_metadata
from seqpack.data.packed import PackedBlock, PackedReader
from seqpack.data.packed_stats import MetadataMismatch, PackedStats, collect_stats, compare_metadata
from seqpack.data.runs import check_run_ids
from seqpack.errors import DataError

#: Percentiles of the runtime sequence length in the report.
PERCENTILES = (50, 90, 99)
CONSISTENT, MISMATCH, SKIPPED = "consistent", "mismatch", "skipped"


@dataclass(frozen=True)
class MetadataCheck:
    """The metadata entry of the inspected split against the rows: ``consistent``, ``mismatch`` (with the
    keys that differ) or ``skipped`` (with the reason: no sidecar, or no entry for this split)."""

    status: str
    path: str | None = None
    entry: int | None = None
    mismatches: list[MetadataMismatch] = field(default_factory=list)
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.status == SKIPPED:
            out: dict[str, Any] = {"status": self.status, "reason": self.reason}
            return (
                out
                if self.path is None
                else {"status": self.status, "path": self.path, "reason": self.reason}
            )
        return {
            "status": self.status,
            "path": self.path,
            "entry": self.entry,
            "mismatches": [m.__dict__ for m in self.mismatches],
        }


@dataclass(frozen=True)
class Inspection:
    """What a checked pass over packed data found (:func:`inspect_packed`)."""

    path: str
    files: list[str]
    pack_size: int | None
    stats: PackedStats
    metadata: MetadataCheck
    #: The metadata entry of this split, when there is one (the collator's settings come from it).
    metadata_entry: Mapping[str, Any] | None = None
    #: Bridge's sampler simulated over DP ranks (:func:`seqpack.inspect` with ``dp`` and ``gbs``).
    dp_imbalance: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """No metadata mismatch (bad rows raise :class:`DataError` during the pass)."""
        return self.metadata.status != MISMATCH

    def summary(self) -> dict[str, Any]:
        """Packs, sequences, tokens, efficiency and length statistics (runtime = stored - 1 per sequence)."""
        stats, pack_size = self.stats, self.pack_size
        hist = {str(k): int(v) for k, v in enumerate(stats.sequences_per_pack) if v}
        lengths = {f"p{q}": stats.length_percentile(q) for q in PERCENTILES}
        nonzero = np.flatnonzero(stats.length_counts)
        return {
            "packs": stats.packs,
            "sequences": stats.sequences,
            "stored_tokens": stats.stored_tokens,
            "runtime_tokens": stats.runtime_tokens,
            "pack_size": pack_size,
            "efficiency_percent": round(stats.efficiency(pack_size), 2) if pack_size else None,
            "sequences_per_pack": hist,
            "runtime_length": {
                "min": int(nonzero[0]) if nonzero.size else 0,
                **lengths,
                "max": stats.dataset_max_seqlen,
            },
            "packed_runtime_tokens": {"min": stats.min_packed_seqlen or 0, "max": stats.max_packed_seqlen},
        }

    def to_dict(self) -> dict[str, Any]:
        """``seqpack inspect --format json``'s document (without its ``schema_version``)."""
        out = {"path": self.path, "files": self.files, **self.summary()}
        if self.dp_imbalance is not None:
            out["dp_imbalance"] = self.dp_imbalance
        out["metadata"] = self.metadata.to_dict()
        return out


def _blocks(path: str) -> tuple[list[str], int, Iterable[PackedBlock]]:
    """The files, the number of packs (from the Parquet footers) and the blocks of a packed set."""
    if path.lower().endswith(".npy"):
        block = read_legacy_npy(path)
        return [path], block.num_rows, [block]
    reader = PackedReader(path)
    return reader.paths, len(reader), reader.iter_blocks()


def inspect_packed(
    path: str | os.PathLike[str],
    *,
    metadata: str | os.PathLike[str] | None = None,
    on_packs: Callable[[int], None] | None = None,
    on_block: Callable[[PackedBlock], None] | None = None,
) -> Inspection:
    """Check packed data (Parquet file, glob or directory, or a legacy ``.npy``) and its metadata sidecar.

    ``metadata`` defaults to ``{N}_metadata.jsonl`` beside the data. ``on_packs(n)`` hears the number of
    packs before the pass (a progress bar's total), ``on_block`` every block after it was validated. Raises
    :class:`InputError` when the data or an explicit ``metadata`` cannot be read, :class:`DataError` on the
    first row that breaks a spec §3 invariant or exceeds the pack size, files of two runs, or a sidecar that
    names another pack size than the files.
    """
    spec = os.fspath(path)
    files, packs, blocks = _blocks(spec)
    names = packed_names(files)
    if metadata is not None and not Path(metadata).exists():
        raise unreadable(metadata)
    meta_path = Path(metadata) if metadata is not None else find_metadata(files)
    entries = read_metadata(meta_path) if meta_path is not None else []
    check_run_ids(files, meta_path, entries)
    picked = pick_entry(entries, names.split) if entries else None
    pack_size = int(picked[1]["pack_size"]) if picked else names.pack_size
    if picked and names.pack_size is not None and names.pack_size != pack_size:
        raise DataError(
            f"{meta_path}: entry {picked[0]}: pack_size {pack_size} differs from the file name's "
            f"{names.pack_size}"
        )

    if on_packs is not None:
        on_packs(packs)

    def observed(source: Iterable[PackedBlock]) -> Iterator[PackedBlock]:
        for block in source:
            yield block  # collect_stats validates the block before asking for the next one
            if on_block is not None:
                on_block(block)

    stats = collect_stats(observed(blocks), pack_size=pack_size)
    check: MetadataCheck
    if meta_path is None:
        check = MetadataCheck(SKIPPED, reason="no metadata sidecar found (pass --metadata)")
    elif picked is None:
        check = MetadataCheck(SKIPPED, str(meta_path), reason=f"no entry of {meta_path} names this split")
    else:
        mismatches = compare_metadata(picked[1], stats)
        check = MetadataCheck(MISMATCH if mismatches else CONSISTENT, str(meta_path), picked[0], mismatches)
    return Inspection(
        path=spec,
        files=list(files),
        pack_size=pack_size,
        stats=stats,
        metadata=check,
        metadata_entry=picked[1] if picked else None,
    )
