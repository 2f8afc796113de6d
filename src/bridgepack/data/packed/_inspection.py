"""One checked pass over a packed set: every row invariant, the statistics, and the metadata entry
recomputed from the rows (what ``bridgepack inspect`` and :func:`bridgepack.inspect` report).

The pass streams block by block; a caller that needs more from the same pass (a progress bar, the sampler
simulation's pack costs) gets every block through ``on_block`` after it was validated.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from bridgepack._io import unreadable
from bridgepack.data.packed._reader import PackedBlock
from bridgepack.data.packed._recorded import RecordedCheck
from bridgepack.data.packed._scan import PackedScan
from bridgepack.data.packed._source import PackedSource
from bridgepack.data.packed._stats import MetadataMismatch, PackedStats, check_pack_capacity, compare_metadata
from bridgepack.data.packset import MetadataEntry, PackingMetadata, check_run_ids, find_metadata, packed_names
from bridgepack.data.samples.text import eos_disagreement, load_tokenizer, tokenizer_eos_id
from bridgepack.errors import DataError

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
class EosCheck:
    """The EOS id the metadata records for the split against a tokenizer's (``inspect --tokenizer``).

    Readers (``inspect --dump-batches``, ``train``, ``diff``) pad and mask with the recorded id, never one
    re-inferred from the rows; a pack whose recorded EOS is not the tokenizer's (one guessed from rows a
    chat template rendered, which end with the template's end token and a newline) is a ``mismatch``.
    ``skipped`` when there is nothing to compare: no recorded EOS, or a tokenizer without one.
    """

    tokenizer: str
    recorded: int | None
    recorded_source: str | None
    tokenizer_eos: int | None
    #: the one-line finding (:func:`bridgepack.data.samples.text.eos_disagreement`), ``None`` unless a
    #: mismatch
    message: str | None = None

    @property
    def status(self) -> str:
        if self.recorded is None or self.tokenizer_eos is None:
            return SKIPPED
        return MISMATCH if self.message is not None else CONSISTENT

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, **self.__dict__}


def check_recorded_eos(entry: MetadataEntry | None, tokenizer: str | os.PathLike[str]) -> EosCheck:
    """Compare the EOS id ``entry`` records with the tokenizer's at ``tokenizer`` (a local directory)."""
    directory = Path(tokenizer)
    eos = tokenizer_eos_id(directory)
    record = dict(entry.record) if entry is not None and entry.record is not None else {}
    source = record.get("eos_source")
    return EosCheck(
        tokenizer=os.fspath(tokenizer),
        recorded=entry.eos_id if entry is not None else None,
        recorded_source=source if isinstance(source, str) else None,
        tokenizer_eos=None if eos is None else int(eos),
        message=eos_disagreement(record, directory),
    )


@dataclass(frozen=True)
class Inspection:
    """What a checked pass over packed data found (:func:`inspect_packed`)."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    path: str
    files: list[str]
    pack_size: int | None
    stats: PackedStats
    metadata: MetadataCheck
    #: The metadata entry of this split, when there is one (the collator's settings come from it).
    metadata_entry: MetadataEntry | None = None
    #: Bridge's sampler simulated over DP ranks (:func:`bridgepack.inspect` with ``dp`` and ``gbs``).
    dp_imbalance: dict[str, Any] | None = None
    #: The recorded EOS against a tokenizer's (``inspect_packed(..., tokenizer=DIR)``).
    eos: EosCheck | None = None

    @property
    def ok(self) -> bool:
        """No metadata mismatch and no EOS mismatch (bad rows raise :class:`DataError` during the pass)."""
        return self.metadata.status != MISMATCH and (self.eos is None or self.eos.status != MISMATCH)

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
        """``bridgepack inspect --format json``'s document, ``schema_version`` first."""
        out = {
            "schema_version": self.SCHEMA_VERSION,
            "path": self.path,
            "files": self.files,
            **self.summary(),
        }
        if self.dp_imbalance is not None:
            out["dp_imbalance"] = self.dp_imbalance
        out["metadata"] = self.metadata.to_dict()
        if self.eos is not None:
            out["eos"] = self.eos.to_dict()
        return out


def inspect_packed(
    path: str | os.PathLike[str],
    *,
    metadata: str | os.PathLike[str] | None = None,
    on_packs: Callable[[int], None] | None = None,
    on_block: Callable[[PackedBlock], None] | None = None,
    tokenizer: str | os.PathLike[str] | None = None,
) -> Inspection:
    """Check packed data (Parquet file, glob or directory, or a legacy ``.npy``) and its metadata sidecar.

    ``metadata`` defaults to ``{N}_metadata.jsonl`` beside the data; with ``tokenizer`` (a local tokenizer
    directory) the EOS id the split's entry records is compared with the tokenizer's
    (:class:`EosCheck`). ``on_packs(n)`` hears the number of
    packs before the pass (a progress bar's total), ``on_block`` every block after it was validated. Raises
    :class:`InputError` when the data or an explicit ``metadata`` cannot be read, :class:`DataError` on the
    first row that breaks a bridge-format §3 invariant or exceeds the pack size, files of two runs, or a
    sidecar that names another pack size than the files.
    """
    spec = os.fspath(path)
    if tokenizer is not None:
        load_tokenizer(Path(tokenizer))  # an unreadable tokenizer is refused before the pass (cached)
    source = PackedSource(spec, strict=True)
    try:
        found = _inspect(source, metadata, on_packs, on_block)
    finally:
        source.close()
    return (
        found
        if tokenizer is None
        else replace(found, eos=check_recorded_eos(found.metadata_entry, tokenizer))
    )


def _inspect(
    source: PackedSource,
    metadata: str | os.PathLike[str] | None,
    on_packs: Callable[[int], None] | None,
    on_block: Callable[[PackedBlock], None] | None,
) -> Inspection:
    files = source.paths
    names = packed_names(files)
    if metadata is not None and not Path(metadata).exists():
        raise unreadable(metadata)
    meta_path = Path(metadata) if metadata is not None else find_metadata(files)
    sidecar = PackingMetadata.read(meta_path) if meta_path is not None else PackingMetadata()
    check_run_ids(files, meta_path, sidecar)
    picked = sidecar.pick(names.split)
    pack_size = int(picked[1].pack_size) if picked else names.pack_size
    if picked and names.pack_size is not None and names.pack_size != pack_size:
        raise DataError(
            f"{meta_path}: entry {picked[0]}: pack_size {pack_size} differs from the file name's "
            f"{names.pack_size}"
        )

    if on_packs is not None:
        on_packs(source.num_packs)
    scan = PackedScan()
    with RecordedCheck(source.location, files, meta_path, sidecar) as recorded:
        for block in source.blocks(hashed=recorded.active):  # validated strictly, hashed in that pass
            facts = scan.add(block)
            recorded.add(block)
            if pack_size is not None:
                check_pack_capacity(block, pack_size, facts.pack_runtime)
            if on_block is not None:
                on_block(block)
        recorded.finish()
    stats = scan.stats
    check: MetadataCheck
    if meta_path is None:
        check = MetadataCheck(SKIPPED, reason="no metadata sidecar found (pass --metadata)")
    elif picked is None:
        check = MetadataCheck(SKIPPED, str(meta_path), reason=f"no entry of {meta_path} names this split")
    else:
        mismatches = compare_metadata(picked[1], stats)
        check = MetadataCheck(MISMATCH if mismatches else CONSISTENT, str(meta_path), picked[0], mismatches)
    return Inspection(
        path=source.location,
        files=list(files),
        pack_size=pack_size,
        stats=stats,
        metadata=check,
        metadata_entry=picked[1] if picked else None,
    )
