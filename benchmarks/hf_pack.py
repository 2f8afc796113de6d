"""``bridgepack.trl.pack_dataset`` vs TRL 1.16.0's ``pack_dataset`` (bfd) vs one Arrow ``take`` of the same
data.

Run: ``python benchmarks/hf_pack.py [--rows 300000] [--seq-length 2048] [--repeat 5]`` from the repository
root with ``src`` and ``tests`` importable. Prints a table and writes ``benchmarks/results/hf_pack.json``.

Input (built here, fixed seed): ``rows`` rows of lognormal lengths (median 330, sigma 0.9, clipped to
[8, 16384]: 300,000 rows hold ~147M tokens), two list columns as ``datasets`` stores a TRL-tokenized
prompt-completion set: ``input_ids`` list<int32> (random ids) and ``completion_mask`` list<int64> (0 on
a random prompt prefix, then 1). Written as a ``datasets`` cache file (Arrow IPC stream, record batches of
1,000 rows) and opened with ``Dataset.from_file`` (memory-mapped), as a dataset from ``load_dataset``
or ``map`` is. The file is read once before the runs, so every tool starts with it in the page cache.

Each run is a fresh process; the timed region is the one call below, imports excluded (wall seconds, and
the process's CPU seconds, user + system, which a busy shared machine inflates less); peak RSS is the
process's ``VmHWM`` (it counts the memory-mapped input pages a tool touches). Cache files of earlier runs
are deleted and the page cache synced before each run, so no result is read back from a cache. A run that
follows one which wrote a gigabyte cache file is slower on this machine (up to 2x, most of it system time,
whichever tool it is), so each turn runs the tools in another order (turn 0 as given, then a seeded
shuffle): none always follows the same other one, and the median of the turns is shown.

* **take** -- the floor: ``table.select(["input_ids", "completion_mask"]).take(order)`` with ``order`` a
  random permutation of the rows, in memory (no file written). On the table as stored (300 chunks) Arrow
  concatenates the chunks first; **take_combined** combines them before the clock starts (pure gather).
* **trl** -- ``trl.pack_dataset(ds, seq_length, "bfd")``: its ``map`` plans each batch of 1,000 rows apart
  and writes the result to a cache file next to the input.
* **bridgepack** -- ``bridgepack.trl.pack_dataset(ds, seq_length, "bfd")``: one global plan, the result
  written to a cache file next to the input.
* **bridgepack_built** -- bridgepack with the direct write switched off (as where the C library has no
  ``pwritev``):
  each record batch built in memory, then written (what bridgepack did before the direct write).
* **trl_mem**, **bridgepack_mem** -- the same with ``map_kwargs={"keep_in_memory": True}``: the result stays
  in
  memory, no cache file is written (what is left is each packer's own work).

packs: rows of the result; tokens: tokens in them (``bfd`` truncates rows longer than ``seq_length``, both
keep the same tokens).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

#: The child: open the dataset, time one call, print a JSON line (seconds, packs, tokens, peak RSS).
CHILD = r"""
import json, os, re, sys, time
import numpy as np
from datasets import Dataset, disable_progress_bars
disable_progress_bars()
tool, path, seq_length = sys.argv[1], sys.argv[2], int(sys.argv[3])
ds = Dataset.from_file(path)
if tool.startswith("take"):
    order = np.random.default_rng(0).permutation(len(ds))
    table = ds.data.table.select(["input_ids", "completion_mask"])
    if tool == "take_combined":
        table = table.combine_chunks()
    start, cpu = time.perf_counter(), os.times()
    out = table.take(order)
    seconds, after = time.perf_counter() - start, os.times()
    packs, tokens = out.num_rows, None
else:
    if tool.startswith("trl"):
        from _support.trl import trl_data_utils
        pack = trl_data_utils().pack_dataset
    else:
        from bridgepack.trl import pack_dataset as pack
        if tool == "bridgepack_built":  # the cache file from built batches, as without pwritev
            import bridgepack.trl._direct
            bridgepack.trl._direct._PWRITEV = None
    kwargs = {"keep_in_memory": True} if tool.endswith("_mem") else None
    start, cpu = time.perf_counter(), os.times()
    out = pack(ds, seq_length, "bfd", kwargs)
    seconds, after = time.perf_counter() - start, os.times()
    lengths = out.data.table.column("seq_lengths").combine_chunks().values.to_numpy()
    packs, tokens = len(out), int(lengths.sum())
hwm = int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) * 1024
cpu_seconds = after.user + after.system - cpu.user - cpu.system
result = {"seconds": seconds, "cpu_seconds": cpu_seconds, "sys_seconds": after.system - cpu.system,
          "packs": packs, "tokens": tokens, "peak_rss": hwm}
print(json.dumps(result))
"""


def build_input(path: Path, rows: int) -> dict[str, int]:
    """Write the dataset file; return its row and token counts."""
    rng = np.random.default_rng(0)
    lengths = np.clip(rng.lognormal(np.log(330), 0.9, rows), 8, 16384).astype(np.int64)
    schema = pa.schema([("input_ids", pa.list_(pa.int32())), ("completion_mask", pa.list_(pa.int64()))])
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        for lo in range(0, rows, 1000):
            part = lengths[lo : lo + 1000]
            offsets = np.concatenate([[0], np.cumsum(part)]).astype(np.int32)
            ids = rng.integers(3, 32000, int(offsets[-1]), dtype=np.int32)
            prompt = (rng.random(part.size) * part).astype(np.int64)
            position = np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], part)
            mask = (position >= np.repeat(prompt, part)).astype(np.int64)
            off = pa.array(offsets)
            writer.write_batch(
                pa.record_batch(
                    [pa.ListArray.from_arrays(off, ids), pa.ListArray.from_arrays(off, mask)], schema=schema
                )
            )
    return {"rows": rows, "tokens": int(lengths.sum()), "bytes": path.stat().st_size}


def run_child(tool: str, path: Path, seq_length: int) -> dict[str, Any]:
    for stale in path.parent.glob("cache-*.arrow"):
        stale.unlink()
    os.sync()  # no tool pays for writing back an earlier tool's cache file
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", CHILD, tool, str(path), str(seq_length)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{tool} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--seq-length", type=int, default=2048)
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="runs per tool, in another order each turn; the table shows the median",
    )
    parser.add_argument(
        "--tools", default="take,take_combined,trl,bridgepack,bridgepack_built,trl_mem,bridgepack_mem"
    )
    args = parser.parse_args()
    tools = args.tools.split(",")
    from _support.trl import TRL_VERSION

    results: dict[str, list[dict[str, Any]]] = {tool: [] for tool in tools}
    with tempfile.TemporaryDirectory(prefix="bridgepack-hf-bench-") as tmp:
        path = Path(tmp) / "data.arrow"
        inputs = build_input(path, args.rows)
        with open(path, "rb") as handle:  # into the page cache, for every tool alike
            while handle.read(1 << 24):
                pass
        run_child("bridgepack", path, 16)  # compile / load numba's cache outside the timed runs
        for turn in range(args.repeat):
            for tool in tools if turn == 0 else random.Random(turn).sample(tools, len(tools)):
                results[tool].append(run_child(tool, path, args.seq_length))
    median = {
        tool: sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2] for tool, runs in results.items()
    }
    print(
        f"input: {inputs['rows']:,} rows, {inputs['tokens']:,} tokens ({inputs['bytes'] / 2**30:.2f} GiB), "
        f"seq_length {args.seq_length}, TRL {TRL_VERSION}, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'tool':<14}{'seconds':>9}{'CPU s':>8}{'of it sys':>10}{'packs':>10}{'tokens':>14}"
        f"{'peak RSS GiB':>14}"
    )
    for tool, row in median.items():
        tokens = "" if row["tokens"] is None else f"{row['tokens']:,}"
        print(
            f"{tool:<14}{row['seconds']:>9.2f}{row['cpu_seconds']:>8.2f}{row['sys_seconds']:>10.2f}"
            f"{row['packs']:>10,}{tokens:>14}{row['peak_rss'] / 2**30:>14.2f}"
        )
    ratios = {}
    if {"bridgepack", "take"} <= set(median):
        ratios["bridgepack_over_take"] = median["bridgepack"]["seconds"] / median["take"]["seconds"]
        ratios["bridgepack_over_take_cpu"] = (
            median["bridgepack"]["cpu_seconds"] / median["take"]["cpu_seconds"]
        )
    if {"bridgepack", "take_combined"} <= set(median):
        combined = median["take_combined"]
        ratios["bridgepack_over_take_combined"] = median["bridgepack"]["seconds"] / combined["seconds"]
        ratios["bridgepack_over_take_combined_cpu"] = (
            median["bridgepack"]["cpu_seconds"] / combined["cpu_seconds"]
        )
    if {"bridgepack", "trl"} <= set(median):
        ratios["trl_over_bridgepack"] = median["trl"]["seconds"] / median["bridgepack"]["seconds"]
        ratios["trl_over_bridgepack_cpu"] = median["trl"]["cpu_seconds"] / median["bridgepack"]["cpu_seconds"]
        ratios["packs_bridgepack_minus_trl"] = median["bridgepack"]["packs"] - median["trl"]["packs"]
        ratios["peak_rss_bridgepack_over_trl"] = median["bridgepack"]["peak_rss"] / median["trl"]["peak_rss"]
    if {"bridgepack", "bridgepack_built"} <= set(median):
        ratios["built_over_direct"] = median["bridgepack_built"]["seconds"] / median["bridgepack"]["seconds"]
    if {"bridgepack_mem", "trl_mem"} <= set(median):
        ratios["trl_over_bridgepack_in_memory"] = (
            median["trl_mem"]["seconds"] / median["bridgepack_mem"]["seconds"]
        )
        ratios["trl_over_bridgepack_in_memory_cpu"] = (
            median["trl_mem"]["cpu_seconds"] / median["bridgepack_mem"]["cpu_seconds"]
        )
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}" if isinstance(value, float) else f"{name}: {value}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "hf_pack.json"
    machine = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "load_average_1m": os.getloadavg()[0],
        "pyarrow": pa.__version__,
    }
    payload = {
        "machine": machine,
        "inputs": {**inputs, "seq_length": args.seq_length, "trl": TRL_VERSION},
        "runs": results,
        "ratios": ratios,
    }
    out.write_text(json.dumps(payload, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
