"""The staging directory of a sharded run (``bridgepack pack --engine ray``) and the records in it.

A sharded split is staged, hidden, beside its final directory while the run goes on; the driver and the
workers share it (it must be on a filesystem every node sees)::

    out/.training_4096.staging/
        run.json                                  the run id and the run's identity (resume): the value of
                                                  every option that shapes a slice or a shard
        spool/00000/tokens.u32, mask.u8, offsets.i64   input slice 0's shaped samples (phase 1)
        read/00000.json                           what slice 0 measured (its record, written last)
        read/00000.lengths.npz                    its runtime lengths, samples and rejects bytes per chunk
        read/00000.rejects.jsonl                  its rejects
        plan/00000.npz                            output shard 0's samples (slice, index) and pack offsets
        shards/training_4096-00000.idx.parquet    output shard 0 (phase 2) -> out/training_4096/ at commit
        partial/                                  shards being written (never taken by the commit)
        done/00000.json, 00000.packs.npy          what output shard 0 wrote (its record, its pack hashes)

Records are written atomically and last: a record's presence says its step is complete; a resumed run
still checks the files against it before reusing them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import orjson

from bridgepack._io import atomic_path
from bridgepack.data.packset import shard_filename, sharded_dirname
from bridgepack.data.pipeline._options import PackOptions
from bridgepack.data.pipeline._result import Counts
from bridgepack.data.pipeline._shape import Shaping
from bridgepack.data.samples import chunk_rows_for
from bridgepack.data.samples.text import ResolvedText, TextOptions
from bridgepack.packing import CostModel

#: Version of ``run.json`` and the records (a staging directory of another version is not reused).
STAGING_VERSION = 4


@dataclass(frozen=True)
class ShardSlice:
    """The inputs phase-1 task ``index`` reads: the files ``sources`` (indices into the inputs) and, of
    their chunks numbered from 0, those with ``number % every == offset`` (``every > 1`` when there are
    fewer files than shards: each such task reads the files and converts only its own chunks).
    ``hashes``: the inputs whose digest this task computes for the record (each input by exactly one)."""

    index: int
    sources: tuple[int, ...]
    every: int = 1
    offset: int = 0
    hashes: tuple[int, ...] = ()


@dataclass(frozen=True)
class OutputShard:
    """Output shard ``index``: the plan's packs ``[first_pack, first_pack + num_packs)``, whole row groups
    of the local writer (the last shard's last group may be short, as the local file's is)."""

    index: int
    first_pack: int
    num_packs: int


@dataclass(frozen=True)
class StagingPaths:
    """Where a sharded split is staged and where it lands."""

    out_dir: Path
    split: str
    pack_size: int

    @property
    def root(self) -> Path:
        return self.out_dir / f".{sharded_dirname(self.split, self.pack_size)}.staging"

    @property
    def shards(self) -> Path:
        return self.root / "shards"

    @property
    def partial(self) -> Path:
        return self.root / "partial"

    @property
    def done(self) -> Path:
        return self.root / "done"

    @property
    def read(self) -> Path:
        return self.root / "read"

    @property
    def plans(self) -> Path:
        return self.root / "plan"

    @property
    def final(self) -> Path:
        return self.out_dir / sharded_dirname(self.split, self.pack_size)

    def spool(self, index: int) -> Path:
        return self.root / "spool" / f"{index:05d}"

    def slice_record(self, index: int) -> Path:
        return self.read / f"{index:05d}.json"

    def slice_lengths(self, index: int) -> Path:
        return self.read / f"{index:05d}.lengths.npz"

    def rejects(self, index: int) -> Path:
        return self.read / f"{index:05d}.rejects.jsonl"

    def plan(self, index: int) -> Path:
        return self.plans / f"{index:05d}.npz"

    def shard(self, index: int) -> Path:
        return self.shards / shard_filename(self.split, self.pack_size, index)

    def record(self, index: int) -> Path:
        return self.done / f"{index:05d}.json"

    def pack_hashes(self, index: int) -> Path:
        return self.done / f"{index:05d}.packs.npy"


@dataclass(frozen=True)
class ShardJob:
    """All a worker needs for any task of one run (picklable: it travels to the workers)."""

    opts: PackOptions
    inputs: tuple[Path, ...]
    text: ResolvedText | None
    eos_id: int
    check_eos: bool  # pre-tokenized input without a given EOS: every row must end with the inferred one
    run_id: str
    staging: StagingPaths

    def shaping(self) -> Shaping:
        opts = self.opts
        return Shaping(
            opts.max_seq_length,
            opts.size.pad_seq_to_mult,
            self.eos_id,
            opts.too_long,
            opts.bridge_compat,
            False,
        )


@dataclass(frozen=True)
class RunFacts:
    """What a run's options resolved to, for :func:`staging_identity`: the options, the text step (``None``:
    pre-tokenized input), the tokenizer files' hash and the number of input slices."""

    opts: PackOptions
    text: ResolvedText | None
    tokenizer_sha256: str | None
    shards: int


def _file_hash(path: Path | None) -> str | None:
    return None if path is None else hashlib.sha256(path.read_bytes()).hexdigest()


def _inputs(facts: RunFacts) -> list[list[Any]]:
    """Each input as it is now: its path, size and modification time (a file rewritten in place differs)."""
    return [[os.fspath(p), p.stat().st_size, p.stat().st_mtime_ns] for p in facts.opts.input.paths]


def _cost_model(model: CostModel | None) -> dict[str, Any] | None:
    return None if model is None else model.to_record()


def _text_setting(name: str) -> Callable[[RunFacts], Any]:
    """A text setting (``TextOptions``): it shapes the samples of text input only."""
    return lambda f: None if f.text is None else getattr(f.opts.input.text, name)


#: Every option of ``pack`` and ``pack --engine ray`` (``PackOptions``' fields, the engine's keywords), and
#: whether a stopped run staged with another value of it may be resumed. ``identity``: the option shapes
#: what a slice or a shard holds, and its value -- effective, as the run resolves it -- is part of the
#: staged run's identity: a run with another value is refused, ``--overwrite`` starts over (resuming
#: reused slices read otherwise: a resumed ``--chunk-rows`` packed 975 of 1,000 samples, some twice).
#: ``place``: it names the staging directory itself (another value stages elsewhere). ``run``: it changes
#: how the run goes, never what it makes. An option missing here is refused by the tests.
STAGING_OPTIONS: dict[str, tuple[str, Callable[[RunFacts], Any] | None]] = {
    "paths": ("identity", _inputs),
    "tokenizer": ("identity", lambda f: f.tokenizer_sha256),
    "eos_id": ("identity", lambda f: f.opts.input.eos_id),
    "chat_template": ("identity", lambda f: _file_hash(f.opts.input.chat_template)),
    "tool_schemas": ("identity", lambda f: _file_hash(f.opts.input.tool_schemas)),
    "chunk_rows": ("identity", lambda f: chunk_rows_for(f.text, f.opts.input.chunk_rows)),
    **{t.name: ("identity", _text_setting(t.name)) for t in fields(TextOptions)},
    "pad_seq_to_mult": ("identity", lambda f: f.opts.size.pad_seq_to_mult),
    "algorithm": ("identity", lambda f: f.opts.algorithm),
    "cost_model": ("identity", lambda f: _cost_model(f.opts.size.cost_model)),
    "seed": ("identity", lambda f: f.opts.packing_seed),
    "max_seq_length": ("identity", lambda f: f.opts.max_seq_length),
    "too_long": ("identity", lambda f: None if f.opts.bridge_compat else f.opts.too_long.value),
    "bridge_compat": ("identity", lambda f: f.opts.bridge_compat),
    "layout": ("identity", lambda f: f.opts.run.layout.value),
    "shards": ("identity", lambda f: f.shards),
    "out_dir": ("place", None),
    "split": ("place", None),
    "pack_size": ("place", None),
    "workers": ("run", None),
    "scratch_dir": ("run", None),
    "overwrite": ("run", None),
    "quiet": ("run", None),
    "engine": ("run", None),
    "ray_address": ("run", None),
}


def staging_identity(facts: RunFacts) -> dict[str, Any]:
    """The staged run's identity: each ``identity`` option's effective value (JSON)."""
    values = {name: get(facts) for name, (kind, get) in STAGING_OPTIONS.items() if get is not None}
    return orjson.loads(orjson.dumps(values, option=orjson.OPT_SORT_KEYS))


def identity_differences(staged: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The options whose values differ between a staged run's identity and this run's, in table order."""
    return [name for name in STAGING_OPTIONS if name in now and staged.get(name) != now[name]]


_R = TypeVar("_R", bound="_Record")


@dataclass
class _Record:
    """A JSON record of the staging directory, tagged with :data:`STAGING_VERSION`."""

    def to_json(self) -> bytes:
        return orjson.dumps({"version": STAGING_VERSION, **asdict(self)})

    @classmethod
    def from_json(cls: type[_R], data: bytes) -> _R:
        raw = orjson.loads(data)
        if raw.pop("version", None) != STAGING_VERSION:
            raise ValueError("another staging version")
        if "counts" in raw:
            raw["counts"] = Counts(**raw["counts"])
        if set(raw) != {f.name for f in fields(cls)}:
            raise ValueError("another record")
        return cls(**raw)

    @classmethod
    def load(cls: type[_R], path: Path) -> _R | None:
        """The record at ``path``, or ``None`` (not finished, or not readable as one)."""
        try:
            return cls.from_json(path.read_bytes())
        except (OSError, ValueError, TypeError, KeyError, orjson.JSONDecodeError):
            return None


@dataclass
class SliceOutcome(_Record):
    """What phase-1 task ``index`` spooled and measured; no tokens, a few hundred bytes."""

    index: int
    counts: Counts
    refused: int  # rows the text step refused (counted in counts.rejected too)
    first_rejected: str | None  # the slice's first sample not packed whole (named when nothing packs)
    lengths_sha256: str  # of its lengths file's arrays (lengths_digest)
    spool_bytes: dict[str, int]  # each spool file's size
    run_id: str
    seconds: float
    cpu_seconds: float = 0.0
    peak_rss_mb: float = 0.0
    input_digests: dict[str, str] = field(default_factory=dict)  # input index -> its digest


@dataclass
class ShardOutcome(_Record):
    """What phase-2 task ``index`` wrote (a ``done/`` record); no tokens, a few hundred bytes."""

    index: int
    first_pack: int
    num_packs: int
    fingerprint: dict[str, Any]  # PackedFingerprinter.state()
    fingerprint_result: dict[str, Any]  # the shard's own fingerprints, checked when the shard is reused
    run_id: str
    seconds: float
    cpu_seconds: float = 0.0
    peak_rss_mb: float = 0.0


@dataclass(frozen=True)
class SliceLengths:
    """A slice's runtime lengths (int32, in its own order), its samples per chunk and the bytes of its
    rejects file after each chunk (the driver interleaves both in the local pipeline's order)."""

    lengths: np.ndarray
    chunks: np.ndarray
    rejects_ends: np.ndarray

    def digest(self) -> str:
        hasher = hashlib.sha256()
        for array, dtype in ((self.lengths, "<i4"), (self.chunks, "<i8"), (self.rejects_ends, "<i8")):
            hasher.update(np.ascontiguousarray(array, dtype=dtype).tobytes())
        return hasher.hexdigest()

    def save(self, path: Path) -> None:
        with atomic_path(path, overwrite=True) as tmp, open(tmp, "wb") as handle:
            np.savez(handle, lengths=self.lengths, chunks=self.chunks, rejects_ends=self.rejects_ends)

    @classmethod
    def load(cls, path: Path) -> SliceLengths:
        with np.load(path, allow_pickle=False) as data:
            return cls(data["lengths"], data["chunks"], data["rejects_ends"])
