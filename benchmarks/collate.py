"""Batching benchmark: bridgepack's packed dataset + collate against Megatron-Bridge 0.6.2's own.

Run: ``python benchmarks/collate.py [--rows 32] [--pack 4096] [--repeat 5]`` from the repository root (with
``src`` and ``tests`` importable). Prints a table and writes ``benchmarks/results/collate.json``.

Inputs (built here, fixed seed): 512 packs of ``--pack`` runtime tokens (sequences of lognormal length,
median 300), stored in Bridge's Parquet layout (row groups of 500); once with P = 1 and once pre-padded to
P = 8 (CP 4). One global batch of a DP rank is ``--rows`` packs (indices from Bridge's sampler order).

Timed regions (wall clock, best of ``--repeat`` after one warm-up):

* **item fetch**: ``[ds[i] for i in indices]``: bridgepack's ``PackedDataset`` (numpy views from a row-group
  cache) vs Bridge's ``GPTSFTPackedParquetDataset.__getitem__`` (Python lists via ``as_py``), loaded from the
  wheel by path with the stand-ins of ``tests/_support/bridge_batching.py``.
* **collate**: ``PackedCollator(...)(items)`` vs Bridge's ``collate_fn(items)`` on the same items (each tool
  on its own dataset's items), with Bridge's defaults (``pad_seq_length_to_mult=16``) and ``pad_seq_to_mult``
  P. The outputs are checked equal before timing.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy as np
import torch

from _support.bridge_batching import bridge_parquet_dataset
from _support.packs import make_row, write_packs
from bridgepack.batching import GlobalBatchSampler, PackedCollator, PackedDataset

EOS = 2


def _rows(n: int, pack: int, p: int, rng: np.random.Generator) -> list[dict[str, list[int]]]:
    rows = []
    for _ in range(n):
        seqs, masks, budget = [], [], pack
        while budget >= p:
            r = int(np.clip(rng.lognormal(np.log(300), 0.8), 1, budget))
            r_pad = min(-(-r // p) * p, budget // p * p)
            r = min(r, r_pad)
            seqs.append([*rng.integers(3, 32000, size=r).tolist(), *[EOS] * (r_pad - r), EOS])
            masks.append([*[1] * r, *[0] * (r_pad - r), 0])
            budget -= r_pad
            if rng.random() < 0.15:
                break
        rows.append(make_row(seqs, masks))
    return rows


def _best(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _time_all(
    ours_ds: Any,
    theirs_ds: Any,
    collate: Any,
    indices: list[int],
    ours: list[Any],
    theirs: list[Any],
    repeat: int,
) -> dict[str, float]:
    return {
        "fetch_bridgepack_s": _best(lambda: [ours_ds[i] for i in indices], repeat),
        "fetch_bridge_s": _best(lambda: [theirs_ds[i] for i in indices], repeat),
        "collate_bridgepack_s": _best(lambda: collate(ours), repeat),
        "collate_bridge_s": _best(lambda: theirs_ds.collate_fn(theirs), repeat),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=32)
    parser.add_argument("--pack", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    results: list[dict[str, Any]] = []
    with TemporaryDirectory() as tmp:
        for p in (1, 8):
            path = write_packs(Path(tmp) / f"p{p}" / f"training_{args.pack}.idx.parquet",
                               _rows(512, args.pack, p, np.random.default_rng(p)))  # fmt: skip
            ours_ds = PackedDataset(path)
            theirs_ds = bridge_parquet_dataset(str(path), EOS, max_seq_length=args.pack, pad_seq_to_mult=p)
            collate = PackedCollator(EOS, args.pack, pad_seq_to_mult=p)
            indices = next(iter(GlobalBatchSampler(512, args.rows, seed=0)))
            ours_items = [ours_ds[i] for i in indices]
            theirs_items = [theirs_ds[i] for i in indices]
            want, got = theirs_ds.collate_fn(theirs_items), collate(ours_items)
            for key, value in want.items():
                same = torch.equal(value, got[key]) if isinstance(value, torch.Tensor) else value == got[key]
                assert same, key
            timings = _time_all(ours_ds, theirs_ds, collate, indices, ours_items, theirs_items, args.repeat)
            tokens = sum(len(item["input_ids"]) for item in ours_items)
            results.append(
                {"pad_seq_to_mult": p, "rows": args.rows, "pack": args.pack, "tokens": tokens, **timings}
            )
    print(f"{'P':>2} {'rows':>5} {'tokens':>8} | {'fetch s (bridgepack/bridge)':>26} {'x':>6} | "
          f"{'collate s (bridgepack/bridge)':>28} {'x':>6}")  # fmt: skip
    for r in results:
        fetch_x = r["fetch_bridge_s"] / r["fetch_bridgepack_s"]
        collate_x = r["collate_bridge_s"] / r["collate_bridgepack_s"]
        print(
            f"{r['pad_seq_to_mult']:>2} {r['rows']:>5} {r['tokens']:>8} | "
            f"{r['fetch_bridgepack_s']:>12.5f} / {r['fetch_bridge_s']:<11.5f} {fetch_x:>6.1f} | "
            f"{r['collate_bridgepack_s']:>13.5f} / {r['collate_bridge_s']:<12.5f} {collate_x:>6.1f}"
        )
    out = Path("benchmarks/results/collate.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = {"python": sys.version.split()[0], "platform": platform.platform(), "torch": torch.__version__}
    out.write_text(json.dumps({"machine": machine, "results": results}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
