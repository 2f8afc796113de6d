"""The two tasks of a sharded run on a worker, each reused from a stopped run when its content checks out,
and the errors they carry back to the driver.

No Ray here (the tasks are plain functions, tested without a cluster); the driver in ``_ray`` maps them.
"""

from __future__ import annotations

import errno as errnos
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from bridgepack.data.packed import fingerprint_packed
from bridgepack.data.packset import PARQUET_RUN_ID
from bridgepack.data.pipeline import (
    FAILED_CHUNK,
    OutputShard,
    ShardJob,
    ShardOutcome,
    ShardSlice,
    SliceOutcome,
    read_slice,
    spool_is_intact,
    write_shard,
)
from bridgepack.errors import BridgepackError, DataError, InputError, UsageError

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
    except (BridgepackError, OSError, pa.ArrowException, ValueError):
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


#: The error classes a task's failure is carried back as (the exit code follows the class).
_KINDS: dict[str, type[BridgepackError]] = {
    c.__name__: c for c in (DataError, InputError, UsageError, BridgepackError)
}
#: What an error of a task is ordered by when it carries no position (after those that do).
_LAST = 1 << 62


@dataclass(frozen=True)
class TaskFailure:
    """A task's own error (bad input, a full disk), carried back to the driver as data in the task's row.

    Raised in a Ray task, a bridgepack error came back as Ray's ~170-line ``RayTaskError`` traceback without
    the ``error:`` line (the exception's cause does not survive the trip); as data it crosses intact, and
    the driver raises it again: the same one line and exit code as a local pack. ``order`` places it in
    the local pack's order (slice, chunk), so that of several tasks' errors the driver raises the one a
    local pack meets first."""

    kind: str  # a bridgepack error class (_KINDS), or "OSError"
    message: str  # a bridgepack error's raw text (its parameters unrendered: the CLI shows their flags)
    order: tuple[int, int]
    errno: int | None = None
    filename: str | None = None

    @classmethod
    def of(cls, exc: BridgepackError | OSError, order: tuple[int, int]) -> TaskFailure:
        if isinstance(exc, BridgepackError):
            kind = next(c.__name__ for c in type(exc).__mro__ if c.__name__ in _KINDS)
            return cls(kind, str(exc.args[0]) if exc.args else "", order)
        filename = None if exc.filename is None else os.fspath(exc.filename)
        return cls("OSError", exc.strerror or str(exc), order, exc.errno, filename)

    def to_json(self) -> str:
        return orjson.dumps(asdict(self)).decode()

    @classmethod
    def from_json(cls, text: str) -> TaskFailure:
        raw = orjson.loads(text)
        return cls(**{**raw, "order": tuple(raw["order"])})

    def error(self) -> BridgepackError | OSError:
        """The error as the task raised it."""
        if self.kind == "OSError":
            return OSError(self.errno or errnos.EIO, self.message, self.filename)
        return _KINDS[self.kind](self.message)


def captured(
    task: Callable[[], tuple[Any, bool]], index: int, *, interleaved: bool = False
) -> dict[str, Any]:
    """Run task ``index`` (a slice or a shard) and return its row for the driver: ``reused``, and
    ``failure`` (a :class:`TaskFailure` as JSON, ``""`` when it succeeded). A bridgepack error or an OS error
    is
    the task's answer, not Ray's business: returned, never retried. Anything else (a bug, a lost worker) is
    raised for Ray to handle. ``interleaved``: the slices take every K-th chunk of the same files (an error
    is placed by its chunk first), else whole files in order (by the slice first)."""
    try:
        _, reused = task()
    except (BridgepackError, OSError) as exc:
        chunk = getattr(exc, FAILED_CHUNK, _LAST)
        order = (chunk, index) if interleaved else (index, chunk)
        return {"reused": False, "failure": TaskFailure.of(exc, order).to_json()}
    return {"reused": reused, "failure": ""}


def first_failure(rows: list[dict[str, Any]]) -> BridgepackError | OSError | None:
    """The error of the rows' tasks a local pack would meet first, or ``None``."""
    failures = [TaskFailure.from_json(str(r["failure"])) for r in rows if r.get("failure")]
    return min(failures, key=lambda f: f.order).error() if failures else None
