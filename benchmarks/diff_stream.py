"""Streaming benchmark of ``bridgepack diff`` and ``bridgepack fingerprint`` on two large packed sets.

Run: ``python benchmarks/diff_stream.py [--n 1000000]`` from the repository root (``src`` importable).
Prints a table and writes ``benchmarks/results/diff_stream.json``.

Inputs (built here, fixed seed, in a temporary directory): ``n`` chat-like sequences, stored lengths
uniform in [8, 64] (EOS-terminated, a prompt with mask 0 then an answer with mask 1, rolled as Bridge
stores it), written as Bridge packed Parquet (row groups of 500 packs):

* **A**: the sequences in order, 12 per pack;
* **B**: the same sequences shuffled into packs of 10, minus 10 sequences, and with the EOS label of
  1,000 sequences no longer supervised -- a realistic "what changed?" case.

Timed (wall clock, one run each after a JIT warm-up on a tiny input, each in a fresh subprocess so peak RSS
is that command's own): ``bridgepack fingerprint A`` and ``bridgepack diff A B --format json``. Peak RSS is
the
child's ``VmHWM`` (Linux): imports, plus the memory-mapped Parquet pages it touched. The input size column
is the token buffers alone (int64 ids + int8 masks), which a non-streaming diff would hold for *both*
sides.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

EOS = 2
ROW_GROUP = 500


def make_sequences(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(8, 65, size=n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = rng.integers(3, 32000, size=int(offsets[-1])).astype(np.int64)
    ids[offsets[1:] - 1] = EOS
    prompt = (lengths * rng.uniform(0.2, 0.8, size=n)).astype(np.int64)
    position = np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], lengths)
    mask = (position >= np.repeat(prompt, lengths) - 1).astype(np.int8)  # rolled: label j is token j+1
    mask[offsets[1:] - 1] = 0
    return ids, mask, offsets


def write(
    path: Path, ids: np.ndarray, mask: np.ndarray, offsets: np.ndarray, order: np.ndarray, per: int
) -> None:
    lengths = np.diff(offsets)
    schema = pa.schema([("input_ids", pa.list_(pa.int64())), ("loss_mask", pa.list_(pa.int8())),
                        ("seq_start_id", pa.list_(pa.int64()))])  # fmt: skip
    with pq.ParquetWriter(path, schema) as writer:
        step = per * ROW_GROUP
        for lo in range(0, len(order), step):
            chosen = order[lo : lo + step]
            take = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in chosen])
            seq_len = lengths[chosen]
            npacks = -(-len(chosen) // per)
            seq_counts = np.full(npacks, per)
            seq_counts[-1] = len(chosen) - per * (npacks - 1)
            pack_of = np.repeat(np.arange(npacks), seq_counts)
            pack_tokens = np.bincount(pack_of, weights=seq_len, minlength=npacks).astype(np.int64)
            row_off = np.concatenate([[0], np.cumsum(pack_tokens)]).astype(np.int32)
            seq_off = np.concatenate([[0], np.cumsum(seq_counts)]).astype(np.int32)
            starts = np.concatenate([[0], np.cumsum(seq_len)[:-1]]) - np.repeat(row_off[:-1], seq_counts)
            batch = pa.record_batch(
                [pa.ListArray.from_arrays(pa.array(row_off), pa.array(ids[take])),
                 pa.ListArray.from_arrays(pa.array(row_off), pa.array(mask[take])),
                 pa.ListArray.from_arrays(pa.array(seq_off), pa.array(starts.astype(np.int64)))],
                schema=schema,
            )  # fmt: skip
            writer.write_batch(batch, row_group_size=ROW_GROUP)


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    # VmHWM, not ru_maxrss: the latter survives fork+exec and would report this (large) parent's peak.
    code = (
        "import re, sys, time; from bridgepack.cli import main; t = time.perf_counter(); "
        "rc = main(sys.argv[1:]); dt = time.perf_counter() - t; "
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1); "
        "print(f'@@{dt} {hwm} {rc}', file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
    line = [x for x in proc.stderr.splitlines() if x.startswith("@@")][-1][2:].split()
    return float(line[0]), int(line[1]) / 1024, int(line[2]), proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/diff_stream.json"))
    opts = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(["src", os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory(prefix="bridgepack-bench-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        ids, mask, offsets = make_sequences(opts.n, 0)
        write(root / "a.parquet", ids, mask, offsets, np.arange(opts.n), 12)
        rng = np.random.default_rng(1)
        order = rng.permutation(opts.n)[: opts.n - 10]
        changed = order[:1000]
        mask[offsets[changed + 1] - 2] = 0  # the label EOS of 1,000 sequences is no longer supervised
        write(root / "b.parquet", ids, mask, offsets, order, 10)
        build = time.perf_counter() - t0
        input_mb = (ids.nbytes + mask.nbytes) / 2**20
        del ids, mask
        tiny = root / "tiny.parquet"
        pq.write_table(pq.read_table(root / "a.parquet").slice(0, 3), tiny)
        timed(["diff", str(tiny), str(tiny)], env)  # JIT warm-up (numba caches to disk)
        fp_s, fp_mb, _, _ = timed(["fingerprint", str(root / "a.parquet")], env)
        diff_s, diff_mb, rc, out = timed(
            ["diff", str(root / "a.parquet"), str(root / "b.parquet"), "--format", "json"], env
        )
        report = json.loads(out)
        sizes = [os.path.getsize(root / f"{x}.parquet") / 2**20 for x in "ab"]
    machine = {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}
    result = {
        "machine": machine,
        "inputs": {"sequences_a": opts.n, "sequences_b": opts.n - 10, "buffers_mb": round(input_mb, 1),
                   "parquet_mb": [round(s, 1) for s in sizes], "build_seconds": round(build, 1)},
        "fingerprint": {"seconds": round(fp_s, 2), "peak_rss_mb": round(fp_mb, 1)},
        "diff": {"seconds": round(diff_s, 2), "peak_rss_mb": round(diff_mb, 1), "exit": rc,
                 "verdict": report["verdict"], "only_in_a": report["sequences"]["only_in_a"],
                 "mask_changed": report["loss_mask"]["sequences"], "kinds": report["loss_mask"]["kinds"]},
    }  # fmt: skip
    print(f"{'command':<24}{'seconds':>10}{'peak RSS MB':>14}")
    print(f"{'fingerprint A':<24}{fp_s:>10.2f}{fp_mb:>14.1f}")
    print(f"{'diff A B':<24}{diff_s:>10.2f}{diff_mb:>14.1f}")
    print(f"token buffers per side: {input_mb:.1f} MB; verdict: {report['verdict']}")
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
