"""What checking a pack set against its record costs ``bridgepack inspect`` on 1M samples.

Run: ``python benchmarks/inspect_check.py [--n 1000000] [--rounds 5]`` from the repository root (``src``
importable). Prints a table and writes ``benchmarks/results/inspect_check.json``.

Input (built here once, fixed seed, kept in ``--work``): ``n`` pre-tokenized samples whose runtime lengths
are lognormal (median 400, sigma 1.0) clipped to [16, 4096], as ``benchmarks/pack_e2e.py`` draws them
(random ids in [3, 32000), EOS = 2, a prompt with mask 0 then an answer with mask 1), written as a samples
Parquet file and packed by ``bridgepack pack --pack-size 4096`` (1M samples: ~310M tokens, 75k packs). The
pack's metadata records the set's fingerprint and counts; a second sidecar is the same entry without them.

Timed, each run a fresh subprocess, the two variants alternating within every round (same files, page
cache warm after a first untimed read of each): ``bridgepack.inspect_packed`` in process, from the call to
its return, wall seconds and CPU seconds (user + system of the process, threads included) of that region
alone:

* **checked**: the sidecar with the record: every block's content and packs hashes are computed and the
  result compared with the record (``bridgepack.data.packed._recorded``).
* **unchecked**: the sidecar without it: the same pass with nothing to compare.

Ratios are checked / unchecked of the medians (and of the minima: on a shared machine the fastest run of
each is the one least slowed by other jobs); the issue's bound is 1.10 for both. ``--baseline-src`` times a
second source tree the same way, in the same rounds (e.g. the commit before a change, from ``git
worktree add``), so "before" and "after" meet the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
EOS = 2
PACK = 4096
BATCH = 100_000


def build_samples(path: Path, n: int) -> int:
    """``n`` samples as Parquet (``input_ids`` and ``loss_mask``, int32 / int8 lists); returns tokens."""
    rng = np.random.default_rng(0)
    runtime = np.clip(rng.lognormal(np.log(400), 1.0, n), 16, PACK).astype(np.int64)
    schema = pa.schema([("input_ids", pa.list_(pa.int32())), ("loss_mask", pa.list_(pa.int8()))])
    total = 0
    with pq.ParquetWriter(path, schema) as writer:
        for lo in range(0, n, BATCH):
            stored = runtime[lo : lo + BATCH] + 1
            offsets = np.concatenate([[0], np.cumsum(stored)]).astype(np.int64)
            ids = rng.integers(3, 32000, int(offsets[-1])).astype(np.int32)
            ids[offsets[1:] - 1] = EOS
            prompt = (stored * rng.uniform(0.1, 0.6, stored.size)).astype(np.int64)
            position = np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], stored)
            mask = (position >= np.repeat(prompt, stored)).astype(np.int8)
            arrays = [
                pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(ids)).cast(pa.list_(pa.int32())),
                pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(mask)).cast(pa.list_(pa.int8())),
            ]
            writer.write_batch(pa.record_batch(arrays, schema=schema))
            total += int(offsets[-1])
    return total


def prepare(work: Path, n: int, env: dict[str, str]) -> tuple[Path, Path, Path, dict[str, Any]]:
    """The packed set, its sidecar with the record, and a copy of the sidecar without it."""
    samples, out = work / f"samples_{n}.parquet", work / f"packed_{n}"
    if not (out / f"{PACK}_metadata.jsonl").exists():
        t0 = time.perf_counter()
        tokens = build_samples(samples, n)
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "bridgepack", "pack", str(samples), "--out", str(out)]
        subprocess.run([*cmd, "--pack-size", str(PACK), "--quiet", "--overwrite"], check=True, env=env)
        (work / f"build_{n}.json").write_text(
            json.dumps({"tokens": tokens, "build_s": build, "pack_s": time.perf_counter() - t0})
        )
    built = json.loads((work / f"build_{n}.json").read_text())
    data = next(out.glob("*.idx.parquet"))
    checked = out / f"{PACK}_metadata.jsonl"
    unchecked = work / f"unchecked_{n}" / f"{PACK}_metadata.jsonl"
    unchecked.parent.mkdir(exist_ok=True)
    entries = json.loads(checked.read_text())
    for entry in entries:
        entry.get("bridgepack", {}).pop("fingerprint", None)
    unchecked.write_text(json.dumps(entries) + "\n")
    return data, checked, unchecked, built


def timed(data: Path, metadata: Path, env: dict[str, str]) -> dict[str, float]:
    """One fresh process: wall and CPU seconds of ``inspect_packed`` alone."""
    code = (
        "import json, sys, time; from bridgepack.data.packed import inspect_packed; "
        "c0 = time.process_time(); t0 = time.perf_counter(); "
        "found = inspect_packed(sys.argv[1], metadata=sys.argv[2]); "
        "wall = time.perf_counter() - t0; cpu = time.process_time() - c0; "
        "print(json.dumps({'wall': wall, 'cpu': cpu, 'packs': found.stats.packs, "
        "'status': found.metadata.status}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(data), str(metadata)], capture_output=True, text=True, env=env
    )
    if proc.returncode:
        raise SystemExit(proc.stderr)
    result: dict[str, float] = json.loads(proc.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "results" / "inspect_check")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "inspect_check.json")
    parser.add_argument("--baseline-src", type=Path, help="another tree's src/ to time alongside")
    opts = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    opts.work.mkdir(parents=True, exist_ok=True)
    data, checked, unchecked, built = prepare(opts.work, opts.n, env)
    trees = {"": env}
    if opts.baseline_src is not None:
        trees["baseline "] = {**env, "PYTHONPATH": str(opts.baseline_src.resolve())}
    variants = {
        f"{tree}{name}": (metadata, tree_env)
        for tree, tree_env in trees.items()
        for name, metadata in (("checked", checked), ("unchecked", unchecked))
    }
    for metadata, tree_env in variants.values():  # warm-up: numba's cache, the page cache
        timed(data, metadata, tree_env)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    for r in range(opts.rounds):
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for name in order:
            runs[name].append(timed(data, *variants[name]))
    keys = ("wall", "cpu")
    median = {name: {k: statistics.median(run[k] for run in rs) for k in keys} for name, rs in runs.items()}
    fastest = {name: {k: min(run[k] for run in rs) for k in keys} for name, rs in runs.items()}
    ratio = {
        f"{tree}checked / {tree}unchecked": {
            f"{k} {how}": table[f"{tree}checked"][k] / table[f"{tree}unchecked"][k]
            for how, table in (("median", median), ("min", fastest))
            for k in keys
        }
        for tree in trees
    }
    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform(), "load": os.getloadavg()},
        "inputs": {"samples": opts.n, "tokens": built["tokens"], "packs": runs["checked"][0]["packs"],
                   "pack_size": PACK, "parquet_mb": round(data.stat().st_size / 2**20, 1)},
        "runs": runs,
        "median": median,
        "min": fastest,
        "ratios": ratio,
    }  # fmt: skip
    print(f"{'inspect, ' + str(opts.n) + ' samples':<28}{'wall s (med/min)':>20}{'CPU s (med/min)':>20}")
    for name in variants:
        wall = f"{median[name]['wall']:.2f} / {fastest[name]['wall']:.2f}"
        cpu = f"{median[name]['cpu']:.2f} / {fastest[name]['cpu']:.2f}"
        print(f"{name:<28}{wall:>20}{cpu:>20}")
    for name, values in ratio.items():
        wall = f"{values['wall median']:.3f} / {values['wall min']:.3f}"
        cpu = f"{values['cpu median']:.3f} / {values['cpu min']:.3f}"
        print(f"{name:<28}{wall:>20}{cpu:>20}")
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
