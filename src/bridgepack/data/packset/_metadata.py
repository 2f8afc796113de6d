"""The packing metadata sidecar ``{N}_metadata.jsonl`` (bridge-format §3).

Despite its name the file is **one JSON array**, one dict appended per split (train first, then
validation). Bridge writes six keys in this order::

    [{"dataset_max_seqlen": 6, "max_samples_per_bin": 3, "packing_factor": 2.0,
      "packing_efficiency": 73.33, "pack_size": 10, "min_packed_seqlen": 5}]

Bridge's readers take the max (or, for ``min_packed_seqlen``, the min) across entries. bridgepack adds one key
of its own after the six, ``"bridgepack"``, holding its record of how the split was made (version, split,
mode, algorithm, seed, pad multiple, tokenizer, counts); readers ignore keys they do not know.

:class:`PackingMetadata` (the file) and :class:`MetadataEntry` (one split) are the one reader and writer of
the sidecar: ``pack`` writes through them, and ``inspect``, the doctor, the trainer, ``diff``, ``verify``,
batch dumps and the run-id check read through them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

from bridgepack._io import atomic_write_bytes, read_bytes
from bridgepack.data.packset._names import SPLITS
from bridgepack.errors import DataError, InputError, shown
from bridgepack.packing import BRIDGE_METADATA_KEYS

#: The key under which bridgepack keeps its own record in each entry (CONVENTIONS: data and files).
BRIDGEPACK_KEY = "bridgepack"
#: The key of the run id in bridgepack's record (and in every rejects record,
#: :mod:`bridgepack.data.packset._runs`).
RUN_ID = "run_id"
#: Keys whose combined value across entries is the minimum; every other Bridge key combines by max.
_MIN_KEYS = frozenset({"min_packed_seqlen"})


@dataclass(frozen=True)
class MetadataEntry:
    """One split's entry of the sidecar: Bridge's six values (bridge-format §3) and bridgepack's record of the
    run.

    Values are kept as written (Bridge writes ints and floats rounded to two decimals), and so are keys of
    other writers (``extra``) and the order of the keys read, so re-writing an entry gives the same bytes.
    ``record`` is ``None`` for an entry without bridgepack's key (Bridge's own files).
    """

    dataset_max_seqlen: int
    max_samples_per_bin: int
    packing_factor: float
    packing_efficiency: float
    pack_size: int
    min_packed_seqlen: int
    record: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    key_order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_values(cls, values: Mapping[str, Any], record: Mapping[str, Any] | None = None) -> MetadataEntry:
        """An entry from Bridge's six values (:func:`bridgepack.packing.bridge_metadata_values`) and a
        record."""
        frozen = None if record is None else MappingProxyType(dict(record))
        return cls(**{key: values[key] for key in BRIDGE_METADATA_KEYS}, record=frozen)

    @classmethod
    def from_dict(
        cls, doc: object, *, index: int, path: str | os.PathLike[str] | None = None
    ) -> MetadataEntry:
        """Check one parsed entry: an object holding Bridge's six keys as numbers. The :class:`DataError`
        names the file (or ``packing metadata`` for entries given in memory), the entry and the key."""
        prefix = (
            f"{os.fspath(path)}: entry {index}" if path is not None else f"packing metadata entry {index}"
        )
        if not isinstance(doc, Mapping):
            raise DataError(f"{prefix}: expected an object, found {type(doc).__name__}")
        for key in BRIDGE_METADATA_KEYS:
            if key not in doc:
                raise DataError(f"{prefix}: missing key '{key}'")
            value = doc[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise DataError(f"{prefix}: key '{key}': expected a number, found {shown(value)}")
        value = doc.get(BRIDGEPACK_KEY)
        record = MappingProxyType(dict(value)) if isinstance(value, Mapping) else None
        return cls(
            **{key: doc[key] for key in BRIDGE_METADATA_KEYS},
            record=record,
            # a "bridgepack" key that is not bridgepack's record (another tool's) is kept as it is
            extra=MappingProxyType(
                {
                    k: v
                    for k, v in doc.items()
                    if k not in BRIDGE_METADATA_KEYS and (k != BRIDGEPACK_KEY or record is None)
                }
            ),
            key_order=tuple(doc),
        )

    def bridge_values(self) -> dict[str, int | float]:
        """Bridge's six values in its key order."""
        return {key: getattr(self, key) for key in BRIDGE_METADATA_KEYS}

    def to_dict(self) -> dict[str, Any]:
        """The entry as written: Bridge's six keys, bridgepack's record, other keys (in the order read)."""
        out: dict[str, Any] = {**self.bridge_values()}
        if self.record is not None:
            out[BRIDGEPACK_KEY] = dict(self.record)
        out.update(self.extra)
        if self.key_order and set(self.key_order) == set(out):
            return {key: out[key] for key in self.key_order}
        return out

    def recorded(self, name: str) -> Any:
        """The value bridgepack recorded under ``name`` (``None`` when absent or without a record)."""
        return None if self.record is None else self.record.get(name)

    @property
    def split(self) -> str | None:
        """The split bridgepack recorded (``None`` for entries written by other tools)."""
        split = self.recorded("split")
        return split if isinstance(split, str) else None

    @property
    def run_id(self) -> str | None:
        """The id of the pack run that wrote the entry (``None`` for other tools)."""
        value = self.recorded(RUN_ID)
        return value if isinstance(value, str) else None

    @property
    def eos_id(self) -> int | None:
        """The EOS id the pack was made with, as recorded (``None`` when not recorded)."""
        value = self.recorded("eos_id")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def pad_seq_to_mult(self) -> int | None:
        """The pre-padding multiple the pack was made with, as recorded (``None`` when not recorded)."""
        value = self.recorded("pad_seq_to_mult")
        return None if value is None else int(value)


@dataclass(frozen=True)
class PackingMetadata:
    """The sidecar ``{N}_metadata.jsonl``: its entries, one per split, in the file's order."""

    entries: tuple[MetadataEntry, ...] = ()

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> PackingMetadata:
        """Read and check a sidecar: a JSON array of entries, each holding at least Bridge's six keys.

        Raises :class:`InputError` when the file is missing or not JSON, :class:`DataError` when it is JSON
        of the wrong shape (naming the entry and key).
        """
        raw = read_bytes(path)
        try:
            doc = orjson.loads(raw)  # nesting is bounded (1024 levels), unlike json.loads' recursion
        except orjson.JSONDecodeError as exc:
            raise InputError(
                f"{os.fspath(path)}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})"
            ) from None
        if not isinstance(doc, list):
            raise DataError(
                f"{os.fspath(path)}: expected a JSON array of metadata entries, found {type(doc).__name__}"
            )
        return cls(tuple(MetadataEntry.from_dict(entry, index=i, path=path) for i, entry in enumerate(doc)))

    def write(self, path: str | os.PathLike[str], *, overwrite: bool = True) -> None:
        """Write the sidecar atomically, as Bridge writes it (``json.dump``'s default separators);
        ``overwrite=False`` refuses an existing file."""
        doc = [entry.to_dict() for entry in self.entries]
        atomic_write_bytes(path, json.dumps(doc).encode(), overwrite=overwrite)

    def with_entry(self, entry: MetadataEntry) -> PackingMetadata:
        """The entries with ``entry`` appended, replacing an entry of the same split.

        Bridge only ever appends; bridgepack replaces the entry of a split it re-packs (with ``--overwrite``)
        so the file keeps one entry per split.
        """
        kept = (
            self.entries if entry.split is None else tuple(e for e in self.entries if e.split != entry.split)
        )
        return PackingMetadata((*kept, entry))

    def pick(self, split: str | None) -> tuple[int, MetadataEntry] | None:
        """The entry describing ``split``: by bridgepack's record, else Bridge's append order, else the
        only one."""
        for index, entry in enumerate(self.entries):
            if split is not None and entry.split == split:
                return index, entry
        if split in SPLITS and SPLITS.index(split) < len(self.entries):
            index = SPLITS.index(split)
            return index, self.entries[index]
        if len(self.entries) == 1:
            return 0, self.entries[0]
        return None

    def combined(self) -> dict[str, int | float]:
        """Bridge's values across entries as its readers combine them: max of every key, min of
        ``min_packed_seqlen``."""
        if not self.entries:
            raise DataError("metadata holds no entries")
        combined: dict[str, int | float] = {}
        for key in BRIDGE_METADATA_KEYS:
            values = [getattr(entry, key) for entry in self.entries]
            combined[key] = min(values) if key in _MIN_KEYS else max(values)
        return combined

    def record(self) -> Mapping[str, Any]:
        """bridgepack's record of the first entry holding one (every split of a run records the same
        settings); empty without one."""
        return next((e.record for e in self.entries if e.record is not None), {})

    @property
    def eos_id(self) -> int | None:
        """The EOS id recorded by the first entry that records one (every split of a run shares it)."""
        return next((e.eos_id for e in self.entries if e.eos_id is not None), None)

    def record_values(self, *names: str) -> set[str]:
        """Distinct values bridgepack recorded under any of ``names`` across the entries, as strings."""
        return {
            str(value)
            for entry in self.entries
            for name in names
            if (value := entry.recorded(name)) is not None
        }


def read_metadata(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The sidecar's entries as dicts (:meth:`PackingMetadata.read`, for callers that want plain JSON)."""
    return [entry.to_dict() for entry in PackingMetadata.read(path).entries]


def combine_metadata(entries: Sequence[Mapping[str, Any] | MetadataEntry]) -> dict[str, int | float]:
    """Combine entries (dicts or :class:`MetadataEntry`) as Bridge's readers do
    (:meth:`PackingMetadata.combined`)."""
    return as_metadata(entries).combined()


def as_metadata(entries: Sequence[Mapping[str, Any] | MetadataEntry]) -> PackingMetadata:
    """Entries given in memory (dicts are checked as a file's would be) as :class:`PackingMetadata`."""
    return PackingMetadata(
        tuple(
            e if isinstance(e, MetadataEntry) else MetadataEntry.from_dict(e, index=i)
            for i, e in enumerate(entries)
        )
    )


def write_metadata_entry(path: str | os.PathLike[str], entry: Mapping[str, Any] | MetadataEntry) -> None:
    """Append ``entry`` to the sidecar at ``path`` (creating it), replacing an entry of the same split;
    the file is rewritten atomically (:meth:`PackingMetadata.with_entry`, :meth:`PackingMetadata.write`)."""
    existing = PackingMetadata.read(path) if Path(path).exists() else PackingMetadata()
    existing.with_entry(as_metadata([entry]).entries[0]).write(path)
