"""A sharded pack set: the pipeline cut into shards that run anywhere (``seqpack pack --engine ray``).

Each shard is planned alone: it reads its slice of the inputs, shapes it exactly as the local pipeline does,
plans its own lengths with the same algorithm and writes one Parquet file. No lengths are gathered and
nothing is shuffled, so a shard costs the driver a few hundred bytes and the packs cost at most about one
partly filled pack a shard over planning everything at once (docs/scale.md measures it)::

    out/.training_4096.staging/            hidden while the run is going
        run.json                           the run id and the identity of the command (resume)
        shards/training_4096-00000.idx.parquet, ...       -> renamed to out/training_4096/ at commit
        done/00000.json, 00000.packs.npy, 00000.rejects.jsonl   what each finished shard measured
    out/4096_metadata.jsonl                one combined entry per split (Bridge takes max/min anyway)
    out/rejects_training.jsonl             every shard's rejects, in shard order
    out/training_4096/                     the committed shards, one rename

The commit order is the local one: metadata, rejects, then the packs by one rename of the staged
directory, so a run killed before that rename leaves no packed file under a name any reader looks at.
"""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from seqpack._faults import fault_point
from seqpack._io import atomic_path
from seqpack.data.format import (
    PARQUET_RUN_ID,
    Layout,
    MetadataEntry,
    PackRecord,
    most_common_last_token,
    shard_filename,
    sharded_dirname,
    write_metadata_entry,
)
from seqpack.data.pipeline._lock import OutputLock, claim_output_dir
from seqpack.data.pipeline._options import PackOptions
from seqpack.data.pipeline._pipeline import (
    Counts,
    PackResult,
    _BackgroundHash,
    _cost_model_record,
    _Outputs,
    _resolve,
    _ShapeChunk,
    _SpoolToScratch,
    combine_input_digests,
)
from seqpack.data.pipeline._scratch import ScratchStore
from seqpack.data.pipeline._shape import Shaping
from seqpack.data.pipeline._write import write_packed
from seqpack.data.samples import ChunkToExamples, as_paths, chunk_rows_for, iter_chunks
from seqpack.data.samples.text import ResolvedText
from seqpack.errors import DataError, UsageError, param
from seqpack.fingerprint import PackedFingerprinter
from seqpack.packing import bridge_metadata_values, pack_lengths

#: Version of ``run.json`` and the ``done/`` records (a staging directory of another version is not reused).
STAGING_VERSION = 2


@dataclass(frozen=True)
class ShardSlice:
    """The inputs a shard reads: the files ``sources`` (indices into the inputs) and, of their chunks
    numbered from 0, those with ``number % every == offset`` (``every > 1`` when there are fewer files
    than shards: each such shard reads the files and converts only its own chunks). ``hashes``: the inputs
    whose digest this shard computes for the record (each input by exactly one shard)."""

    index: int
    sources: tuple[int, ...]
    every: int = 1
    offset: int = 0
    hashes: tuple[int, ...] = ()


def slice_inputs(inputs: list[Path], shards: int) -> list[ShardSlice]:
    """``shards`` slices of ``inputs``: whole files in input order when there are enough of them, else
    every shard reads every file and takes every ``shards``-th chunk.

    >>> [s.sources for s in slice_inputs([Path("a"), Path("b"), Path("c")], 2)]
    [(0, 1), (2,)]
    >>> [(s.every, s.offset) for s in slice_inputs([Path("a")], 2)]
    [(2, 0), (2, 1)]
    >>> [s.hashes for s in slice_inputs([Path("a"), Path("b"), Path("c")], 2)]  # each input by one shard
    [(0, 1), (2,)]
    >>> [s.hashes for s in slice_inputs([Path("a")], 2)]
    [(0,), ()]
    """
    if shards < 1:
        raise UsageError(f"{param('shards')} must be >= 1, got {shards}")
    if len(inputs) >= shards:
        groups = [tuple(int(s) for s in g) for g in np.array_split(np.arange(len(inputs)), shards)]
        return [ShardSlice(i, g, hashes=g) for i, g in enumerate(groups)]
    every = tuple(range(len(inputs)))
    return [ShardSlice(i, every, shards, i, every[i::shards]) for i in range(shards)]


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
    def final(self) -> Path:
        return self.out_dir / sharded_dirname(self.split, self.pack_size)

    def shard(self, index: int) -> Path:
        return self.shards / shard_filename(self.split, self.pack_size, index)

    def record(self, index: int) -> Path:
        return self.done / f"{index:05d}.json"

    def pack_hashes(self, index: int) -> Path:
        return self.done / f"{index:05d}.packs.npy"

    def rejects(self, index: int) -> Path:
        return self.done / f"{index:05d}.rejects.jsonl"


@dataclass(frozen=True)
class ShardJob:
    """All a worker needs to pack any shard of one run (picklable: it travels to the workers)."""

    opts: PackOptions
    inputs: tuple[Path, ...]
    text: ResolvedText | None
    eos_id: int
    check_eos: bool  # pre-tokenized input without a given EOS: every row must end with the inferred one
    run_id: str
    staging: StagingPaths
    scratch_dir: Path | None  # None: the worker's temporary directory

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


@dataclass
class ShardOutcome:
    """What one shard wrote and measured (a ``done/`` record); no tokens, a few hundred bytes."""

    index: int
    counts: Counts
    num_packs: int
    runtime_tokens: int
    max_length: int
    max_per_pack: int
    min_pack_sum: int
    fingerprint: dict[str, Any]  # PackedFingerprinter.state()
    fingerprint_result: dict[str, Any]  # the shard's own fingerprints, checked when the shard is reused
    run_id: str
    seconds: float
    cpu_seconds: float = 0.0  # this worker's CPU time on the shard
    peak_rss_mb: float = 0.0  # the worker process's peak resident memory so far
    input_digests: dict[str, str] = field(default_factory=dict)  # input index -> its digest (the slice's)

    def to_json(self) -> bytes:
        return orjson.dumps({"version": STAGING_VERSION, **asdict(self)})

    @classmethod
    def from_json(cls, data: bytes) -> ShardOutcome:
        raw = orjson.loads(data)
        if raw.pop("version", None) != STAGING_VERSION:
            raise ValueError("another staging version")
        raw["counts"] = Counts(**raw["counts"])
        return cls(**raw)


def pack_shard(job: ShardJob, piece: ShardSlice) -> ShardOutcome:
    """Pass 1, plan and pass 2 of one shard, on this worker; the shard's file, its rejects and its
    ``done/`` record are written atomically, the record last (its presence says the shard is complete)."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    staging, opts = job.staging, job.opts
    staging.shards.mkdir(parents=True, exist_ok=True)
    staging.done.mkdir(parents=True, exist_ok=True)
    scratch = job.scratch_dir or Path(tempfile.gettempdir())
    store = ScratchStore(
        scratch / f"seqpack-shard-{job.run_id[:12]}-{piece.index:05d}-{uuid.uuid4().hex[:8]}"
    )
    fingerprinter = PackedFingerprinter(keep_packs=True)
    packed = staging.shard(piece.index)
    # the record's input hash: this worker hashes its own inputs beside pass 1 (the driver reads none)
    hashing = _BackgroundHash([job.inputs[i] for i in piece.hashes])
    try:
        with (
            atomic_path(staging.rejects(piece.index), overwrite=True) as rejects_tmp,
            open(rejects_tmp, "wb") as rejects,
        ):
            spool = _SpoolToScratch(as_paths(list(job.inputs)), store, rejects, job.run_id)
            _spool_slice(job, piece, spool)
        lengths = np.concatenate(spool.lengths) if spool.lengths else np.zeros(0, np.int64)
        stats = (0, 0, 0)
        num_packs = runtime_tokens = 0
        if len(lengths):
            plan = pack_lengths(
                lengths,
                opts.size.pack_size,
                algorithm=opts.algorithm,
                seed=opts.packing_seed,
                cost=opts.size.cost_model,
            )
            store.offsets()
            # written beside the staged shards, never among them: a worker killed mid-write leaves its
            # partial file where no commit looks
            partial = staging.partial / f"{packed.name}.{uuid.uuid4().hex[:8]}"
            staging.partial.mkdir(exist_ok=True)
            write_packed(
                partial,
                store.read,
                plan.items,
                plan.pack_offsets,
                on_row_group=lambda _p, _t: fault_point("shard"),
                layout=Layout.bridge,
                fingerprinter=fingerprinter,
                key_value={PARQUET_RUN_ID: job.run_id.encode()},
            )
            _fsync(partial)
            os.replace(partial, packed)
            values = plan.bridge_metadata()
            stats = (values["dataset_max_seqlen"], values["max_samples_per_bin"], values["min_packed_seqlen"])
            num_packs, runtime_tokens = plan.num_packs, int(plan.total_length)
        else:
            packed.unlink(missing_ok=True)  # no packs: no file (Bridge refuses an empty one)
    finally:
        store.remove()
    outcome = ShardOutcome(
        piece.index,
        spool.counts,
        num_packs,
        runtime_tokens,
        *stats,
        fingerprinter.state(),
        fingerprinter.result().to_dict(),
        job.run_id,
        time.perf_counter() - t0,
        time.process_time() - cpu0,
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        dict(zip(map(str, piece.hashes), hashing.digests(), strict=True)),
    )
    with atomic_path(staging.pack_hashes(piece.index), overwrite=True) as tmp, open(tmp, "wb") as handle:
        np.save(handle, fingerprinter.pack_hashes(), allow_pickle=False)
    with atomic_path(staging.record(piece.index), overwrite=True) as tmp:
        tmp.write_bytes(outcome.to_json())
    return outcome


def _spool_slice(job: ShardJob, piece: ShardSlice, spool: _SpoolToScratch) -> None:
    """Convert and shape the slice's chunks in input order (one core: the engine runs shards side by side)."""
    converter = ChunkToExamples(spool.paths, job.text)
    shape_job = _ShapeChunk(converter, job.shaping(), infer_eos=job.check_eos)
    chunks = iter_chunks(list(job.inputs), chunk_rows_for(job.text, job.opts.input.chunk_rows), piece.sources)
    for number, chunk in enumerate(chunks):
        if number % piece.every != piece.offset:
            continue
        examples, shaped = shape_job(chunk)
        spool.add(examples, shaped, shape_job.spec)
        fault_point("read")


def read_outcome(staging: StagingPaths, index: int) -> ShardOutcome | None:
    """A finished shard's record, or ``None`` (not finished, or not readable as one)."""
    try:
        return ShardOutcome.from_json(staging.record(index).read_bytes())
    except (OSError, ValueError, TypeError, KeyError, orjson.JSONDecodeError):
        return None


@dataclass
class ShardedRun:
    """A sharded run, resolved on the driver before any shard starts."""

    job: ShardJob
    slices: list[ShardSlice]
    outputs: _Outputs
    record: PackRecord  # as resolving knows it (the commit adds what the shards measured)
    resumed: bool
    lock: OutputLock

    def release(self) -> None:
        """Let another run write to the output directory (after the commit, or on any error)."""
        self.lock.release()


def check_sharded(opts: PackOptions) -> None:
    """Usage errors of a sharded run, before any cluster is joined: each shard is planned alone, so
    Bridge's exact rows (one plan over all samples) cannot be made, and only Bridge's layout is sharded."""
    opts.check()
    if opts.run.layout is not Layout.bridge:
        raise UsageError(f"the ray engine writes Bridge's layout only ({param('layout')} bridge)")
    if opts.bridge_compat:
        raise UsageError(
            f"{param('bridge_compat')} needs one plan over all samples, and the ray engine plans each shard "
            "alone; pack on one machine for Bridge's exact rows"
        )


def prepare_sharded(opts: PackOptions, shards: int) -> ShardedRun:
    """Resolve the run as the local pipeline does, infer the EOS from the first chunk (as it does), and
    open the staging directory: a staging directory of the same command is resumed (its run id kept),
    one of another command is refused unless ``overwrite``."""
    check_sharded(opts)
    run = _resolve(opts)  # refuses an existing set of this split and size, a file or shards, unless overwrite
    inputs = list(run.inputs)
    slices = slice_inputs(inputs, shards)
    eos_id, check_eos = run.eos_id, run.eos_id is None
    if eos_id is None:
        eos_id = _infer_eos(inputs, run.text, opts)
    staging = StagingPaths(opts.run.out_dir, opts.run.split, opts.size.pack_size)
    identity = _identity(run.record.to_dict(), inputs, shards)
    opts.run.out_dir.mkdir(parents=True, exist_ok=True)
    lock = claim_output_dir(opts.run.out_dir)  # one driver per output directory, as locally
    try:
        run_id, resumed = _open_staging(staging, identity, run.record.run_id, opts.run.overwrite)
    except BaseException:
        lock.release()
        raise
    record = replace(run.record, run_id=run_id)  # a resumed run keeps the staged run's id
    job = ShardJob(
        opts, tuple(inputs), run.text, int(eos_id), check_eos, run_id, staging, opts.run.scratch_dir
    )
    return ShardedRun(job, slices, run.outputs, record, resumed, lock)


def _infer_eos(inputs: list[Path], text: ResolvedText | None, opts: PackOptions) -> int:
    """The local pipeline's rule: the most common last token of the first chunk's rows."""
    first = next(iter_chunks(inputs, chunk_rows_for(text, opts.input.chunk_rows)), None)
    if first is None:
        raise DataError(f"{', '.join(as_paths(inputs))}: empty input (no samples)")
    examples = ChunkToExamples(as_paths(inputs), text)(first)
    return most_common_last_token(examples.tokens, np.cumsum(examples.lengths))


def _identity(record: dict[str, Any], inputs: list[Path], shards: int) -> str:
    """What makes two commands the same run: the record's settings and the inputs' sizes and times."""
    settings = {k: v for k, v in record.items() if k not in ("run_id", "version")}
    stats = []
    for path in inputs:
        st = path.stat()
        stats.append([os.fspath(path), st.st_size, st.st_mtime_ns])
    text = orjson.dumps(
        {"settings": settings, "inputs": stats, "shards": shards}, option=orjson.OPT_SORT_KEYS
    )
    return hashlib.sha256(text).hexdigest()


def _open_staging(staging: StagingPaths, identity: str, run_id: str, overwrite: bool) -> tuple[str, bool]:
    """The run id to write under: the staged run's when it is the same command (resume), else ``run_id``."""
    manifest = staging.root / "run.json"
    if staging.root.exists():
        try:
            staged = orjson.loads(manifest.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            staged = {}
        same = staged.get("identity") == identity and staged.get("version") == STAGING_VERSION
        if same and not overwrite:
            return str(staged["run_id"]), True
        if not same and not overwrite:
            raise UsageError(
                f"{staging.root}: a stopped run of another command is staged here "
                f"(pass {param('overwrite')} to start over)"
            )
        shutil.rmtree(staging.root)
    staging.root.mkdir(parents=True)
    with atomic_path(manifest) as tmp:
        tmp.write_bytes(orjson.dumps({"version": STAGING_VERSION, "identity": identity, "run_id": run_id}))
    return run_id, False


def commit_sharded(
    sharded: ShardedRun, outcomes: list[ShardOutcome], seconds: dict[str, float]
) -> PackResult:
    """Combine the shards' records into one metadata entry, concatenate their rejects, and put the packs
    in place with one rename (the order of the local commit: metadata, rejects, packs)."""
    job, opts = sharded.job, sharded.job.opts
    staging = job.staging
    outcomes = sorted(outcomes, key=lambda o: o.index)
    counts = Counts()
    fingerprinter = PackedFingerprinter()
    for outcome in outcomes:
        for name, value in asdict(outcome.counts).items():
            setattr(counts, name, getattr(counts, name) + value)
        fingerprinter.merge(
            outcome.fingerprint, np.load(staging.pack_hashes(outcome.index), allow_pickle=False)
        )
    paths = ", ".join(as_paths(list(job.inputs)))
    if counts.samples_in == 0:
        raise DataError(f"{paths}: empty input (no samples)")
    if counts.sequences == 0:
        raise DataError(f"{paths}: no sample fits max length {opts.max_seq_length}; see the rejects")
    packed = [o for o in outcomes if o.num_packs]
    num_packs = sum(o.num_packs for o in outcomes)
    runtime_tokens = sum(o.runtime_tokens for o in outcomes)
    values = bridge_metadata_values(
        max_length=max(o.max_length for o in packed),
        max_per_pack=max(o.max_per_pack for o in packed),
        sequences=counts.sequences,
        packs=num_packs,
        total_length=runtime_tokens,
        pack_size=opts.size.pack_size,
        min_pack_sum=min(o.min_pack_sum for o in packed),
    )
    pack_counts = counts.record(num_packs)
    record = (
        sharded.record.with_eos(job.eos_id)
        .with_plan(opts.algorithm, _cost_model_record(opts))
        .with_fingerprint(fingerprinter.result().to_dict())
        .committed(_input_hash(job, outcomes), pack_counts)
    )
    engine = {"name": "ray", "shards": len(sharded.slices), "planned": "per shard"}
    entry = MetadataEntry.from_values(values, {**record.to_dict(), "engine": engine})
    outputs = sharded.outputs
    write_metadata_entry(outputs.metadata, entry)
    fault_point("commit")
    with atomic_path(outputs.rejects, overwrite=True) as tmp, open(tmp, "wb") as out:
        for outcome in outcomes:
            with open(staging.rejects(outcome.index), "rb") as part:
                shutil.copyfileobj(part, out)
    fault_point("rename")
    wanted = {staging.shard(o.index).name for o in packed}
    for leftover in staging.shards.iterdir():  # only the shards of the records go in
        if leftover.name not in wanted:
            leftover.unlink()
    _swap_in(staging.shards, staging.final, staging.root / "replaced")
    # a one-file set of this split replaced with --overwrite (_resolve refused it otherwise): the sidecar
    # entry is this run's now, so the old file would only be refused as a mix
    outputs.packed.unlink(missing_ok=True)
    shutil.rmtree(staging.root, ignore_errors=True)
    return PackResult(
        staging.final,
        outputs.metadata,
        outputs.rejects,
        entry,
        record,
        counts,
        num_packs,
        runtime_tokens,
        opts.size.pack_size,
        seconds,
    )


def _input_hash(job: ShardJob, outcomes: list[ShardOutcome]) -> str:
    """The record's input hash from the digests the shards computed (each input hashed by one shard)."""
    digests: dict[str, str] = {}
    for outcome in outcomes:
        digests.update(outcome.input_digests)
    missing = [os.fspath(p) for i, p in enumerate(job.inputs) if str(i) not in digests]
    if missing:
        raise DataError(f"{missing[0]}: no shard hashed this input (a staged record of another version?)")
    return combine_input_digests([digests[str(i)] for i in range(len(job.inputs))])


def _swap_in(staged: Path, final: Path, trash: Path) -> None:
    """Rename the staged shards into place; a previous set (``--overwrite``) is moved aside first and then
    removed, so the final name only ever holds one complete set."""
    staged.mkdir(parents=True, exist_ok=True)
    if final.exists():
        os.replace(final, trash)
    os.replace(staged, final)
    fsync_dir(final.parent)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
