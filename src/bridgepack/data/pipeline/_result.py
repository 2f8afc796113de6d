"""What a pack run returns: the counts of its samples, :class:`PackResult` (the files, the metadata entry,
the counts, the time of each step; ``bridgepack pack --format json``'s document) and the Bridge overrides
that train on its output.

Apart from the pipeline's steps because every way of running a pack makes the same result: the local
pipeline, the sharded run's commit, and a slice's record of its counts (``_staging``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from bridgepack.data.packset import (
    SPLITS,
    TRAINING,
    VALIDATION,
    Layout,
    MetadataEntry,
    PackCounts,
    PackRecord,
    offline_packing_overrides,
    packed_filename,
    sharded_dirname,
)


@dataclass
class Counts:
    """Samples in and what became of them: each sample is ``packed`` (truncated and split ones included, also
    counted in ``truncated`` / ``split``) or ``rejected`` or ``dropped``; the sequences that were packed (a
    split sample packs as several) and the tokens read."""

    samples_in: int = 0
    packed: int = 0
    rejected: int = 0
    truncated: int = 0
    split: int = 0
    dropped: int = 0
    sequences: int = 0
    tokens_in: int = 0

    def record(self, packs: int) -> PackCounts:
        """The counts as the metadata record keeps them, with the ``packs`` the plan made."""
        return PackCounts(
            self.samples_in,
            self.packed,
            self.rejected,
            self.truncated,
            self.split,
            self.dropped,
            self.sequences,
            packs,
        )


@dataclass
class PackResult:
    """What a pack run (``pack_files``, or a sharded run's commit) wrote and measured: the files, the
    metadata entry written (Bridge's six values and bridgepack's record), the counts and the time of each
    step."""

    #: Version of :meth:`to_dict`'s document (``bridgepack pack --format json``).
    SCHEMA_VERSION: ClassVar[int] = 1

    packed_path: Path
    metadata_path: Path
    rejects_path: Path
    metadata: MetadataEntry
    record: PackRecord
    counts: Counts
    num_packs: int
    runtime_tokens: int
    pack_size: int
    seconds: dict[str, float] = field(default_factory=dict)
    #: A distributed run's measures (``--engine ray``): shards, shards reused by a resumed run, the
    #: shards' CPU seconds, the largest worker's peak memory (MB); empty for a local run.
    engine: dict[str, float] = field(default_factory=dict)
    #: The overrides that train on this output for a topology (:func:`overrides_for_result`), when the
    #: caller knows it: ``bridgepack pack`` adds them for its ``--cp``/``--tp``; ``pack_files`` leaves none.
    overrides: list[str] = field(default_factory=list)

    @property
    def padding_saved(self) -> int:
        """Padding tokens saved versus padding every packed sample to N: ``(sequences - packs) * N``."""
        return (self.counts.sequences - self.num_packs) * self.pack_size

    @property
    def padding_tokens(self) -> int:
        return self.num_packs * self.pack_size - self.runtime_tokens

    def to_dict(self) -> dict[str, Any]:
        """The summary ``bridgepack pack --format json`` prints, ``schema_version`` first."""
        c = self.counts
        bridge = self.metadata.bridge_values()
        text = self.record.text or {}
        return {
            "schema_version": self.SCHEMA_VERSION,
            "packed_path": os.fspath(self.packed_path),
            "metadata_path": os.fspath(self.metadata_path),
            "rejects_path": os.fspath(self.rejects_path),
            "samples_in": c.samples_in,
            "samples_packed": c.packed,
            "rejected": c.rejected,
            "truncated": c.truncated,
            "split": c.split,
            "dropped": c.dropped,
            "sequences": c.sequences,
            "packs": self.num_packs,
            "efficiency_percent": bridge["packing_efficiency"],
            "padding_tokens": self.padding_tokens,
            "padding_tokens_saved": self.padding_saved,
            "bridge_metadata": bridge,
            **({"assistant_mask": text["assistant_mask"]} if "assistant_mask" in text else {}),
            "overrides": list(self.overrides),
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            **({"engine": {k: round(v, 3) for k, v in self.engine.items()}} if self.engine else {}),
        }


def overrides_for_result(
    result: PackResult, *, cp: int = 1, tp: int = 1, sequence_parallel: bool = False
) -> list[str]:
    """The Megatron-Bridge 0.6.2 overrides that train on this output directory (bridge-format §1, §4)."""
    record = result.record
    if record.layout == Layout.padding_free.value:
        return []
    n = result.pack_size
    out = result.metadata_path.parent
    # a split packed by the ray engine is a directory of shards (sharded_dirname), else one file
    paths = {
        split: out / sharded_dirname(split, n)
        if (out / sharded_dirname(split, n)).is_dir()
        else out / packed_filename(split, n)
        for split in SPLITS
    }
    paths[record.split] = result.packed_path  # this run's own set, whichever shape it has
    return offline_packing_overrides(
        n,
        record.pad_seq_to_mult,
        cp=cp,
        tp=tp,
        sequence_parallel=sequence_parallel,
        train_path=paths[TRAINING] if paths[TRAINING].exists() else None,
        val_path=paths[VALIDATION] if paths[VALIDATION].exists() else None,
        metadata_path=result.metadata_path,
    )
