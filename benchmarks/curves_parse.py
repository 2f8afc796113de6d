"""Benchmark: read a 1M-line Megatron-LM log with bridgepack.curves vs a plain per-line regex parser.

The baseline is written in the style of Megatron-Bridge's ``scripts/performance/utils/evaluate.py``
(``get_metrics_from_logfiles``): for every line, try every metric regex with ``re.search`` and append the
matches. It is our own code, not a copy, and it reads fewer fields than bridgepack does (only the metrics it
names), so the comparison favours the baseline.

Each parser runs in its own child process so that peak RSS is its own. Both must find the same losses.

    python benchmarks/curves_parse.py                 # 1,000,000 lines
    python benchmarks/curves_parse.py --lines 100000  # quick
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "curves_parse.json"

BASELINE_PATTERNS = {
    "iteration": r"iteration\s+(\d+)/\s*\d+",
    "elapsed time per iteration (ms)": r"elapsed time per iteration \(ms\):\s+([\d.]+)",
    "lm loss": r"lm loss:\s+([\d.E+\-]+|nan|inf)",
    "learning rate": r"learning rate:\s+([\d.E+\-]+)",
    "grad norm": r"grad norm:\s+([\d.]+|nan|inf)",
    "loss scale": r"loss scale:\s+([\d.]+)",
    "num zeros": r"num zeros:\s+([\d.]+)",
    "step time": r"Step Time :\s+([\d.]+)s",
}


def baseline_parse(path: str) -> dict[str, list[float]]:
    """Per line, every pattern, ``re.search`` (string patterns, as in the reference script)."""
    metrics: dict[str, list[float]] = {k: [] for k in BASELINE_PATTERNS}
    with open(path) as handle:
        for line in handle:
            for name, pattern in BASELINE_PATTERNS.items():
                match = re.search(pattern, line)
                if match:
                    metrics[name].append(float(match.group(1)))
    return metrics


def generate(path: Path, lines: int) -> int:
    """Write a log of ``lines`` lines: iteration records with timer / warning / validation lines between."""
    records = 0
    with open(path, "w") as out:
        written = 0
        iteration = 0
        while written < lines:
            iteration += 1
            loss = 10.9 * (0.9999**iteration) + 0.01 * ((iteration * 7919) % 13) / 13
            out.write(
                f" [2026-08-22 10:00:00.{iteration % 1000000:06d}] iteration {iteration:8d}/ 2000000 |"
                f" consumed samples: {iteration * 256:12d} |"
                f" elapsed time per iteration (ms): 412.{iteration % 10} |"
                f" throughput per GPU (TFLOP/s/GPU): 401.2 | learning rate: 2.700000E-04 | global batch size:"
                f"   256 | lm loss: {loss:E} | loss scale: 1.0 | grad norm: 1.{iteration % 997:03d} |"
                f" num zeros: {iteration % 5000}.0 | params norm: 1104.931 |"
                " number of skipped iterations:   0 | number of nan iterations:   0 |\n"
            )
            records += 1
            written += 1
            if iteration % 4 == 0 and written < lines:
                out.write(
                    "time (ms) | forward-compute: 144.40 | backward-compute: 398.55 | optimizer: 42.46\n"
                )
                written += 1
            if iteration % 1000 == 0 and written + 3 <= lines:
                out.write("-" * 90 + "\n")
                out.write(f" validation loss at iteration {iteration} | lm loss value: {loss:E} |")
                out.write(" lm loss PPL: 1.0E+04 | \n")
                out.write("-" * 90 + "\n")
                written += 3
    return records


def worker(kind: str, path: str) -> None:
    """Child process: parse once, print seconds, peak RSS and a checksum of the losses."""
    start = time.perf_counter()
    if kind == "bridgepack":
        from bridgepack.curves import read_curves

        imported = time.perf_counter()
        curves = read_curves(path)
        losses = curves.metrics["lm loss"].values.tolist()
    else:
        imported = time.perf_counter()
        losses = baseline_parse(path)["lm loss"]
    seconds = time.perf_counter() - imported
    import_seconds = imported - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    doc = {"seconds": seconds, "import_seconds": import_seconds, "peak_rss_mib": peak_kib / 1024}
    print(json.dumps({**doc, "n": len(losses), "sum": sum(losses)}))


def run_child(kind: str, path: Path) -> dict[str, float]:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parent.parent / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, __file__, "--worker", kind, str(path)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true", help="print only; do not write the results JSON")
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.log"
        t0 = time.perf_counter()
        records = generate(path, args.lines)
        gen_s = time.perf_counter() - t0
        size_mib = path.stat().st_size / 2**20
        ours = run_child("bridgepack", path)
        base = run_child("baseline", path)
    if ours["n"] != base["n"] or abs(ours["sum"] - base["sum"]) > 1e-6 * abs(base["sum"]):
        raise SystemExit(f"parsers disagree: bridgepack {ours} vs baseline {base}")
    ratio = base["seconds"] / ours["seconds"]
    print(f"log: {args.lines} lines, {records} iteration records, {size_mib:.0f} MiB (made in {gen_s:.1f} s)")
    print(f"{'parser':<28}{'seconds':>10}{'import s':>10}{'peak RSS MiB':>15}")
    for label, res in (("bridgepack.curves.read_curves", ours), ("per-line regex baseline", base)):
        print(f"{label:<28}{res['seconds']:>10.2f}{res['import_seconds']:>10.2f}{res['peak_rss_mib']:>15.0f}")
    print(
        f"speed-up: {ratio:.1f}x (bridgepack also reads every field, the baseline only "
        f"{len(BASELINE_PATTERNS)})"
    )
    if args.no_write:
        return
    import numba
    import numpy

    doc = {
        "benchmark": "curves_parse",
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_1m": os.getloadavg()[0],  # shared machines: say how busy it was
        },
        "versions": {"numpy": numpy.__version__, "numba": numba.__version__},
        "inputs": {"lines": args.lines, "records": records, "size_mib": round(size_mib, 1)},
        "bridgepack": ours,
        "baseline_per_line_regex": base,
        "ratio_baseline_over_bridgepack": ratio,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
