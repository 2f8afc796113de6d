"""Run bridgepack's benchmarks: one entry point for all of them (or a chosen few).

Each benchmark is a self-contained script in this folder that builds its own inputs, runs bridgepack and its
peers (Megatron-Bridge 0.6.2, axolotl, TRL, a per-line regex parser) on the same inputs in the same run,
prints a table and writes JSON under ``benchmarks/results/``. This runner only starts them in turn, with
``src`` and ``tests`` importable, and says which failed.

    python benchmarks/run.py                    # all, at the sizes the issues ask for (tens of minutes)
    python benchmarks/run.py --quick            # all, at small sizes (a few minutes): a smoke run
    python benchmarks/run.py assignment pack_e2e
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: name -> the extra arguments of its quick (smoke-size) run; the full run uses each script's defaults.
BENCHMARKS: dict[str, list[str]] = {
    "assignment": ["--n", "100000"],
    "pack_e2e": ["--n", "5000", "--text-n", "2000"],
    "pack_text": ["--quick"],
    "collate": ["--rows", "8", "--repeat", "2"],
    "curves_parse": ["--lines", "50000", "--no-write"],
    "diff_stream": ["--n", "20000"],
    "balance": ["--n", "50000", "--epochs", "1"],
    "train": ["--samples", "300", "--steps", "4", "--threads", "1"],
    "hf_pack": ["--rows", "20000"],
    "chat_tokenize": ["--n", "2000", "--repeat", "1"],
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "names", nargs="*", choices=[*BENCHMARKS, []], help="benchmarks to run (default: all)"
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: checks the benchmarks run")
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    failed: list[str] = []
    for name in args.names or list(BENCHMARKS):
        cmd = [sys.executable, str(HERE / f"{name}.py"), *(BENCHMARKS[name] if args.quick else [])]
        print(f"\n=== {name}: {' '.join(cmd[1:])}", flush=True)
        start = time.perf_counter()
        code = subprocess.call(cmd, cwd=ROOT, env=env)
        print(f"=== {name}: exit {code} after {time.perf_counter() - start:.0f} s", flush=True)
        if code != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
