"""``bridgepack pack`` local vs ``--engine ray`` on one node vs two simulated nodes, on the same cores.

Run: ``python benchmarks/pack_ray.py [--n 1000000] [--chats 50000] [--cores 2] [--pack 4096]`` from the
repository root (``src`` and ``tests`` importable; the ``ray`` extra installed; ``--chats`` needs Qwen3's
tokenizer from the test cache, see tests/_support/tokenizers.py). Prints a table and writes
``benchmarks/results/pack_ray.json``.

Inputs (fixed seeds): ``n`` pre-tokenized samples as in ``pack_e2e.py`` (lognormal runtime lengths, median
400, clipped to [16, pack]) split over ``--files`` JSONL files, and ``chats`` generated chat rows
(``tests/_support/chat_rows.py``) tokenized with Qwen3's real vocabulary and chat template.

Each mode runs in a fresh subprocess on ``cores`` cores:

* **local**: ``bridgepack.pack(..., workers=cores)``;
* **ray 1 node**: ``ray.init(num_cpus=cores)`` on this machine, then ``engine="ray"`` with ``cores`` shards;
* **ray 2 nodes**: a ``ray.cluster_utils.Cluster`` of two nodes of ``cores / 2`` CPUs on 127.0.0.1.

The pack's wall time excludes starting the cluster, which is reported beside it (the engine's fixed
overhead, not hidden). CPU is the driver's own (also apart: "drv CPU") plus every shard's (measured inside
each shard task); peak memory is the driver's ``VmHWM`` and the largest worker's ``ru_maxrss``. Packs are
compared with the lower bound ``ceil(runtime tokens / N)`` and with the local pack.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
EOS = 2
MODES = ("local", "ray-1-node", "ray-2-nodes")


def build_tokens(work: Path, n: int, pack: int, files: int) -> list[Path]:
    rng = np.random.default_rng(0)
    runtime = np.clip(rng.lognormal(np.log(400), 1.0, n), 16, pack).astype(np.int64)
    paths = [work / f"tokens-{i:02d}.jsonl" for i in range(files)]
    for path, part in zip(paths, np.array_split(runtime, files), strict=True):
        with open(path, "wb") as handle:
            for r in part:
                ids = rng.integers(3, 32000, int(r) + 1)
                ids[-1] = EOS
                mask = np.zeros(int(r) + 1, np.int8)
                mask[int(r) // 3 :] = 1
                handle.write(orjson.dumps({"input_ids": ids.tolist(), "loss_mask": mask.tolist()}) + b"\n")
    return paths


def build_chats(work: Path, n: int, files: int) -> list[Path]:
    sys.path.insert(0, str(ROOT / "tests"))
    from _support.chat_rows import chat_rows

    paths = [work / f"chats-{i:02d}.jsonl" for i in range(files)]
    for i, path in enumerate(paths):
        rows = chat_rows(100 + i, n // files)
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return paths


def vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(args: argparse.Namespace) -> None:
    """One mode, in this (fresh) process; prints one JSON line. A Ray mode starts its own cluster in a
    private ``RAY_TMPDIR`` (never joining another one on this machine) and always shuts it down."""
    if args.mode == "local":
        print(json.dumps(run_mode(args, 0.0)))
        return
    tmp = tempfile.mkdtemp(prefix="sp-rb-", dir="/tmp")  # short: Ray's socket paths have a length limit
    os.environ.update(RAY_TMPDIR=tmp, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # keep every address on 127.0.0.1
    t = time.perf_counter()
    import ray

    cluster = None
    try:
        if args.mode == "ray-1-node":
            ray.init(num_cpus=args.cores, include_dashboard=False, _node_ip_address="127.0.0.1")
        else:
            from ray.cluster_utils import Cluster

            node = {
                "num_cpus": max(1, args.cores // 2),
                "node_ip_address": "127.0.0.1",
                "include_dashboard": False,
            }
            cluster = Cluster(initialize_head=True, head_node_args=node)
            cluster.add_node(**node)
            ray.init(address=cluster.address, _node_ip_address="127.0.0.1")
        record = run_mode(args, time.perf_counter() - t)
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(record))


def run_mode(args: argparse.Namespace, cluster_seconds: float) -> dict[str, Any]:
    """The pack of one mode (the cluster, if any, already up) and what it measured."""
    import bridgepack

    inputs = [Path(p) for p in args.inputs]
    options: dict[str, Any] = {}
    if args.tokenizer:
        options["tokenizer"] = Path(args.tokenizer)
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    if args.mode == "local":
        result = bridgepack.pack(inputs, args.out, args.pack, workers=args.cores, **options)
    else:
        result = bridgepack.pack(inputs, args.out, args.pack, engine="ray", shards=args.cores, **options)
    wall = time.perf_counter() - t0
    driver_cpu = time.process_time() - cpu0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    shard_cpu = result.engine.get("shard_cpu_seconds", 0.0)
    worker_rss = result.engine.get("worker_peak_rss_mb", 0.0)
    return {
        "mode": args.mode,
        "wall_s": round(wall, 3),
        "cluster_start_s": round(cluster_seconds, 3),
        "cpu_s": round(driver_cpu + shard_cpu + children.ru_utime + children.ru_stime, 3),
        "driver_cpu_s": round(driver_cpu, 3),
        "driver_peak_rss_mb": round(vm_hwm_mb(), 1),
        "worker_peak_rss_mb": round(worker_rss, 1),
        "samples": result.counts.samples_in,
        "packs": result.num_packs,
        "lower_bound": -(-result.runtime_tokens // args.pack),
        "seconds": {k: round(v, 3) for k, v in result.seconds.items()},
    }


def spawn(mode: str, inputs: list[Path], out: Path, args: argparse.Namespace, tokenizer: str | None) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, "--out", str(out), "--pack", str(args.pack)]
    cmd += ["--cores", str(args.cores), *(["--tokenizer", tokenizer] if tokenizer else [])]
    cmd += ["--inputs", *map(str, inputs)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-3000:]}")
    row = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(row), flush=True)  # each mode as it ends: a long run shows its progress
    return row


def table(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    names = ("wall s", "start s", "CPU s", "drv CPU", "drv MB", "wrk MB")
    print(f"{'mode':<12} " + " ".join(f"{n:>8}" for n in names) + f" {'packs':>9} {'bound':>9}")
    for r in rows:
        print(
            f"{r['mode']:<12} {r['wall_s']:>8.2f} {r['cluster_start_s']:>8.2f} {r['cpu_s']:>8.2f} "
            f"{r['driver_cpu_s']:>8.2f} "
            f"{r['driver_peak_rss_mb']:>8.0f} {r['worker_peak_rss_mb']:>8.0f} "
            f"{r['packs']:>9,} {r['lower_bound']:>9,}"
        )
    local = rows[0]["wall_s"]
    for r in rows[1:]:
        ratio = r["packs"] / rows[0]["packs"]
        print(f"{r['mode']}: {r['wall_s'] / local:.2f}x the local wall; packs {ratio:.5f}x local")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--chats", type=int, default=50_000)
    parser.add_argument("--pack", type=int, default=4096)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--child", choices=MODES)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--tokenizer")
    parser.add_argument("--inputs", nargs="*")
    args = parser.parse_args()
    if args.child:
        args.mode = args.child
        child(args)
        return
    work = Path(tempfile.mkdtemp(prefix="sp-bench-ray-"))
    report: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "inputs": {
            "n": args.n,
            "chats": args.chats,
            "pack": args.pack,
            "cores": args.cores,
            "files": args.files,
        },
    }
    try:
        sections = []
        if args.n:
            sections.append(("pre-tokenized", build_tokens(work, args.n, args.pack, args.files), None))
        if args.chats:
            sys.path.insert(0, str(ROOT / "tests"))
            from _support.tokenizers import qwen3_tokenizer_dir

            tok = str(qwen3_tokenizer_dir())
            sections.append(("chats (Qwen3)", build_chats(work, args.chats, args.files), tok))
        for name, inputs, tok in sections:
            rows = [spawn(mode, inputs, work / f"{name[:4]}-{mode}", args, tok) for mode in MODES]
            report[name] = rows
            count = args.n if tok is None else args.chats
            table(f"{name}: {count:,} samples, N={args.pack}, {args.cores} cores", rows)
            RESULTS.mkdir(parents=True, exist_ok=True)
            (RESULTS / "pack_ray.json").write_text(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
