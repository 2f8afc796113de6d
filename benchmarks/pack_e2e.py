"""End-to-end packing benchmark: pre-tokenized JSONL on disk -> Bridge packed Parquet + metadata on disk.

Run: ``python benchmarks/pack_e2e.py [--n 100000] [--pack 4096] [--workers K]`` from the repository root
(with ``src`` and ``tests`` importable). Prints a table and writes ``benchmarks/results/pack_e2e.json``.

Input (built here, fixed seed): ``n`` stored examples whose runtime lengths are lognormal (median 400,
sigma 1.0) clipped to [16, 4096], random ids in [3, 32000) ending with EOS = 2, a random prompt/answer
loss mask, written as JSONL (``{"input_ids": [...], "loss_mask": [...]}`` per line).

Every run is a fresh subprocess; the timed region is the whole job, from the JSONL on disk to the
Parquet and metadata files on disk, parsing included; peak RSS is the subprocess's own ``VmHWM``. Each
side runs ``--repeat`` times (default 3; Bridge ``--bridge-repeat``, default 1: one run is ~45 s and long
enough to average out a shared machine's noise) and the table shows the **median** run, the JSON every run.

* **bridge**: Megatron-Bridge 0.6.2's offline steps (``data/packing/algorithms.py`` from the wheel, loaded
  by path): each JSONL line parsed with ``json.loads`` into the example dicts its ``tokenize_dataset``
  hands on, then ``create_hist``, ``np.random.seed(0)``, ``create_packing_strategy(first_fit_shuffle)``,
  ``fill_packing_strategy``, a ``pyarrow`` table of the rows written with ``row_group_size=500`` (what its
  ``write_packed_parquet`` does) and the metadata list dumped as JSON. Bridge's own tokenization is not
  involved (the input is already tokenized), which favours Bridge.
* **bridgepack compat**: ``bridgepack.data.pipeline.pack_files`` with ``bridge_compat=True``
  (first_fit_shuffle,
  seed 0): streaming pass 1 into the scratch store, plan, pass 2. Its rows are compared with Bridge's
  (``identical``).
* **bridgepack default**: the same with bridgepack's default algorithm (``balanced`` since 0.2,
  ``best_fit_decreasing`` before).

Text section (``--text-n``, 0 to skip): prompt-completion JSONL of synthetic English-like text and a
word-level fast tokenizer built with ``bridgepack.demo.build_tokenizer``. **tokenizer** times the tokenizer's
own batched calls on the same texts (``tok(prompts)`` and ``tok(completions, add_special_tokens=False)``
in batches of 1024, one process); **bridgepack text** times ``pack_files`` end to end with one worker (so
both use one core) from the JSONL to the Parquet. The ratio is bridgepack / tokenizer seconds.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
EOS = 2


def build_input(path: Path, n: int, pack: int) -> dict[str, int]:
    rng = np.random.default_rng(0)
    runtime = np.clip(rng.lognormal(np.log(400), 1.0, n), 16, pack).astype(np.int64)
    with open(path, "wb") as handle:
        for r in runtime:
            ids = rng.integers(3, 32000, int(r) + 1)
            ids[-1] = EOS
            mask = np.ones(int(r) + 1, dtype=np.int64)
            mask[: int(rng.integers(1, r))] = 0
            handle.write(
                orjson.dumps({"input_ids": ids, "loss_mask": mask}, option=orjson.OPT_SERIALIZE_NUMPY)
            )
            handle.write(b"\n")
    return {"samples": n, "tokens": int(runtime.sum()) + n, "bytes": path.stat().st_size}


def run_bridge(source: Path, out: Path, pack: int) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from _support.peers import bridge_algorithms

    algorithms = bridge_algorithms()
    t0 = time.perf_counter()
    with open(source, "rb") as handle:
        dataset = [json.loads(line) for line in handle]
    sequences, histogram = algorithms.create_hist(dataset, pack)
    state = np.random.get_state()
    np.random.seed(0)
    try:
        assignments, metadata = algorithms.create_packing_strategy(histogram, pack, "first_fit_shuffle")
        rows = algorithms.fill_packing_strategy(assignments, sequences, pack, EOS)
    finally:
        np.random.set_state(state)
    table = pa.table(
        {
            "input_ids": [row["input_ids"] for row in rows],
            "loss_mask": pa.array(
                [[int(v) for v in row["loss_mask"]] for row in rows], type=pa.list_(pa.int8())
            ),
            "seq_start_id": [row["seq_start_id"] for row in rows],
        }
    )
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out / f"training_{pack}.idx.parquet", row_group_size=500)
    (out / f"{pack}_metadata.jsonl").write_text(json.dumps([metadata]))
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "packs": len(rows), "efficiency": metadata["packing_efficiency"]}


def run_bridgepack(source: Path, out: Path, pack: int, compat: bool, workers: int) -> dict[str, Any]:
    from bridgepack.data.pipeline import PackOptions, pack_files

    opts = PackOptions.from_flat(
        [source], out, pack, bridge_compat=compat, seed=0, workers=workers, quiet=True
    )
    t0 = time.perf_counter()
    result = pack_files(opts)
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "packs": result.num_packs,
        "efficiency": result.metadata.packing_efficiency,
        "phases": result.seconds,
    }


WORDS = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "it",
    "you",
    "that",
    "he",
    "was",
    "for",
    "on",
    "are",
    "with",
    "as",
    "I",
    "his",
    "they",
    "be",
    "at",
    "one",
    "have",
    "this",
]


def build_text_input(work: Path, n: int) -> tuple[Path, Path, list[str], list[str]]:
    from bridgepack.demo import build_tokenizer

    rng = np.random.default_rng(1)
    vocab = WORDS + [f"w{i}" for i in range(5000)]
    prompts = [" ".join(rng.choice(vocab, int(k))) for k in rng.integers(10, 200, n)]
    completions = [" ".join(rng.choice(vocab, int(k))) for k in rng.integers(10, 400, n)]
    source = work / f"text_{n}.jsonl"
    with open(source, "wb") as handle:
        for p, c in zip(prompts, completions, strict=True):
            handle.write(orjson.dumps({"prompt": p, "completion": c}) + b"\n")
    tokenizer = build_tokenizer(vocab, work / "toy_tokenizer")
    return source, tokenizer, prompts, completions


def run_text(work: Path, n: int) -> dict[str, Any]:
    from transformers import AutoTokenizer

    from bridgepack.data.pipeline import PackOptions, pack_files

    source, tokenizer_dir, prompts, completions = build_text_input(work, n)
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=True)
    t0 = time.perf_counter()
    tokens = 0
    for i in range(0, n, 1024):
        tokens += sum(map(len, tok(prompts[i : i + 1024])["input_ids"]))
        tokens += sum(map(len, tok(completions[i : i + 1024], add_special_tokens=False)["input_ids"]))
    tokenizer_seconds = time.perf_counter() - t0
    out = work / "bridgepack-text"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    opts = PackOptions.from_flat(
        [source],
        out,
        4096,
        tokenizer=tokenizer_dir,
        workers=1,
        quiet=True,
        prompt_field="prompt",
        completion_field="completion",
    )
    t0 = time.perf_counter()
    pack_files(opts)
    bridgepack_seconds = time.perf_counter() - t0
    return {
        "samples": n,
        "tokens": tokens,
        "tokenizer_seconds": tokenizer_seconds,
        "bridgepack_seconds": bridgepack_seconds,
        "ratio": bridgepack_seconds / tokenizer_seconds,
    }


def peak_rss_mb() -> float:
    """This process's own peak RSS: ``VmHWM`` (Linux). Not ``ru_maxrss``, which survives fork + exec and
    would report the (larger) parent's peak for a child."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]


def child(args: argparse.Namespace) -> None:
    source, out = Path(args.source), Path(args.out)
    if args.tool == "bridge":
        record = run_bridge(source, out, args.pack)
    else:
        record = run_bridgepack(source, out, args.pack, args.tool == "bridgepack-compat", args.workers)
    record["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(record))


def spawn(tool: str, source: Path, out: Path, pack: int, workers: int) -> dict[str, Any]:
    subprocess.run(["rm", "-rf", str(out)], check=True)
    cmd = [sys.executable, __file__, "--child", tool, "--source", str(source), "--out", str(out)]
    cmd += ["--pack", str(pack), "--workers", str(workers)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tool} failed:\n{done.stderr[-2000:]}")
    record: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return record


def spawn_repeated(
    tool: str, source: Path, out: Path, pack: int, workers: int, repeat: int
) -> dict[str, Any]:
    """The median of ``repeat`` fresh runs (by seconds), with every run's seconds and peak RSS kept."""
    runs = sorted((spawn(tool, source, out, pack, workers) for _ in range(max(1, repeat))), key=seconds_of)
    median = dict(runs[len(runs) // 2])
    median["runs"] = [{"seconds": r["seconds"], "peak_rss_mb": r["peak_rss_mb"]} for r in runs]
    return median


def seconds_of(record: dict[str, Any]) -> float:
    return float(record["seconds"])


def identical(a: Path, b: Path) -> bool:
    import pyarrow.parquet as pq

    return bool(pq.read_table(a).equals(pq.read_table(b)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--pack", type=int, default=4096)
    parser.add_argument("--workers", type=int, default=0, help="bridgepack workers (0 = all cores)")
    parser.add_argument("--text-n", type=int, default=20_000, help="text samples (0 = skip)")
    parser.add_argument("--skip-bridge", action="store_true", help="bridgepack only (scale runs)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh runs per bridgepack tool (median shown)")
    parser.add_argument("--bridge-repeat", type=int, default=1, help="fresh runs of Bridge (median shown)")
    parser.add_argument("--work-dir", default=str(RESULTS / "pack_e2e_work"))
    parser.add_argument("--child", dest="tool", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tool:
        child(args)
        return
    from bridgepack.data.samples import default_workers

    workers = args.workers or default_workers()
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    source = work / f"input_{args.n}.jsonl"
    stats = source.with_suffix(".stats.json")
    if source.exists() and stats.exists():  # generation is deterministic: reuse the input of an earlier run
        inputs = json.loads(stats.read_text())
    else:
        inputs = build_input(source, args.n, args.pack)
        stats.write_text(json.dumps(inputs))
    runs = {}
    bridgepack_tools = ("bridgepack-compat", "bridgepack-default")
    tools = bridgepack_tools if args.skip_bridge else ("bridge", *bridgepack_tools)
    for tool in tools:
        repeat = args.bridge_repeat if tool == "bridge" else args.repeat
        runs[tool] = spawn_repeated(tool, source, work / tool, args.pack, workers, repeat)
    name = f"training_{args.pack}.idx.parquet"
    if not args.skip_bridge:
        compat = work / "bridgepack-compat" / name
        runs["bridgepack-compat"]["identical_to_bridge"] = identical(work / "bridge" / name, compat)
        for tool in ("bridgepack-compat", "bridgepack-default"):
            runs[tool]["speedup_vs_bridge"] = runs["bridge"]["seconds"] / runs[tool]["seconds"]
            runs[tool]["rss_fraction_of_bridge"] = runs[tool]["peak_rss_mb"] / runs["bridge"]["peak_rss_mb"]
    lower_bound = -(-(inputs["tokens"] - inputs["samples"]) // args.pack)
    print(f"{'tool':16} {'seconds':>9} {'peak MB':>9} {'packs':>8} {'> LB':>6} {'eff %':>7} {'x Bridge':>9}")
    for tool, rec in runs.items():
        ratio = (
            f"{rec['speedup_vs_bridge']:.1f}"
            if "speedup_vs_bridge" in rec
            else ("1.0" if tool == "bridge" else "-")
        )
        print(
            f"{tool:16} {rec['seconds']:9.2f} {rec['peak_rss_mb']:9.0f} {rec['packs']:8d} "
            f"{rec['packs'] - lower_bound:6d} {rec['efficiency']:7.2f} {ratio:>9}"
        )
    if not args.skip_bridge:
        print(
            "bridgepack-compat rows identical to Bridge's: "
            f"{runs['bridgepack-compat']['identical_to_bridge']}"
        )
    doc: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": workers},
        "inputs": {**inputs, "pack": args.pack, "lower_bound_packs": lower_bound},
        "runs": runs,
    }
    if args.text_n:
        text = run_text(work, args.text_n)
        doc["text"] = text
        print(
            f"text, {text['samples']} prompt-completion samples, {text['tokens']:,} tokens: tokenizer "
            f"{text['tokenizer_seconds']:.2f}s, bridgepack end to end {text['bridgepack_seconds']:.2f}s "
            f"(x{text['ratio']:.2f})"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "pack_e2e.json" if not args.skip_bridge else f"pack_e2e_scale_{args.n}.json"
    (RESULTS / name).write_text(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
