"""The Ray Data driver of ``seqpack pack --engine ray``: one task per shard; a task whose worker dies (a
killed process, a lost node) is run again by Ray Data (its default: retry until done) and the shard starts
over; the driver keeps only the shards' small records (docs/scale.md).

``ray`` is imported inside :func:`pack_on_ray` only: it is an optional extra.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

from seqpack.data.pipeline import (
    PackOptions,
    PackResult,
    ShardedRun,
    ShardJob,
    ShardOutcome,
    ShardSlice,
    check_sharded,
    commit_sharded,
    prepare_sharded,
    read_outcome,
)
from seqpack.engine._task import run_shard
from seqpack.errors import DataError, InputError, SeqpackError, UsageError, param


def _shard_row(row: dict[str, Any], job: ShardJob, slices: tuple[ShardSlice, ...]) -> dict[str, Any]:
    outcome, reused = run_shard(job, slices[int(row["index"])])
    return {"index": outcome.index, "packs": outcome.num_packs, "reused": reused}


def pack_on_ray(opts: PackOptions, *, address: str | None = None, shards: int | None = None) -> PackResult:
    """Pack ``opts``' inputs on a Ray cluster into a sharded set (``{split}_{N}/`` beside the sidecar).

    ``address``: a running cluster (``"auto"``, ``"host:port"``); ``None`` uses the cluster this process
    is connected to, else starts a Ray instance on this machine for the run -- never one found through
    ``RAY_ADDRESS`` or a cluster someone else started here (joining is what ``"auto"`` asks for).
    ``shards``: default one per CPU of the cluster. A stopped run of the same command is resumed (its
    checked shards reused).
    """
    check_sharded(opts)
    if shards is not None and shards < 1:
        raise UsageError(f"{param('shards')} must be >= 1, got {shards}")
    try:
        import ray
    except ImportError:
        raise UsageError("the ray engine needs `pip install seqpack[ray]` (ray[data])") from None
    t0 = time.perf_counter()
    started = False
    if not ray.is_initialized():
        try:
            ray.init(address=address or "local", include_dashboard=False, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            if address is None:
                raise InputError(f"cannot start Ray on this machine ({exc})") from None
            raise InputError(f"{param('ray_address')} {address}: cannot connect to Ray ({exc})") from None
        started = True
    try:
        seconds: dict[str, float] = {"cluster": time.perf_counter() - t0}
        count = shards if shards is not None else max(1, int(ray.cluster_resources().get("CPU", 1)))
        sharded = prepare_sharded(opts, count)
        try:
            return _run(ray, sharded, opts, seconds)
        finally:
            sharded.release()
    finally:
        if started:
            ray.shutdown()


def _run(ray: Any, sharded: ShardedRun, opts: PackOptions, seconds: dict[str, float]) -> PackResult:
    """Map the shards, then commit them (the driver's part after resolving)."""
    ray.data.DataContext.get_current().enable_progress_bars = not opts.run.quiet
    if opts.run.quiet:  # Ray Data logs each dataset's start and end at INFO on stderr
        logging.getLogger("ray.data").setLevel(logging.WARNING)
    t1 = time.perf_counter()
    try:
        rows = _map_shards(ray, sharded)
    except Exception as exc:  # a shard's own error (bad input) comes back wrapped by Ray: unwrap it
        raise (_seqpack_cause(exc) or exc) from None
    seconds["shards"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    outcomes = _outcomes(sharded)
    result = commit_sharded(sharded, outcomes, seconds)
    seconds["commit"] = time.perf_counter() - t2
    result.engine.update(
        shards=float(len(outcomes)),
        reused_shards=float(sum(bool(r["reused"]) for r in rows)),
        shard_cpu_seconds=sum(o.cpu_seconds for o in outcomes),
        worker_peak_rss_mb=max(o.peak_rss_mb for o in outcomes),
        # each shard is planned alone: the packs to compare with (ceil(runtime tokens / N), one plan's floor)
        packs_lower_bound=float(-(-result.runtime_tokens // result.pack_size)),
    )
    return result


def _map_shards(ray: Any, sharded: ShardedRun) -> list[dict[str, Any]]:
    """One Ray Data task per shard (one CPU each); Ray reruns a task whose worker died."""
    slices = tuple(sharded.slices)
    items = [{"index": s.index} for s in slices]
    rows: list[dict[str, Any]] = (
        ray.data.from_items(items, override_num_blocks=len(items))
        .map(
            functools.partial(_shard_row, job=sharded.job, slices=slices),
            num_cpus=1,
        )
        .take_all()
    )
    return rows


def _outcomes(sharded: ShardedRun) -> list[ShardOutcome]:
    outcomes = []
    for piece in sharded.slices:
        outcome = read_outcome(sharded.job.staging, piece.index)
        if outcome is None:
            record = sharded.job.staging.record(piece.index)
            raise DataError(f"{record}: shard {piece.index} finished without its record")
        outcomes.append(outcome)
    return outcomes


def _seqpack_cause(exc: BaseException) -> SeqpackError | None:
    """The seqpack error a shard raised, found through Ray's wrappers (``cause``, ``__cause__``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, SeqpackError):
            return current
        seen.add(id(current))
        current = getattr(current, "cause", None) or current.__cause__ or current.__context__
    return None
