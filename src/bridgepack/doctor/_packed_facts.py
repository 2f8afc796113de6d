"""Facts about packed data on disk that the data-aware rules compare with the config (bridge-format §3).

The files are read through the shared readers of :mod:`bridgepack.data`:

* the Parquet files of a packed split (a file, a glob or a directory, by Bridge's rules), one row group at a
  time, every row invariant checked;
* the metadata sidecar ``{N}_metadata.jsonl`` (one JSON *array*; bridgepack's record under ``"bridgepack"``).

Sequence lengths come straight from the Arrow list offsets, without a Python loop per token or sequence,
in the one scan :class:`~bridgepack.data.packed._reader.PackedScan` that ``inspect`` and the trainer share (it
also counts EOS inputs inside trained spans, which a known-defect trigger reads).
For one row of stored length 11 with ``seq_start_id = [0, 7]``::

    starts  [0, 7]        ends [7, 11]   (the next start, or the row length for the last sequence)
    stored  [7, 4]   ->   runtime = stored - 1 = [6, 3]

Every runtime length must be a multiple of the pad multiple the topology needs (bridge-format §2, §7).
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path

from bridgepack.data.packed import PackedScan, PackedSource, RecordedCheck
from bridgepack.data.packset import PackingMetadata, check_run_ids, find_metadata


@dataclass
class PackedFacts:
    """What the files say. ``bad_*`` describe sequences whose runtime length misses ``multiple``."""

    files: list[str]
    metadata_path: str | None = None
    metadata: PackingMetadata = field(default_factory=PackingMetadata)
    rows: int = 0
    sequences: int = 0
    multiple: int = 1
    bad_sequences: int = 0
    first_bad: str | None = None
    #: EOS inputs inside trained spans (Bridge PR #5213), counted when the metadata records the EOS id
    eos_in_spans: int = 0
    first_eos_in_span: str | None = None

    @property
    def eos_id(self) -> int | None:
        """The EOS id bridgepack recorded for the packed split (one value for all entries), else ``None``."""
        values = self.record_values("eos_id")
        if len(values) != 1:
            return None
        (value,) = values
        return int(value) if value.lstrip("-").isdigit() else None

    @property
    def pack_size(self) -> int | None:
        """Bridge's combined ``pack_size`` (the max across entries), or ``None`` without metadata."""
        sizes = [e.pack_size for e in self.metadata.entries if isinstance(e.pack_size, int)]
        return max(sizes) if sizes else None

    def record_values(self, *names: str) -> set[str]:
        """Distinct values bridgepack recorded under any of ``names`` in its per-split record."""
        return self.metadata.record_values(*names)


def packed_location_exists(location: str) -> bool:
    """Whether a packed-data location (file, directory or glob) names anything on this machine."""
    return Path(location).exists() or (any(ch in location for ch in "*?[") and bool(glob.glob(location)))


def _sidecar(location: str, first_file: str, pack_size: int, explicit: str | None) -> str | None:
    """The metadata sidecar: the explicit path (if it exists), else ``{N}_metadata.jsonl`` beside the data."""
    if explicit:
        return explicit if Path(explicit).exists() else None
    found = find_metadata(
        [location if Path(location).is_dir() else first_file], pack_size if pack_size > 0 else None
    )
    return None if found is None else str(found)


def read_packed_facts(
    location: str, *, multiple: int, pack_size: int, metadata_path: str | None = None
) -> PackedFacts:
    """Read the facts of the packed split at ``location``; count runtime lengths missing ``multiple``."""

    source = PackedSource(location)
    try:
        facts = PackedFacts(files=list(source.paths), multiple=multiple)
        facts.metadata_path = _sidecar(location, source.paths[0], pack_size, metadata_path)
        if facts.metadata_path is not None:
            facts.metadata = PackingMetadata.read(facts.metadata_path)
            check_run_ids(source.paths, facts.metadata_path, facts.metadata)
        scan = PackedScan(pad_multiple=multiple, eos_id=facts.eos_id)
        sidecar = facts.metadata if facts.metadata_path is not None else None
        with RecordedCheck(location, source.paths, facts.metadata_path, sidecar) as recorded:
            for block in source.blocks(hashed=recorded.active):
                scan.add(block)
                recorded.add(block)
            recorded.finish()
    finally:
        source.close()
    facts.rows, facts.sequences = scan.stats.packs, scan.stats.sequences
    facts.bad_sequences, facts.first_bad = scan.multiple_misses, scan.first_multiple_miss
    facts.eos_in_spans, facts.first_eos_in_span = scan.eos_in_spans, scan.first_eos_in_span
    return facts
