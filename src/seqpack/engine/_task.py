"""The two tasks of a sharded run on a worker, each reused from a stopped run when its content checks out.

No Ray here (the tasks are plain functions, tested without a cluster); the driver in ``_ray`` maps them.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from seqpack.data.format import PARQUET_RUN_ID
from seqpack.data.packed import fingerprint_packed
from seqpack.data.pipeline import (
    OutputShard,
    ShardJob,
    ShardOutcome,
    ShardSlice,
    SliceOutcome,
    read_slice,
    spool_is_intact,
    write_shard,
)
from seqpack.errors import SeqpackError

#: The fingerprint fields a reused shard must reproduce when it is read again.
_CHECKED = ("content", "packs", "num_sequences", "num_packs", "num_tokens", "num_supervised")


def shard_is_intact(job: ShardJob, shard: OutputShard, outcome: ShardOutcome) -> bool:
    """Whether a finished output shard of a stopped run can be reused: same run and range of the plan,
    its files there, and its file's content (read again and fingerprinted) what its record says. Never
    assumed from the record alone."""
    staging = job.staging
    if outcome.run_id != job.run_id or (outcome.first_pack, outcome.num_packs) != (
        shard.first_pack,
        shard.num_packs,
    ):
        return False
    if not staging.pack_hashes(shard.index).is_file():
        return False
    path = staging.shard(shard.index)
    try:
        footer = pq.read_metadata(path).metadata or {}
        if footer.get(PARQUET_RUN_ID, b"").decode(errors="replace") != job.run_id:
            return False
        found = fingerprint_packed(path).to_dict()
    except (SeqpackError, OSError, pa.ArrowException, ValueError):
        return False
    return all(found[key] == outcome.fingerprint_result[key] for key in _CHECKED)


def run_slice(job: ShardJob, piece: ShardSlice) -> tuple[SliceOutcome, bool]:
    """Phase 1: the slice's outcome and whether it was reused from a stopped run (checked) rather than
    read again."""
    done = SliceOutcome.load(job.staging.slice_record(piece.index))
    if done is not None and spool_is_intact(job, done):
        return done, True
    return read_slice(job, piece), False


def run_shard(job: ShardJob, shard: OutputShard) -> tuple[ShardOutcome, bool]:
    """Phase 2: the output shard's outcome and whether it was reused from a stopped run (checked) rather
    than written again."""
    done = ShardOutcome.load(job.staging.record(shard.index))
    if done is not None and shard_is_intact(job, shard, done):
        return done, True
    return write_shard(job, shard), False
