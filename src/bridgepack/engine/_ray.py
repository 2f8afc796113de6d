"""The Ray Data driver of ``bridgepack pack --engine ray``: two maps around one plan. Phase 1, a task per
input slice, spools the shaped samples to the staging directory; the driver gathers the lengths and plans
once, as the local pack does; phase 2, a task per output shard, writes a contiguous range of the packs. A
task whose worker dies (a killed process, a lost node) is run again by Ray Data (its default: retry until
done) and starts over (docs/scale.md).

``ray`` is imported inside :func:`pack_on_ray` only: it is an optional extra.
"""

from __future__ import annotations

import functools
import logging
import signal
import threading
import time
from typing import Any, TypeVar

from bridgepack._io import disk_full_error, is_disk_full
from bridgepack.data.pipeline import (
    GlobalPlan,
    OutputShard,
    PackOptions,
    PackResult,
    ShardedRun,
    ShardJob,
    ShardOutcome,
    ShardSlice,
    SliceOutcome,
    check_sharded,
    commit_sharded,
    plan_sharded,
    prepare_sharded,
)
from bridgepack.engine._task import captured, first_failure, run_shard, run_slice
from bridgepack.errors import BridgepackError, DataError, InputError, UsageError, param


def _slice_row(row: dict[str, Any], job: ShardJob, slices: tuple[ShardSlice, ...]) -> dict[str, Any]:
    piece = slices[int(row["index"])]
    done = captured(lambda: run_slice(job, piece), piece.index, interleaved=piece.every > 1)
    return {"index": piece.index, **done}


def _shard_row(row: dict[str, Any], job: ShardJob, shards: tuple[OutputShard, ...]) -> dict[str, Any]:
    shard = shards[int(row["index"])]
    return {"index": shard.index, **captured(lambda: run_shard(job, shard), shard.index)}


def pack_on_ray(opts: PackOptions, *, address: str | None = None, shards: int | None = None) -> PackResult:
    """Pack ``opts``' inputs on a Ray cluster into a sharded set (``{split}_{N}/`` beside the sidecar).

    ``address``: a running cluster (``"auto"``, ``"host:port"``); ``None`` uses the cluster this process
    is connected to, else starts a Ray instance on this machine for the run -- never one found through
    ``RAY_ADDRESS`` or a cluster someone else started here (joining is what ``"auto"`` asks for).
    ``shards``: the input slices of phase 1 and the most output shards of phase 2; default one per CPU
    of the cluster. A stopped run of the same command is resumed (its checked slices and shards reused).
    """
    check_sharded(opts)
    if shards is not None and shards < 1:
        raise UsageError(f"{param('shards')} must be >= 1, got {shards}")
    try:
        import ray
    except ImportError:
        raise UsageError("the ray engine needs `pip install bridgepack[ray]` (ray[data])") from None
    t0 = time.perf_counter()
    started = False
    if not ray.is_initialized():
        terminate = _sigterm_handler()
        try:
            ray.init(
                address=address or "local",
                include_dashboard=False,
                log_to_driver=False,
                # Ray's own lines ("Started a local Ray instance", "Connecting to existing Ray cluster")
                # are progress too: --quiet keeps only warnings that matter, i.e. errors
                logging_level=logging.ERROR if opts.run.quiet else logging.INFO,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            if address is None:
                raise InputError(f"cannot start Ray on this machine ({exc})") from None
            raise InputError(f"{param('ray_address')} {address}: cannot connect to Ray ({exc})") from None
        finally:
            _restore_sigterm(terminate)
        started = True
    try:
        seconds: dict[str, float] = {"cluster": time.perf_counter() - t0}
        count = shards if shards is not None else max(1, int(ray.cluster_resources().get("CPU", 1)))
        sharded = prepare_sharded(opts, count)
        try:
            return _run(ray, sharded, opts, seconds)
        except (BridgepackError, OSError) as exc:  # the data (or the disk) failed: leave nothing, as locally
            sharded.discard()
            if isinstance(exc, OSError) and is_disk_full(exc):
                raise disk_full_error(opts.run.out_dir, exc) from None
            raise
        finally:
            sharded.release()
    finally:
        if started:
            ray.shutdown()


def _sigterm_handler() -> Any:
    """The SIGTERM handler this process has (the CLI's: exit 143, as a local pack), or ``None`` off the
    main thread (where none can be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.getsignal(signal.SIGTERM)


def _restore_sigterm(handler: Any) -> None:
    """Put the SIGTERM handler back after ``ray.init``, which installs Ray's own: it printed a native stack
    dump and ended the driver with 15 (sometimes 134), where Slurm's ``scancel`` expects the documented
    143 and a stopped run that resumes (docs/scale.md)."""
    if handler is not None:
        signal.signal(signal.SIGTERM, handler)


def _run(ray: Any, sharded: ShardedRun, opts: PackOptions, seconds: dict[str, float]) -> PackResult:
    """Phase 1, the one plan, phase 2, then the commit (the driver's part after resolving)."""
    ray.data.DataContext.get_current().enable_progress_bars = not opts.run.quiet
    if opts.run.quiet:  # Ray Data logs each dataset's start and end at INFO, and warns that bars are off
        logging.getLogger("ray.data").setLevel(logging.ERROR)
    job, staging = sharded.job, sharded.job.staging
    t1 = time.perf_counter()
    read = _map(
        ray, functools.partial(_slice_row, job=job, slices=tuple(sharded.slices)), len(sharded.slices)
    )
    slices = [
        _record(SliceOutcome.load(staging.slice_record(p.index)), p.index, "slice") for p in sharded.slices
    ]
    t2 = time.perf_counter()
    seconds["read"] = t2 - t1
    plan: GlobalPlan = plan_sharded(sharded, slices)
    t3 = time.perf_counter()
    seconds["plan"] = t3 - t2
    shards = tuple(plan.shards)
    written = _map(ray, functools.partial(_shard_row, job=job, shards=shards), len(shards))
    outcomes = [_record(ShardOutcome.load(staging.record(s.index)), s.index, "shard") for s in shards]
    t4 = time.perf_counter()
    seconds["write"] = t4 - t3
    result = commit_sharded(sharded, plan, slices, outcomes, seconds)
    seconds["commit"] = time.perf_counter() - t4
    tasks: list[SliceOutcome | ShardOutcome] = [*slices, *outcomes]
    result.engine.update(
        shards=float(len(sharded.slices)),
        output_shards=float(len(shards)),
        reused_slices=float(sum(bool(r["reused"]) for r in read)),
        reused_shards=float(sum(bool(r["reused"]) for r in written)),
        shard_cpu_seconds=sum(t.cpu_seconds for t in tasks),
        worker_peak_rss_mb=max(t.peak_rss_mb for t in tasks),
        # one plan over all lengths (the local pack's): its packs beside ceil(runtime tokens / N)
        packs_lower_bound=float(-(-result.runtime_tokens // result.pack_size)),
    )
    return result


def _map(ray: Any, task: Any, count: int) -> list[dict[str, Any]]:
    """One Ray Data task per item (one CPU each); Ray reruns a task whose worker died. A task's own error
    comes back in its row (:func:`~bridgepack.engine.captured`) and is raised here as the task raised it."""
    if count == 0:
        return []
    items = [{"index": i} for i in range(count)]
    rows: list[dict[str, Any]] = (
        ray.data.from_items(items, override_num_blocks=count).map(task, num_cpus=1).take_all()
    )
    failure = first_failure(rows)
    if failure is not None:
        raise failure
    return rows


_T = TypeVar("_T")


def _record(outcome: _T | None, index: int, what: str) -> _T:
    if outcome is None:
        raise DataError(f"{what} {index} finished without its record")
    return outcome
