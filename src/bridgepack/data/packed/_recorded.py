"""The packs as ``bridgepack pack`` recorded them, checked by every reader that reads a split whole.

The pack writer fingerprints every row group as it writes it and stores the result in the split's
metadata entry (``"bridgepack": {"fingerprint": {...}}``): an order-independent content hash of the
sequences with their masks, a hash chain over the packs as stored, and the counts of packs (rows),
sequences, tokens and supervised tokens. Bridge's six metadata values cannot see most damage -- two
packs swapped, one token or mask bit edited, ten rows dropped from a file whose run id was kept -- and
the readers used to pass such files. So ``inspect``, ``doctor --packed``, ``train`` and ``diff`` hash the
packs while they read them and refuse a set that no longer matches its record, exit 1, with one message::

    out/training_4096.idx.parquet: does not match what bridgepack pack recorded in out/4096_metadata.jsonl
    entry 0 (num_packs recorded 75382, found 75372); the packs changed after they were written: pack
    again, or restore the files

A set without a recorded fingerprint (another tool's, the HF layout, an older bridgepack) has nothing to be
compared with and is read as before. A record of an earlier algorithm this bridgepack still computes
(``bridgepack-fp2``) is checked with that algorithm: the blocks are hashed once more for it. A record it
cannot check (another algorithm, or none named) is refused, never skipped.

The hashes come from the reader's own validation pass (:func:`~bridgepack.data.packed.validate_block` with
``hashed=True``: the id and mask checks, the largest id and the hashes from one load of each token), so
the check adds the hash arithmetic and nothing else: no second read of the tokens, no thread. On 1M
samples (``benchmarks/inspect_check.py``, docs/failure-behaviour.md) that is a few percent of
``inspect``'s wall and CPU time with ``bridgepack-fp3`` (eight tokens a hash step), where fp2's step per
token took +14% and hashing on a thread +28%.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar

from bridgepack.data.packed._reader import PackedBlock
from bridgepack.data.packset import PackingMetadata, hf_split, packed_names
from bridgepack.errors import DataError, InputError, shown
from bridgepack.fingerprint import CHECKABLE_ALGORITHMS, Fingerprint, PackedFingerprinter

#: The recorded values compared, in the order a difference is reported: the shape first (rows, sequences,
#: tokens: their numbers are the clearest to read), then the content (any token or mask value: a changed
#: mask bit also changes the supervised count, reported as content), then the order of the packs.
CHECKED = ("num_packs", "num_sequences", "num_tokens", "content", "num_supervised", "packs")
_WHAT = {
    "content": "content fingerprint differs: a token or a mask value changed",
    "packs": "packs fingerprint differs: packs reordered, or a sequence moved between packs",
}


@dataclass(frozen=True)
class FingerprintReport:
    """The fingerprints of a packed set (``bridgepack fingerprint``) and, when checked, the record they are
    compared with: ``(metadata path, entry index, recorded fingerprint)``."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    path: str
    found: Fingerprint
    recorded: tuple[str, int, dict[str, Any]] | None = None

    @property
    def mismatches(self) -> dict[str, list[Any]]:
        """``key -> [recorded, found]`` of each checked value (the algorithm too) that differs."""
        if self.recorded is None:
            return {}
        stored, now = self.recorded[2], self.found.to_dict()
        return {k: [stored.get(k), now[k]] for k in ("algorithm", *CHECKED) if stored.get(k) != now[k]}

    def to_dict(self) -> dict[str, Any]:
        """``bridgepack fingerprint --format json``'s document (``check`` with ``--check``)."""
        doc: dict[str, Any] = {
            "schema_version": self.SCHEMA_VERSION,
            "path": self.path,
            **self.found.to_dict(),
        }
        if self.recorded is not None:
            doc["check"] = {"metadata": self.recorded[0], "mismatches": self.mismatches}
        return doc


def files_recorded_fingerprint(
    files: Sequence[str | os.PathLike[str]],
    metadata: PackingMetadata | None,
    metadata_path: str | os.PathLike[str] | None = None,
) -> tuple[int, dict[str, Any]] | None:
    """``(entry index, fingerprint record)`` bridgepack pack recorded for the split of ``files``, if any.

    A record this bridgepack cannot check is never skipped (a tampered set would pass as one without a
    record): one of an algorithm it does not compute (a newer bridgepack's ``bridgepack-fp4``) is an
    :class:`InputError` (exit 2, like any input in a format this version cannot read), one that names no
    algorithm or is not an object a :class:`DataError` (exit 1: the sidecar was read and is invalid;
    bridgepack always writes the algorithm)."""
    if metadata is None or not files:
        return None
    name = os.fspath(files[0])
    picked = metadata.pick(packed_names([os.fspath(f) for f in files]).split or hf_split(name))
    if picked is None:
        return None
    index, entry = picked
    found = entry.recorded("fingerprint")
    if found is None:
        return None
    where = f"{os.fspath(metadata_path) if metadata_path is not None else 'packing metadata'} entry {index}"
    if not isinstance(found, Mapping):
        raise DataError(
            f"{where}: the fingerprint record is {shown(found)}, not an object: it cannot be checked"
        )
    algorithm = found.get("algorithm")
    if not isinstance(algorithm, str):
        raise DataError(
            f"{where}: the fingerprint record names no algorithm (algorithm {shown(algorithm)}; bridgepack "
            "pack "
            "always writes one: the record was edited), so the packs cannot be checked against it"
        )
    if algorithm not in CHECKABLE_ALGORITHMS:
        known = ", ".join(CHECKABLE_ALGORITHMS)
        raise InputError(
            f"{where}: fingerprint recorded with {algorithm!r}, which this bridgepack does not compute "
            f"({known}); check it with the bridgepack that packed it"
        )
    return index, dict(found)


def mismatch(recorded: Mapping[str, Any], found: Fingerprint) -> str | None:
    """What differs between a recorded fingerprint and one computed from the data (by the record's
    algorithm), in words; ``None``."""
    now = found.to_dict()
    if recorded.get("algorithm") != now["algorithm"]:
        raise ValueError(
            f"a {recorded.get('algorithm')} record compared with a {now['algorithm']} fingerprint"
        )
    for key in CHECKED:
        if recorded.get(key) != now[key]:
            return _WHAT.get(key) or f"{key} recorded {recorded.get(key)}, found {now[key]}"
    return None


def not_as_recorded(location: str, metadata_path: str | os.PathLike[str], entry: int, what: str) -> DataError:
    """The one error every reader raises for packs that differ from their record."""
    return DataError(
        f"{location}: does not match what bridgepack pack recorded in {os.fspath(metadata_path)} entry "
        f"{entry} "
        f"({what}); the packs changed after they were written: pack again, or restore the files"
    )


class RecordedCheck:
    """Adds up the hashes of the blocks a reader reads, in order, and compares the result with the split's
    record when the pass ends (:meth:`finish`). Ask the reader for hashed blocks when :attr:`active`
    (``source.blocks(hashed=check.active)``); a block without them is hashed here.

    Without a recorded fingerprint it does nothing and costs nothing::

        with RecordedCheck(location, files, meta_path, sidecar) as check:
            for block in source.blocks(hashed=check.active):
                check.add(block)
            check.finish()          # DataError when the packs are not what pack recorded
    """

    def __init__(
        self,
        location: str,
        files: Sequence[str | os.PathLike[str]],
        metadata_path: str | os.PathLike[str] | None,
        metadata: PackingMetadata | None,
    ) -> None:
        self.location = location
        self.metadata_path = metadata_path
        self.recorded = (
            files_recorded_fingerprint(files, metadata, metadata_path) if metadata_path is not None else None
        )
        algorithm = self.recorded[1]["algorithm"] if self.recorded is not None else None
        self._fingerprinter = PackedFingerprinter(algorithm=algorithm) if algorithm else PackedFingerprinter()

    @property
    def active(self) -> bool:
        """Whether there is a record to compare with (else :meth:`add` ignores its blocks)."""
        return self.recorded is not None

    def add(self, block: PackedBlock) -> None:
        """Add ``block`` (the next one in stored order, validated)."""
        if self.recorded is None:
            return
        if block.hashes is not None and block.hashes.algorithm == self._fingerprinter.algorithm:
            self._fingerprinter.add(block.hashes)
        else:
            self._fingerprinter.update_block(block)

    def finish(self) -> None:
        """Compare everything added with the record; raise the one :class:`DataError` if they differ."""
        if self.recorded is None or self.metadata_path is None:
            return
        entry, record = self.recorded
        what = mismatch(record, self._fingerprinter.result())
        if what is not None:
            raise not_as_recorded(self.location, self.metadata_path, entry, what)

    def __enter__(self) -> RecordedCheck:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None
