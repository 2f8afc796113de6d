"""Facts about packed data on disk that the data-aware rules compare with the config (spec §3).

Kept in one small private module so it can later read through the shared ``seqpack.data`` readers. Reads:

* the Parquet files of a packed split (a file, a glob or a directory, sorted), columns ``input_ids`` and
  ``seq_start_id`` only, one record batch at a time;
* the metadata sidecar ``{N}_metadata.jsonl`` (one JSON *array*; seqpack's record under ``"seqpack"``).

Sequence lengths come straight from the Arrow list offsets, without a Python loop per token or sequence.
For one row of stored length 11 with ``seq_start_id = [0, 7]``::

    starts  [0, 7]        ends [7, 11]   (the next start, or the row length for the last sequence)
    stored  [7, 4]   ->   runtime = stored - 1 = [6, 3]

Every runtime length must be a multiple of the pad multiple the topology needs (spec §2, §7).
"""

from __future__ import annotations

import glob
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from seqpack.errors import DataError, InputError

SEQPACK_KEY = "seqpack"
_PARQUET_SUFFIXES = (".parquet", ".pq")


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
                if isinstance(value, dict):
                    value = value.get("name_or_path") or value.get("name") or value.get("path")
                if value is not None:
                    out.add(str(value))

        return out


def resolve_parquet(spec: str) -> list[str]:
    """Files of a packed-data spec: a ``.parquet``/``.pq`` file, a glob, or a directory (sorted, unique)."""
    path = Path(spec)
    if path.is_dir():
        found = sorted({str(p) for p in path.iterdir() if p.suffix in _PARQUET_SUFFIXES})
    elif any(ch in spec for ch in "*?["):
        found = sorted(set(glob.glob(spec)))
    elif path.exists():
        found = [spec]
    else:
        raise InputError(f"{spec}: no such file or directory")
    if not found:
        raise InputError(f"{spec}: no Parquet files (.parquet/.pq) found")
    return found


def find_metadata(spec: str, pack_size: int, explicit: str | None) -> str | None:
    """The sidecar next to the packed data: the explicit path, else ``{N}_metadata.jsonl`` beside it."""
    if explicit:
        return explicit if Path(explicit).exists() else None
    base = Path(spec) if Path(spec).is_dir() else Path(spec).parent
    if pack_size > 0:
        candidate = base / f"{pack_size}_metadata.jsonl"
        return str(candidate) if candidate.exists() else None
    found = sorted(base.glob("*_metadata.jsonl"))
    return str(found[0]) if len(found) == 1 else None


def read_metadata(path: str) -> list[dict[str, Any]]:
    """The sidecar's entries (a JSON array of objects)."""
    try:
        doc = json.loads(Path(path).read_bytes())
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, list) or not all(isinstance(e, dict) for e in doc):
        raise DataError(f"{path}: expected a JSON array of metadata objects (spec §3)")
    return doc


def _runtime_lengths(batch: pa.RecordBatch) -> np.ndarray:
    """Runtime length (stored - 1) of every sequence of every row in ``batch``, flat."""
    ids = batch.column("input_ids")
    starts = batch.column("seq_start_id")
    if isinstance(ids, pa.ChunkedArray) or isinstance(starts, pa.ChunkedArray):  # pragma: no cover
        raise TypeError("expected record-batch columns")
    id_off = np.asarray(ids.offsets, dtype=np.int64)
    row_len = np.diff(id_off) if len(id_off) else np.zeros(0, np.int64)
    s_off = np.asarray(starts.offsets, dtype=np.int64)
    counts = np.diff(s_off)
    values = (
        np.asarray(starts.values, dtype=np.int64)[s_off[0] : s_off[-1]]
        if len(s_off)
        else np.zeros(0, np.int64)
    )
    ends = np.empty_like(values)
    ends[:-1] = values[1:]
    last = np.cumsum(counts)[counts > 0] - 1
    ends[last] = row_len[counts > 0]
    return ends - values - 1


def read_packed_facts(
    spec: str, *, multiple: int, pack_size: int, metadata_path: str | None = None
) -> PackedFacts:
    """Read the facts of the packed split at ``spec``; count runtime lengths missing ``multiple``."""
    files = resolve_parquet(spec)
    facts = PackedFacts(files=files, multiple=multiple)
    facts.metadata_path = find_metadata(spec if Path(spec).is_dir() else files[0], pack_size, metadata_path)
    if facts.metadata_path is not None:
        facts.metadata = read_metadata(facts.metadata_path)
    for name in files:
        try:
            handle = pq.ParquetFile(name)
        except (OSError, pa.ArrowInvalid) as exc:
            raise InputError(f"{name}: not a Parquet file ({exc})") from None
        missing = {"input_ids", "seq_start_id"} - set(handle.schema_arrow.names)
        if missing:
            raise DataError(
                f"{name}: missing column(s) {sorted(missing)} of Bridge's packed layout (spec §3)"
            )
        row0 = facts.rows
        for batch in handle.iter_batches(columns=["input_ids", "seq_start_id"], batch_size=4096):
            lengths = _runtime_lengths(batch)
            facts.rows += batch.num_rows
            facts.sequences += len(lengths)
            bad = np.flatnonzero(lengths % multiple) if multiple > 1 else np.zeros(0, np.int64)
            if len(bad) and facts.first_bad is None:
                counts = np.diff(np.asarray(batch.column("seq_start_id").offsets, dtype=np.int64))
                row = int(np.searchsorted(np.cumsum(counts), bad[0], side="right"))
                facts.first_bad = f"{name} row {row0 + row}: runtime length {int(lengths[bad[0]])}"
            facts.bad_sequences += len(bad)
            row0 = facts.rows
    return facts
