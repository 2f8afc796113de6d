"""A sharded pack set: the pipeline cut into tasks that run anywhere (``bridgepack pack --engine ray``),
with **one plan over all samples**, so a sharded run makes exactly the local pack's packs::

    phase 1, a task per input slice      read, convert, shape exactly as locally; spool the shaped
                                         samples to the staging directory; lengths, rejects, record
    driver                               gather the lengths in the local pipeline's order (4 bytes a
                                         sample), plan once with the local planner, cut the packs into
                                         contiguous ranges of whole row groups, one per output shard
    phase 2, a task per output shard     read its packs' samples from the spools, write its file with
                                         the local writer (the local row groups, footers, fingerprints)
    driver                               commit: metadata, rejects (in the local order), one rename

The staging directory (:mod:`bridgepack.data.pipeline._staging`) holds everything until the commit, which
writes in the local order: metadata, rejects, then the packs by one rename of the staged directory, so a
run killed before that rename leaves no packed file under a name any reader looks at.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from bridgepack._faults import fault_point
from bridgepack._io import atomic_path, fsync_dir, make_dirs, remove_made_dirs
from bridgepack.data.packset import (
    ENGINE_KEY,
    ROW_GROUP_SIZE,
    SHARD_COUNT_KEY,
    Layout,
    MetadataEntry,
    PackRecord,
    most_common_last_token,
    write_metadata_entry,
)
from bridgepack.data.pipeline._input_digest import combine_input_digests
from bridgepack.data.pipeline._lock import OutputLock, claim_output_dir
from bridgepack.data.pipeline._options import PackOptions
from bridgepack.data.pipeline._pass1 import check_packable
from bridgepack.data.pipeline._result import Counts, PackResult
from bridgepack.data.pipeline._run import Outputs, cost_model_record, plan_packs, resolve_run
from bridgepack.data.pipeline._staging import (
    STAGING_VERSION,
    OutputShard,
    RunFacts,
    ShardJob,
    ShardOutcome,
    ShardSlice,
    SliceLengths,
    SliceOutcome,
    StagingPaths,
    identity_differences,
    staging_identity,
)
from bridgepack.data.samples import ChunkToExamples, as_paths, chunk_rows_for, iter_chunks
from bridgepack.data.samples.text import ResolvedText
from bridgepack.errors import DataError, UsageError, param
from bridgepack.fingerprint import PackedFingerprinter


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


@dataclass
class ShardedRun:
    """A sharded run, resolved on the driver before any task starts."""

    job: ShardJob
    slices: list[ShardSlice]
    outputs: Outputs
    record: PackRecord  # as resolving knows it (the commit adds what the shards measured)
    resumed: bool
    lock: OutputLock
    made: list[Path]  # the directories this run created (the output directory and its parents)

    def release(self) -> None:
        """Let another run write to the output directory (after the commit, or on any error)."""
        self.lock.release()

    def discard(self) -> None:
        """After a run failed on its data (or a full disk): remove its staging directory and the folders it
        made, as a failed local pack leaves nothing; a corrected run then starts over instead of being
        refused as another run. A stopped run (killed, interrupted) keeps them: it resumes."""
        shutil.rmtree(self.job.staging.root, ignore_errors=True)
        self.release()
        remove_made_dirs(self.made)


def check_sharded(opts: PackOptions) -> None:
    """Usage errors of a sharded run, before any cluster is joined: only Bridge's layout is sharded, and
    the spools go to the staging directory (which every node sees), never to a scratch directory."""
    opts.check()
    if opts.run.layout is not Layout.bridge:
        raise UsageError(f"the ray engine writes Bridge's layout only ({param('layout')} bridge)")
    if opts.run.scratch_dir is not None:
        raise UsageError(
            f"the ray engine spools to the output directory's staging folder, which every node sees; "
            f"{param('scratch_dir')} is for a local pack"
        )


def prepare_sharded(opts: PackOptions, shards: int) -> ShardedRun:
    """Resolve the run as the local pipeline does, infer the EOS from the first chunk (as it does), and
    open the staging directory: a staging directory of the same command is resumed (its run id kept),
    one of another command is refused unless ``overwrite``."""
    check_sharded(opts)
    # refuses an existing set of this split and size, a file or shards, unless overwrite
    run = resolve_run(opts)
    inputs = list(run.inputs)
    slices = slice_inputs(inputs, shards)
    eos_id, check_eos = run.eos_id, run.eos_id is None
    if eos_id is None:
        eos_id = _infer_eos(inputs, run.text, opts)
    staging = StagingPaths(opts.run.out_dir, opts.run.split, opts.size.pack_size)
    identity = staging_identity(RunFacts(opts, run.text, run.record.tokenizer_sha256, shards))
    made = make_dirs(opts.run.out_dir)
    lock = claim_output_dir(opts.run.out_dir)  # one driver per output directory, as locally
    try:
        run_id, resumed = _open_staging(staging, identity, run.record.run_id, opts.run.overwrite)
    except BaseException:
        lock.release()
        remove_made_dirs(made)
        raise
    record = replace(run.record, run_id=run_id)  # a resumed run keeps the staged run's id
    job = ShardJob(opts, tuple(inputs), run.text, int(eos_id), check_eos, run_id, staging)
    return ShardedRun(job, slices, run.outputs, record, resumed, lock, made)


def _infer_eos(inputs: list[Path], text: ResolvedText | None, opts: PackOptions) -> int:
    """The local pipeline's rule: the most common last token of the first chunk's rows."""
    first = next(iter_chunks(inputs, chunk_rows_for(text, opts.input.chunk_rows)), None)
    if first is None:
        raise DataError(f"{', '.join(as_paths(inputs))}: empty input (no samples)")
    examples = ChunkToExamples(as_paths(inputs), text)(first)
    return most_common_last_token(examples.tokens, np.cumsum(examples.lengths))


def _open_staging(
    staging: StagingPaths, identity: dict[str, Any], run_id: str, overwrite: bool
) -> tuple[str, bool]:
    """The run id to write under: the staged run's when this run has its identity (resume), else
    ``run_id`` in a new staging directory; a staged run of another identity is refused (exit 2, naming
    the options that differ) unless ``overwrite``."""
    manifest = staging.root / "run.json"
    if staging.root.exists():
        try:
            staged = orjson.loads(manifest.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            staged = {}
        same_version = isinstance(staged, dict) and staged.get("version") == STAGING_VERSION
        differing = identity_differences(staged.get("identity") or {}, identity) if same_version else []
        if same_version and not differing and not overwrite:
            return str(staged["run_id"]), True
        if not overwrite:
            raise _another_run(staging, differing)
        shutil.rmtree(staging.root)
    staging.root.mkdir(parents=True)
    with atomic_path(manifest) as tmp:
        tmp.write_bytes(orjson.dumps({"version": STAGING_VERSION, "identity": identity, "run_id": run_id}))
    return run_id, False


def _another_run(staging: StagingPaths, differing: list[str]) -> UsageError:
    """A stopped run of other options is staged: name them (the inputs by what changed)."""
    names = [("the inputs (a file's list, size or time)" if n == "paths" else param(n)) for n in differing]
    what = f"with other {', '.join(names)}" if names else "by another bridgepack version"
    return UsageError(
        f"{staging.root}: a stopped run is staged here {what}; run the same command again to resume it, "
        f"or pass {param('overwrite')} to start over"
    )


@dataclass
class GlobalPlan:
    """The driver's plan of a sharded run, once the slices are read: the output shards (their sample
    lists are in ``plan/``), Bridge's values of the one plan, and where each chunk's rejects are."""

    shards: list[OutputShard]
    counts: Counts
    bridge_values: dict[str, Any]
    num_packs: int
    runtime_tokens: int
    #: ``(slice, start, stop)`` byte ranges of the slices' rejects files, in the local pipeline's order.
    rejects_ranges: list[tuple[int, int, int]]


def plan_sharded(sharded: ShardedRun, slices: list[SliceOutcome]) -> GlobalPlan:
    """Gather the slices' lengths in the local pipeline's sample order, plan them once exactly as the
    local pack does, and cut the packs into one contiguous range of whole row groups per output shard
    (at most one per slice; none empty), each written to ``plan/`` as (slice, sample) pairs."""
    job, opts = sharded.job, sharded.job.opts
    slices = sorted(slices, key=lambda o: o.index)
    counts = Counts()
    for outcome in slices:
        for name, value in asdict(outcome.counts).items():
            setattr(counts, name, getattr(counts, name) + value)
    refused = sum(o.refused for o in slices)
    first = next((o.first_rejected for o in slices if o.first_rejected), None)
    check_packable(as_paths(list(job.inputs)), counts, refused, first, opts.max_seq_length)
    parts = [SliceLengths.load(job.staging.slice_lengths(o.index)) for o in slices]
    order = _ChunkOrder.of(sharded.slices, parts)
    lengths = order.gather([p.lengths for p in parts])
    rejects = order.rejects_ranges([p.rejects_ends for p in parts])
    del parts  # the slices' own copies: the driver holds the gathered lengths only (4 bytes a sample)
    plan = plan_packs(opts, lengths)
    del lengths
    fault_point("plan")
    shards = _output_shards(plan.num_packs, len(sharded.slices))
    job.staging.plans.mkdir(parents=True, exist_ok=True)
    for shard in shards:
        lo = int(plan.pack_offsets[shard.first_pack])
        hi = int(plan.pack_offsets[shard.first_pack + shard.num_packs])
        where, items = order.locate(plan.items[lo:hi])
        offsets = plan.pack_offsets[shard.first_pack : shard.first_pack + shard.num_packs + 1] - lo
        with atomic_path(job.staging.plan(shard.index), overwrite=True) as tmp, open(tmp, "wb") as handle:
            np.savez(handle, slices=where, items=items, pack_offsets=offsets)
    return GlobalPlan(
        shards,
        counts,
        plan.bridge_metadata(),
        plan.num_packs,
        int(plan.total_length),
        rejects,
    )


@dataclass(frozen=True)
class _ChunkOrder:
    """The input chunks in the local pipeline's order (input order, then file order): chunk ``c`` is
    chunk ``local[c]`` of slice ``slice[c]``, its samples ``[start[c], start[c] + count[c])`` of the
    local order and ``[first[c], first[c] + count[c])`` of its slice. With at least as many files as
    slices, slices are contiguous groups of files, so their chunks follow one another; with fewer, chunk
    ``c`` was converted by slice ``c mod K``."""

    slice: np.ndarray
    local: np.ndarray
    first: np.ndarray
    start: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, slices: list[ShardSlice], parts: list[SliceLengths]) -> _ChunkOrder:
        per_slice = [len(p.chunks) for p in parts]
        every = slices[0].every
        if every == 1:
            slice_of = np.repeat(np.arange(len(parts)), per_slice)
            local = np.concatenate([np.zeros(0, np.int64), *(np.arange(n) for n in per_slice)])
        else:
            total = sum(per_slice)
            slice_of, local = np.arange(total) % every, np.arange(total) // every
            expected = [len(range(s.offset, total, every)) for s in slices]
            if expected != per_slice:  # pragma: no cover - a staged slice of another input
                raise DataError(
                    f"the slices' chunk counts {per_slice} do not interleave (inputs changed during the "
                    f"run? pass {param('overwrite')} to start over)"
                )
        base = np.cumsum([0, *per_slice])[:-1]
        count = np.concatenate([np.zeros(0, np.int64), *(p.chunks for p in parts)])[base[slice_of] + local]
        firsts = [np.cumsum(p.chunks) - p.chunks for p in parts]
        first = np.concatenate([np.zeros(0, np.int64), *firsts])[base[slice_of] + local]
        start = np.cumsum(count) - count
        return cls(slice_of.astype(np.int64), local.astype(np.int64), first, start, count)

    def gather(self, lengths: list[np.ndarray]) -> np.ndarray:
        """Every slice's lengths, in the local order (int32, 4 bytes a sample)."""
        if bool(np.all(np.diff(self.slice) >= 0)):  # slices follow one another: plain concatenation
            return np.concatenate([np.zeros(0, np.int32), *lengths])
        return np.concatenate(
            [np.zeros(0, np.int32)]
            + [lengths[s][f : f + n] for s, f, n in zip(self.slice, self.first, self.count, strict=True)]
        )

    def locate(self, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Samples numbered in the local order -> (slice, sample of that slice)."""
        filled = np.flatnonzero(self.count)
        chunk = filled[np.searchsorted(self.start[filled], samples, side="right") - 1]
        return self.slice[chunk].astype(np.int32), self.first[chunk] + (samples - self.start[chunk])

    def rejects_ranges(self, ends: list[np.ndarray]) -> list[tuple[int, int, int]]:
        """The slices' rejects, chunk by chunk in the local order, as byte ranges (adjacent ones merged)."""
        ranges: list[tuple[int, int, int]] = []
        for s, c in zip(self.slice.tolist(), self.local.tolist(), strict=True):
            a, b = (int(ends[s][c - 1]) if c else 0), int(ends[s][c])
            if ranges and ranges[-1][0] == s and ranges[-1][2] == a:
                ranges[-1] = (s, ranges[-1][1], b)
            elif b > a:
                ranges.append((s, a, b))
        return ranges


def _output_shards(num_packs: int, shards: int) -> list[OutputShard]:
    """``shards`` contiguous ranges of whole row groups (fewer when there are fewer row groups)."""
    groups = -(-num_packs // ROW_GROUP_SIZE)
    ranges = np.array_split(np.arange(groups), min(shards, groups)) if groups else []
    return [
        OutputShard(
            i,
            int(g[0]) * ROW_GROUP_SIZE,
            min(int(g[-1] + 1) * ROW_GROUP_SIZE, num_packs) - int(g[0]) * ROW_GROUP_SIZE,
        )
        for i, g in enumerate(ranges)
    ]


def commit_sharded(
    sharded: ShardedRun,
    plan: GlobalPlan,
    slices: list[SliceOutcome],
    shards: list[ShardOutcome],
    seconds: dict[str, float],
) -> PackResult:
    """Write the plan's metadata entry, the slices' rejects in the local order, and put the output shards
    in place with one rename (the order of the local commit: metadata, rejects, packs)."""
    job, opts = sharded.job, sharded.job.opts
    staging = job.staging
    shards = sorted(shards, key=lambda o: o.index)
    fingerprinter = PackedFingerprinter()
    for outcome in shards:
        fingerprinter.merge(
            outcome.fingerprint, np.load(staging.pack_hashes(outcome.index), allow_pickle=False)
        )
    record = (
        sharded.record.with_eos(job.eos_id)
        .with_plan(opts.algorithm, cost_model_record(opts))
        .with_fingerprint(fingerprinter.result().to_dict())
        .committed(_input_hash(job, slices), plan.counts.record(plan.num_packs))
    )
    # the output shards' count: a reader refuses the set's folder with fewer (check_shard_count)
    engine = {"name": "ray", "shards": len(sharded.slices), "planned": "once", SHARD_COUNT_KEY: len(shards)}
    entry = MetadataEntry.from_values(plan.bridge_values, {**record.to_dict(), ENGINE_KEY: engine})
    outputs = sharded.outputs
    write_metadata_entry(outputs.metadata, entry)
    fault_point("commit")
    with atomic_path(outputs.rejects, overwrite=True) as tmp, open(tmp, "wb") as out:
        _copy_ranges(staging, plan.rejects_ranges, out)
    fault_point("rename")
    wanted = {staging.shard(o.index).name for o in shards}
    for leftover in staging.shards.iterdir():  # only the shards of the records go in
        if leftover.name not in wanted:
            leftover.unlink()
    _swap_in(staging.shards, staging.final, staging.root / "replaced")
    # a one-file set of this split replaced with --overwrite (resolve_run refused it otherwise): the sidecar
    # entry is this run's now, so the old file would only be refused as a mix
    outputs.packed.unlink(missing_ok=True)
    shutil.rmtree(staging.root, ignore_errors=True)  # the spools with it
    return PackResult(
        staging.final,
        outputs.metadata,
        outputs.rejects,
        entry,
        record,
        plan.counts,
        plan.num_packs,
        plan.runtime_tokens,
        opts.size.pack_size,
        seconds,
    )


def _copy_ranges(staging: StagingPaths, ranges: list[tuple[int, int, int]], out: Any) -> None:
    handles: dict[int, Any] = {}
    try:
        for index, start, stop in ranges:
            if index not in handles:
                handles[index] = open(staging.rejects(index), "rb")  # noqa: SIM115 - closed below
            part = handles[index]
            part.seek(start)
            left = stop - start
            while left:
                block = part.read(min(left, 1 << 20))
                if not block:
                    raise DataError(f"{staging.rejects(index)}: shorter than its record")
                out.write(block)
                left -= len(block)
    finally:
        for handle in handles.values():
            handle.close()


def _input_hash(job: ShardJob, outcomes: list[SliceOutcome]) -> str:
    """The record's input hash from the digests the slices computed (each input hashed by one slice)."""
    digests: dict[str, str] = {}
    for outcome in outcomes:
        digests.update(outcome.input_digests)
    missing = [os.fspath(p) for i, p in enumerate(job.inputs) if str(i) not in digests]
    if missing:
        raise DataError(f"{missing[0]}: no slice hashed this input (a staged record of another version?)")
    return combine_input_digests([digests[str(i)] for i in range(len(job.inputs))])


def _swap_in(staged: Path, final: Path, trash: Path) -> None:
    """Rename the staged shards into place; a previous set (``--overwrite``) is moved aside first and then
    removed, so the final name only ever holds one complete set."""
    staged.mkdir(parents=True, exist_ok=True)
    if final.exists():
        os.replace(final, trash)
    os.replace(staged, final)
    fsync_dir(final.parent)
