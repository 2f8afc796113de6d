"""One shard's task on a worker: reuse a finished shard after checking its content, else pack it.

No Ray here (the task is a plain function, tested without a cluster); the driver in ``_ray`` maps it.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from seqpack.data.format import PARQUET_RUN_ID
from seqpack.data.packed import fingerprint_packed
from seqpack.data.pipeline import ShardJob, ShardOutcome, ShardSlice, pack_shard, read_outcome
from seqpack.errors import SeqpackError

#: The fingerprint fields a reused shard must reproduce when it is read again.
_CHECKED = ("content", "packs", "num_sequences", "num_packs", "num_tokens", "num_supervised")


def shard_is_intact(job: ShardJob, outcome: ShardOutcome) -> bool:
    """Whether a finished shard of a stopped run can be reused: same run, its files there, and its file's
    content (read again and fingerprinted) what its record says. Never assumed from the record alone."""
    staging = job.staging
    index = outcome.index
    if outcome.run_id != job.run_id:
        return False
    if not (staging.pack_hashes(index).is_file() and staging.rejects(index).is_file()):
        return False
    path = staging.shard(index)
    if outcome.num_packs == 0:
        return not path.exists()
    try:
        footer = pq.read_metadata(path).metadata or {}
        if footer.get(PARQUET_RUN_ID, b"").decode(errors="replace") != job.run_id:
            return False
        found = fingerprint_packed(path).to_dict()
    except (SeqpackError, OSError, pa.ArrowException, ValueError):
        return False
    return all(found[key] == outcome.fingerprint_result[key] for key in _CHECKED)


def run_shard(job: ShardJob, piece: ShardSlice) -> tuple[ShardOutcome, bool]:
    """The shard's outcome and whether it was reused from a stopped run (checked) rather than packed."""
    done = read_outcome(job.staging, piece.index)
    if done is not None and shard_is_intact(job, done):
        return done, True
    return pack_shard(job, piece), False
