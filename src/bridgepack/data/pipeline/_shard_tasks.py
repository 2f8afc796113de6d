"""The two tasks of a sharded run, as they run on a worker (no Ray here: the engine maps them).

* :func:`read_slice` (phase 1): read one slice of the inputs, convert and shape it exactly as the local
  pass 1 does, spool the shaped samples to the staging directory, and keep the slice's runtime lengths,
  samples and rejects bytes per chunk, and its rejects. The driver gathers the lengths and plans once.
* :func:`write_shard` (phase 2): write one output shard, a contiguous range of the plan's packs, reading
  its samples from the spools of every slice, with the local writer (the same row groups, footers and
  fingerprints).

A task whose worker dies is run again and starts over: a retried slice first clears its own partial
spool; a shard is written under ``partial/`` and renamed into ``shards/`` when complete.
"""

from __future__ import annotations

import os
import resource
import shutil
import time
import uuid
from pathlib import Path

import numpy as np

from bridgepack._faults import fault_point
from bridgepack._io import atomic_path
from bridgepack.data.packset import PARQUET_RUN_ID, Layout
from bridgepack.data.pipeline._input_digest import BackgroundHash
from bridgepack.data.pipeline._pass1 import ShapeChunk, SpoolToScratch
from bridgepack.data.pipeline._scratch import ScratchStore, SpoolReader
from bridgepack.data.pipeline._staging import (
    OutputShard,
    ShardJob,
    ShardOutcome,
    ShardSlice,
    SliceLengths,
    SliceOutcome,
)
from bridgepack.data.pipeline._write import write_packed
from bridgepack.data.samples import ChunkToExamples, as_paths, chunk_rows_for, iter_chunks
from bridgepack.errors import BridgepackError
from bridgepack.fingerprint import PackedFingerprinter

#: The attribute of an error raised in a slice that holds the number of the chunk it was raised on (the
#: engine orders the errors of several slices as the local pack would meet them).
FAILED_CHUNK = "bridgepack_chunk"


def read_slice(job: ShardJob, piece: ShardSlice) -> SliceOutcome:
    """Phase 1 of one slice on this worker: its spool, lengths, rejects and record (the record last)."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    staging = job.staging
    staging.read.mkdir(parents=True, exist_ok=True)
    spool_dir = staging.spool(piece.index)
    shutil.rmtree(spool_dir, ignore_errors=True)  # what a killed attempt of this task left
    store = ScratchStore(spool_dir, offsets_on_disk=True)
    # the record's input hash: this worker hashes its own inputs beside the pass (the driver reads none)
    hashing = BackgroundHash([job.inputs[i] for i in piece.hashes])
    try:
        with (
            atomic_path(staging.rejects(piece.index), overwrite=True) as rejects_tmp,
            open(rejects_tmp, "wb") as rejects,
        ):
            spool = SpoolToScratch(as_paths(list(job.inputs)), store, rejects, job.run_id)
            rejects_ends = _spool_slice(job, piece, spool)
        sizes = store.sizes()
    except BaseException:
        store.remove()
        raise
    store.close()
    lengths = SliceLengths(
        np.concatenate([np.zeros(0, np.int32), *spool.lengths]).astype(np.int32),
        np.array([len(a) for a in spool.lengths], np.int64),
        np.array(rejects_ends, np.int64),
    )
    lengths.save(staging.slice_lengths(piece.index))
    outcome = SliceOutcome(
        piece.index,
        spool.counts,
        spool.refused,
        spool.first_rejected,
        lengths.digest(),
        sizes,
        job.run_id,
        time.perf_counter() - t0,
        time.process_time() - cpu0,
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        dict(zip(map(str, piece.hashes), hashing.digests(), strict=True)),
    )
    with atomic_path(staging.slice_record(piece.index), overwrite=True) as tmp:
        tmp.write_bytes(outcome.to_json())
    return outcome


def _spool_slice(job: ShardJob, piece: ShardSlice, spool: SpoolToScratch) -> list[int]:
    """Convert and shape the slice's chunks in input order (one core: the engine runs tasks side by side);
    returns the rejects file's size after each chunk."""
    converter = ChunkToExamples(spool.paths, job.text)
    shape_job = ShapeChunk(converter, job.shaping(), infer_eos=job.check_eos)
    chunks = iter_chunks(list(job.inputs), chunk_rows_for(job.text, job.opts.input.chunk_rows), piece.sources)
    ends = []
    for number, chunk in enumerate(chunks):
        if number % piece.every != piece.offset:
            continue
        try:
            examples, shaped = shape_job(chunk)
        except BridgepackError as exc:  # where in the local order it happened: the driver reports the first
            setattr(exc, FAILED_CHUNK, number)
            raise
        spool.add(examples, shaped, shape_job.spec)
        ends.append(spool.rejects.tell())
        fault_point("shard")
    return ends


def spool_is_intact(job: ShardJob, outcome: SliceOutcome) -> bool:
    """Whether a finished slice of a stopped run can be reused: same run, its rejects there, its lengths
    those of its record, and its spool files exactly the sizes those lengths make. Never assumed from the
    record alone (a spool is read again only by the shards; their own content is checked apart)."""
    staging, index = job.staging, outcome.index
    if outcome.run_id != job.run_id or not staging.rejects(index).is_file():
        return False
    try:
        lengths = SliceLengths.load(staging.slice_lengths(index))
        sizes = {
            f.name: f.stat().st_size for f in staging.spool(index).iterdir() if f.name in outcome.spool_bytes
        }
    except (OSError, ValueError, KeyError):
        return False
    n = len(lengths.lengths)
    tokens = int(lengths.lengths.sum(dtype=np.int64)) + n * job.shaping().shift
    expected = {"tokens.u32": 4 * tokens, "mask.u8": tokens, "offsets.i64": 8 * (n + 1)}
    return (
        lengths.digest() == outcome.lengths_sha256
        and n == outcome.counts.sequences
        and int(lengths.chunks.sum()) == n
        and sizes == outcome.spool_bytes == expected
    )


def write_shard(job: ShardJob, shard: OutputShard) -> ShardOutcome:
    """Phase 2 of one output shard on this worker: its packs from the spools, its file, its pack hashes
    and its ``done/`` record (the record last)."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    staging = job.staging
    staging.shards.mkdir(parents=True, exist_ok=True)
    staging.done.mkdir(parents=True, exist_ok=True)
    staging.partial.mkdir(exist_ok=True)
    with np.load(staging.plan(shard.index), allow_pickle=False) as data:
        slices, items, pack_offsets = data["slices"], data["items"], data["pack_offsets"]
    fingerprinter = PackedFingerprinter(keep_packs=True)
    packed = staging.shard(shard.index)
    reader = _Spools(job, slices, items)
    # written beside the staged shards, never among them: a worker killed mid-write leaves its partial
    # file where no commit looks
    partial = staging.partial / f"{packed.name}.{uuid.uuid4().hex[:8]}"
    try:
        write_packed(
            partial,
            reader.read,
            np.arange(len(items), dtype=np.int64),
            pack_offsets,
            on_row_group=lambda _p, _t: fault_point("shard"),
            layout=Layout.bridge,
            fingerprinter=fingerprinter,
            key_value={PARQUET_RUN_ID: job.run_id.encode()},
        )
        _fsync(partial)
        os.replace(partial, packed)
    finally:
        reader.close()
        partial.unlink(missing_ok=True)
    outcome = ShardOutcome(
        shard.index,
        shard.first_pack,
        shard.num_packs,
        fingerprinter.state(),
        fingerprinter.result().to_dict(),
        job.run_id,
        time.perf_counter() - t0,
        time.process_time() - cpu0,
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    with atomic_path(staging.pack_hashes(shard.index), overwrite=True) as tmp, open(tmp, "wb") as handle:
        np.save(handle, fingerprinter.pack_hashes(), allow_pickle=False)
    with atomic_path(staging.record(shard.index), overwrite=True) as tmp:
        tmp.write_bytes(outcome.to_json())
    return outcome


class _Spools:
    """An output shard's samples: sample ``j`` is sample ``items[j]`` of slice ``slices[j]``'s spool.

    :meth:`read` reads a row group's samples spool by spool (one batch of positional reads each) and puts
    them back in the plan's order."""

    def __init__(self, job: ShardJob, slices: np.ndarray, items: np.ndarray) -> None:
        self._job = job
        self._slices = slices
        self._items = items
        self._open: dict[int, SpoolReader] = {}

    def _spool(self, index: int) -> SpoolReader:
        if index not in self._open:
            self._open[index] = SpoolReader(self._job.staging.spool(index))
        return self._open[index]

    def read(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        slices, items = self._slices[positions], self._items[positions]
        order = np.argsort(slices, kind="stable")
        bounds = np.flatnonzero(np.diff(slices[order])) + 1
        parts = [
            self._spool(int(slices[group[0]])).read(items[group])
            for group in np.split(order, bounds)
            if len(group)
        ]
        tokens = np.concatenate([p[0] for p in parts])
        mask = np.concatenate([p[1] for p in parts])
        sorted_lengths = np.concatenate([p[2] for p in parts])
        lengths = np.empty_like(sorted_lengths)
        lengths[order] = sorted_lengths
        sorted_starts = np.cumsum(sorted_lengths) - sorted_lengths
        starts = np.empty_like(sorted_starts)
        starts[order] = sorted_starts
        # every sample's tokens, in the plan's order: sample j's run of the sorted buffer, one gather
        out_starts = np.cumsum(lengths) - lengths
        index = np.repeat(starts - out_starts, lengths) + np.arange(int(lengths.sum()))
        return tokens[index], mask[index], lengths

    def close(self) -> None:
        for spool in self._open.values():
            spool.close()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
