"""Assignment benchmark: lengths -> packs, bridgepack against Megatron-Bridge 0.6.2, axolotl and TRL.

Run: ``python benchmarks/assignment.py [--n 1000000] [--peers bridge,axolotl,trl]`` from the repository root
(with ``src`` and ``tests`` importable, as in the test command). Prints a table and writes
``benchmarks/results/assignment.json``.

Inputs (built here, same arrays for every tool, fixed seed):

* ``lognormal-4k``: lognormal lengths, median 400 (sigma 1.0), clipped to [16, 4096]; pack 4096.
* ``chat-16k``: a long-tail chat mixture (70% short turns, median 300; 25% long answers, median 2000;
  5% documents log-uniform in [4096, 16384]), clipped to [16, 16384]; pack 16384.

Lengths are runtime lengths in capacity units; the order is i.i.d. random, i.e. the order a shuffling
sampler would hand them over. Timed regions (wall clock, ``time.perf_counter``):

* **bridgepack <algorithm>**: ``pack_lengths(lengths, pack, algorithm, seed=0)`` -- validation, histogram,
  assignment, and the full CSR plan with Bridge's item order (for the Bridge algorithms) and the per-pack
  sums. Best of 3 runs after one JIT warm-up on a small input (numba caches compiled code on disk).
* **bridge <algorithm>**: Bridge 0.6.2's ``create_packing_strategy(histogram, pack, algorithm)`` under
  ``np.random.seed(0)``: expanding the histogram, its segment-tree first fit, its statistics. Its
  ``create_hist`` (which needs a list of example dicts) and ``fill_packing_strategy`` (which moves tokens)
  are *not* timed; the histogram is built outside the timer with ``np.bincount``. One run. Loaded from the
  wheel by file path (``tests/_support/peers.py``), never installed.
* **axolotl multipack**: ``pack_parallel(lengths, pack, group_size=100_000, bin_size=200,
  num_processes=1)`` from ``axolotl/utils/samplers/multipack.py`` of the newest ``axolotl`` wheel
  (``pip download --no-deps``), i.e. the assignment ``MultipackBatchSampler.generate_batches`` runs with
  axolotl's defaults on one process. Only that file is loaded, with stand-ins for its imports of
  ``torch.utils.data`` (three base classes), ``axolotl.utils.distributed.reduce_and_broadcast`` and
  ``axolotl.utils.logging.get_logger``; none of them is called by ``pack_parallel``. One run after a JIT
  warm-up on a small input (its kernels are ``@numba.njit`` without a disk cache).
* **trl bfd**: ``trl.pack_dataset(dataset, pack, strategy="bfd")`` on an in-memory ``datasets.Dataset``
  holding one ``input_ids`` column (uint8 tokens, one list per length), with TRL's defaults (so its
  ``Dataset.map`` packs each batch of 1000 rows on its own). Building that dataset is not timed. One run.
  Skipped (and said so) when ``trl`` is not importable.

Efficiency is ``sum(lengths) / (packs * pack)``; the lower bound is ``ceil(sum(lengths) / pack)``.
Ratios are peer seconds / bridgepack seconds; the row's counterpart is the same algorithm for Bridge and
bridgepack's default ``best_fit_decreasing`` for axolotl and TRL.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import os
import platform
import resource
import subprocess
import sys
import time
import types
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from _support.peers import CACHE_DIR, bridge_algorithms, load_module_by_path  # noqa: E402
from bridgepack._io import atomic_write_bytes  # noqa: E402
from bridgepack.packing import ALGORITHMS, pack_lengths  # noqa: E402

RESULT = REPO / "benchmarks" / "results" / "assignment.json"
AXOLOTL_MODULE = "axolotl/utils/samplers/multipack.py"
AXOLOTL_GROUP_SIZE = 100_000  # axolotl's sample_packing_group_size default
AXOLOTL_BIN_SIZE = 200  # axolotl's sample_packing_bin_size default
COUNTERPART = {
    "bridge first_fit_shuffle": "first_fit_shuffle",
    "bridge first_fit_decreasing": "first_fit_decreasing",
    "axolotl multipack": "best_fit_decreasing",
    "trl bfd": "best_fit_decreasing",
}


def lognormal_4k(n: int, rng: np.random.Generator) -> np.ndarray:
    return np.clip(np.round(rng.lognormal(np.log(400), 1.0, n)), 16, 4096).astype(np.int64)


def chat_16k(n: int, rng: np.random.Generator) -> np.ndarray:
    kind = rng.choice(3, size=n, p=[0.70, 0.25, 0.05])
    short = rng.lognormal(np.log(300), 0.9, n)
    long = rng.lognormal(np.log(2000), 0.8, n)
    docs = np.exp(rng.uniform(np.log(4096), np.log(16384), n))
    lengths = np.choose(kind, [short, long, docs])
    return np.clip(np.round(lengths), 16, 16384).astype(np.int64)


DATASETS: dict[str, tuple[Callable[[int, np.random.Generator], np.ndarray], int]] = {
    "lognormal-4k": (lognormal_4k, 4096),
    "chat-16k": (chat_16k, 16384),
}


def pack_stats(bin_sums: np.ndarray, pack: int, total: int) -> dict[str, Any]:
    packs = int(bin_sums.shape[0])
    assert int(bin_sums.sum()) == total and int(bin_sums.max()) <= pack, "a peer lost or overfilled items"
    lower = -(-total // pack)
    return {"packs": packs, "efficiency": total / (packs * pack), "above_lower_bound": packs - lower}


def time_bridgepack(lengths: np.ndarray, pack: int, algorithm: str) -> tuple[float, dict[str, Any]]:
    pack_lengths(lengths[:1000], pack, algorithm=algorithm)  # JIT warm-up (or load from numba's cache)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        plan = pack_lengths(lengths, pack, algorithm=algorithm, seed=0)
        best = min(best, time.perf_counter() - start)
    return best, pack_stats(plan.pack_sums, pack, int(lengths.sum()))


def time_bridge(
    bridge: types.ModuleType, lengths: np.ndarray, pack: int, algorithm: str
) -> tuple[float, Any]:
    histogram = np.bincount(lengths, minlength=pack + 1).tolist()
    state = np.random.get_state()
    np.random.seed(0)
    try:
        start = time.perf_counter()
        assignments, _ = bridge.create_packing_strategy(histogram, pack, algorithm)
        seconds = time.perf_counter() - start
    finally:
        np.random.set_state(state)
    return seconds, pack_stats(np.array([sum(b) for b in assignments]), pack, int(lengths.sum()))


def axolotl_multipack() -> types.ModuleType:
    """axolotl's ``multipack.py`` from its wheel, loaded by path with the stand-ins the docstring names."""
    root = CACHE_DIR / "axolotl"
    path = root / AXOLOTL_MODULE
    if not path.exists():
        download = CACHE_DIR / "wheels"
        download.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(download), "axolotl"]
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
        wheel = max(download.glob("axolotl-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extract(AXOLOTL_MODULE, root)
        (root / "wheel.txt").write_text(wheel.name)

    class _Base:  # stands in for torch.utils.data.{BatchSampler, Sampler, SequentialSampler}
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def __class_getitem__(cls, _item: Any) -> type:  # the module annotates ``Sampler[int]``
            return cls

    def _unused(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("not called by pack_parallel")

    stubs: dict[str, dict[str, Any]] = {
        "axolotl.utils.distributed": {"reduce_and_broadcast": _unused},
        "axolotl.utils.logging": {"get_logger": logging.getLogger},
    }
    if "torch" not in sys.modules:  # never patch a real, already imported torch
        stubs["torch.utils.data"] = {"BatchSampler": _Base, "Sampler": _Base, "SequentialSampler": _Base}
    return load_module_by_path(path, "axolotl_multipack", stubs=stubs)


def time_axolotl(module: types.ModuleType, lengths: np.ndarray, pack: int) -> tuple[float, Any]:
    def run(values: np.ndarray) -> list[list[int]]:
        return module.pack_parallel(
            values, pack, group_size=AXOLOTL_GROUP_SIZE, bin_size=AXOLOTL_BIN_SIZE, num_processes=1
        )

    run(lengths[:1000])  # JIT warm-up
    start = time.perf_counter()
    bins = run(lengths)
    seconds = time.perf_counter() - start
    assert sorted(i for b in bins for i in b) == list(range(lengths.shape[0])), "axolotl dropped items"
    return seconds, pack_stats(np.array([int(lengths[b].sum()) for b in bins]), pack, int(lengths.sum()))


def time_trl(lengths: np.ndarray, pack: int) -> tuple[float, Any]:
    import datasets
    import pyarrow as pa
    from trl import pack_dataset

    datasets.disable_progress_bars()

    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = pa.LargeListArray.from_arrays(offsets, pa.array(np.ones(int(offsets[-1]), dtype=np.uint8)))
    dataset = datasets.Dataset(pa.table({"input_ids": tokens}))
    start = time.perf_counter()
    packed = pack_dataset(dataset, pack, strategy="bfd")
    seconds = time.perf_counter() - start
    seq_lengths = packed.with_format("arrow")[:]["seq_lengths"]
    sums = np.array([sum(x) for x in seq_lengths.to_pylist()])
    return seconds, pack_stats(sums, pack, int(lengths.sum()))


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__}
    for name in ("trl", "datasets"):
        with contextlib.suppress(ImportError):
            out[name] = __import__(name).__version__
    wheel = CACHE_DIR / "axolotl" / "wheel.txt"
    if wheel.exists():
        out["axolotl_wheel"] = wheel.read_text()
    out["megatron_bridge"] = "0.6.2"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="lengths per dataset")
    parser.add_argument("--peers", default="bridge,axolotl,trl", help="comma list of bridge, axolotl, trl")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    peers = {p for p in args.peers.split(",") if p}

    loaded: dict[str, Any] = {}
    notes: list[str] = []
    for name, loader in (("bridge", bridge_algorithms), ("axolotl", axolotl_multipack)):
        if name in peers:
            try:
                loaded[name] = loader()
            except BaseException as exc:  # pytest.skip raises a BaseException when a wheel cannot be fetched
                notes.append(f"{name} left out: {type(exc).__name__}: {exc}")
    if "trl" in peers:
        try:
            import trl  # noqa: F401
        except ImportError as exc:
            notes.append(f"trl left out: {exc}")
            peers.discard("trl")

    peer_runs: dict[str, Callable[[np.ndarray, int], tuple[float, Any]]] = {}
    if "bridge" in loaded:
        for algorithm in ("first_fit_shuffle", "first_fit_decreasing"):
            peer_runs[f"bridge {algorithm}"] = functools.partial(
                time_bridge, loaded["bridge"], algorithm=algorithm
            )
    if "axolotl" in loaded:
        peer_runs["axolotl multipack"] = functools.partial(time_axolotl, loaded["axolotl"])
    if "trl" in peers:
        peer_runs["trl bfd"] = time_trl

    rows: list[dict[str, Any]] = []
    for dataset, (make, pack) in DATASETS.items():
        lengths = make(args.n, np.random.default_rng(1234))
        ours: dict[str, float] = {}
        for algorithm in ALGORITHMS:
            seconds, stats = time_bridgepack(lengths, pack, algorithm)
            ours[algorithm] = seconds
            rows.append({"dataset": dataset, "tool": f"bridgepack {algorithm}", "seconds": seconds, **stats})
        for tool, run in peer_runs.items():
            seconds, stats = run(lengths, pack)
            counterpart = COUNTERPART[tool]
            rows.append(
                {
                    "dataset": dataset,
                    "tool": tool,
                    "seconds": seconds,
                    **stats,
                    "counterpart": f"bridgepack {counterpart}",
                    "speedup": seconds / ours[counterpart],
                    "speedup_by_algorithm": {a: seconds / s for a, s in ours.items()},
                }
            )
        for row in rows:
            row.setdefault("n", args.n)
            row.setdefault("pack_size", pack)

    print(
        f"{'dataset':<13} {'tool':<30} {'N':>9} {'seconds':>9} {'packs':>8} {'eff %':>8} {'>LB':>6} speedup"
    )
    for row in rows:
        speedup = f"{row['speedup']:.1f}x vs {row['counterpart']}" if "speedup" in row else ""
        print(
            f"{row['dataset']:<13} {row['tool']:<30} {row['n']:>9} {row['seconds']:>9.3f} {row['packs']:>8} "
            f"{100 * row['efficiency']:>8.3f} {row['above_lower_bound']:>6} {speedup}"
        )
    for note in notes:
        print(note)

    report = {
        "schema_version": 1,
        "benchmark": "assignment",
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "processor": platform.processor(),
        },
        "versions": versions(),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rows": rows,
        "notes": notes,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(args.out, (json.dumps(report, indent=2) + "\n").encode(), overwrite=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
