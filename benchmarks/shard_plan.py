"""Packs of shards planned alone (``bridgepack pack --engine ray``) against one plan, on lengths only.

Run: ``python benchmarks/shard_plan.py [--n 100000] [--pack 256] [--shards 2 8 32]`` from the repository
root (``src`` importable). Prints, per length distribution, algorithm and shard count: the packs of one
plan over all lengths, how many more the shards planned alone make, the issue's goal (0.1 % of one plan +
one a shard) and the packs after a "tail" repack: each shard hands over its least-filled packs and its
packs of short samples only (``--tail`` sizes: ``c`` for ``c * sqrt(shard packs) + 2c`` packs a shard),
which are planned again together with the same algorithm (kept only when that makes fewer packs).

Shards are contiguous slices of the lengths in input order, as the engine slices whole files. This is the
arithmetic of docs/scale.md's "Planning" table; no samples, no Ray.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from bridgepack.packing import PackPlan, pack_lengths


def lengths_of(name: str, n: int, pack: int, rng: np.random.Generator) -> np.ndarray:
    """Runtime lengths in [1, pack]: spread over the range (uniform, two halves) or chat-like (lognormal)."""
    if name == "uniform":
        return rng.integers(1, pack + 1, n)
    if name == "halves":  # as many samples above pack/2 as below it
        return np.where(
            rng.random(n) < 0.5, rng.integers(pack // 2 + 1, pack + 1, n), rng.integers(1, pack // 2, n)
        )
    return np.clip(rng.lognormal(math.log(pack / 4), 1.0, n), 1, pack).astype(np.int64)


def tail_items(plan: PackPlan, count: int) -> np.ndarray:
    """The items of the plan's ``count // 2`` least-filled packs and of the ``count - count // 2`` packs
    with the shortest longest sample (the packs of short samples only, first)."""
    starts = plan.pack_offsets[:-1]
    lens = plan.lengths[plan.items]
    fill, longest = np.add.reduceat(lens, starts), np.maximum.reduceat(lens, starts)
    chosen = np.zeros(plan.num_packs, bool)
    chosen[np.argsort(fill, kind="stable")[: count // 2]] = True
    rest = np.flatnonzero(~chosen)
    chosen[rest[np.argsort(longest[rest], kind="stable")[: count - count // 2]]] = True
    packs = np.flatnonzero(chosen)
    return np.concatenate([plan.items[plan.pack_offsets[p] : plan.pack_offsets[p + 1]] for p in packs])


def sharded_packs(lengths: np.ndarray, pack: int, shards: int, algorithm: str, tail: float) -> int:
    """Packs of the shards planned alone, with a tail repack of about ``tail * sqrt(packs)`` a shard."""
    kept, handed = 0, []
    for part in np.array_split(lengths, shards):
        plan = pack_lengths(part, pack, algorithm=algorithm)
        count = min(plan.num_packs, math.ceil(tail * math.sqrt(plan.num_packs) + 2 * tail))
        kept += plan.num_packs - count
        handed.append((count, part[tail_items(plan, count)] if count else part[:0]))
    moved = sum(c for c, _ in handed)
    if not moved:
        return kept
    again = pack_lengths(np.concatenate([t for _, t in handed]), pack, algorithm=algorithm).num_packs
    return kept + min(moved, again)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--pack", type=int, default=256)
    parser.add_argument("--shards", type=int, nargs="+", default=[2, 8, 32])
    parser.add_argument("--tail", type=float, nargs="+", default=[2.0, 8.0])
    parser.add_argument("--algorithms", nargs="+", default=["balanced", "best_fit_decreasing"])
    args = parser.parse_args()
    print(
        f"{'lengths':<9} {'algorithm':<20} {'shards':>6} {'one plan':>9} {'alone':>6} {'goal':>5} tail repack"
    )
    for name in ("uniform", "halves", "lognormal"):
        lengths = lengths_of(name, args.n, args.pack, np.random.default_rng(0))
        for algorithm in args.algorithms:
            one = pack_lengths(lengths, args.pack, algorithm=algorithm).num_packs
            for shards in args.shards:
                alone = sharded_packs(lengths, args.pack, shards, algorithm, 0.0) - one
                goal = int(one * 0.001) + shards
                tails = [sharded_packs(lengths, args.pack, shards, algorithm, t) - one for t in args.tail]
                shown = " ".join(f"c={t:g}: {d:+d}" for t, d in zip(args.tail, tails, strict=True))
                print(f"{name:<9} {algorithm:<20} {shards:>6} {one:>9,} {alone:>+6} {goal:>5} {shown}")


if __name__ == "__main__":
    main()
