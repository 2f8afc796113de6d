"""Facts about packed data on disk that the data-aware rules compare with the config (spec §3).

The files are read through the shared readers of :mod:`seqpack.data`:

* the Parquet files of a packed split (a file, a glob or a directory, by Bridge's rules), one row group at a
  time, every row invariant checked;
* the metadata sidecar ``{N}_metadata.jsonl`` (one JSON *array*; seqpack's record under ``"seqpack"``).

Sequence lengths come straight from the Arrow list offsets, without a Python loop per token or sequence.
For one row of stored length 11 with ``seq_start_id = [0, 7]``::

    starts  [0, 7]        ends [7, 11]   (the next start, or the row length for the last sequence)
    stored  [7, 4]   ->   runtime = stored - 1 = [6, 3]

Every runtime length must be a multiple of the pad multiple the topology needs (spec §2, §7).
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from seqpack.data.metadata import SEQPACK_KEY, find_metadata, read_metadata
from seqpack.data.packed import PackedReader, validate_block
from seqpack.data.runs import check_run_ids


@dataclass
class PackedFacts:
    """What the files say. ``bad_*`` describe sequences whose runtime length misses ``multiple``."""

    files: list[str]
    metadata_path: str | None = None
    metadata: list[dict[str, Any]] = field(default_factory=list)
    rows: int = 0
    sequences: int = 0
    multiple: int = 1
    bad_sequences: int = 0
    first_bad: str | None = None

    @property
    def pack_size(self) -> int | None:
        """Bridge's combined ``pack_size`` (the max across entries), or ``None`` without metadata."""
        sizes = [e["pack_size"] for e in self.metadata if isinstance(e.get("pack_size"), int)]
        return max(sizes) if sizes else None

    def record_values(self, *names: str) -> set[str]:
        """Distinct values seqpack recorded under any of ``names`` in its per-split record."""
        out: set[str] = set()
        for entry in self.metadata:
            record = entry.get(SEQPACK_KEY)
            if not isinstance(record, dict):
                continue
            for name in names:
                value = record.get(name)
                if value is not None:
                    out.add(str(value))
        return out


def packed_spec_exists(spec: str) -> bool:
    """Whether a packed-data spec (file, directory or glob) names anything on this machine."""
    return Path(spec).exists() or (any(ch in spec for ch in "*?[") and bool(glob.glob(spec)))


def _sidecar(spec: str, first_file: str, pack_size: int, explicit: str | None) -> str | None:
    """The metadata sidecar: the explicit path (if it exists), else ``{N}_metadata.jsonl`` beside the data."""
    if explicit:
        return explicit if Path(explicit).exists() else None
    found = find_metadata([spec if Path(spec).is_dir() else first_file], pack_size if pack_size > 0 else None)
    return None if found is None else str(found)


def read_packed_facts(
    spec: str, *, multiple: int, pack_size: int, metadata_path: str | None = None
) -> PackedFacts:
    """Read the facts of the packed split at ``spec``; count runtime lengths missing ``multiple``."""

    reader = PackedReader(spec)
    try:
        facts = PackedFacts(files=list(reader.paths), multiple=multiple)
        facts.metadata_path = _sidecar(spec, reader.paths[0], pack_size, metadata_path)
        if facts.metadata_path is not None:
            facts.metadata = read_metadata(facts.metadata_path)
            check_run_ids(reader.paths, facts.metadata_path, facts.metadata)
        for block in reader.iter_blocks():
            validate_block(block)
            runtime = block.sequence_lengths() - 1
            facts.rows += block.num_rows
            facts.sequences += len(runtime)
            bad = np.flatnonzero(runtime % multiple) if multiple > 1 else np.zeros(0, np.int64)
            if len(bad) and facts.first_bad is None:
                row = int(np.searchsorted(block.start_offsets, bad[0], side="right")) - 1
                facts.first_bad = (
                    f"{block.path} row {block.first_row + row}: runtime length {int(runtime[bad[0]])}"
                )
            facts.bad_sequences += len(bad)
    finally:
        reader.close()
    return facts
