"""Balance benchmark: per-step DP imbalance of Bridge's packs versus bridgepack's balanced packs.

Run: ``python benchmarks/balance.py [--n 1000000] [--epochs 3]`` from the repository root (with ``src`` and
``tests`` importable). Prints a table and writes ``benchmarks/results/balance.json``.

Inputs (built here, fixed seed): a long-tail chat mixture -- 70% short turns (lognormal, median 300),
25% long answers (lognormal, median 2000), 5% documents (log-uniform in [4096, top]) -- clipped to
[16, top] runtime tokens. Three scenarios, DP 8, equal token slots per step (GBS x pack = 524,288):

* ``chat-16k``: top 16384, pack 16384, GBS 32 (4 packs per rank per step);
* ``chat-32k``: top 32768, pack 32768, GBS 16 (2 packs per rank);
* ``chat-16k/pack-32k``: the chat-16k data in packs of 32768, GBS 16.

Packings: Bridge's ``first_fit_shuffle`` (``pack_lengths(..., "first_fit_shuffle", seed=0)``, pack for pack
what Bridge 0.6.2 builds, tested in tests/packing), bridgepack's ``best_fit_decreasing`` and bridgepack's
``balanced`` packing for the 7B-like cost model (4096 hidden, 32 layers, 32 heads, 11008 ffn, 32000 vocab,
SwiGLU; FLOPs per Megatron-LM's formula, see ``bridgepack.packing._cost``).

Cost of a rank on a step = summed cost of the packs Bridge's sampler deals it. The dealing is done by
**Bridge 0.6.2's own** ``MegatronPretrainingBatchSampler`` (``data/samplers.py`` from the wheel, loaded by
path; one instance per DP rank, seed 1234, epoch e = ``consumed_samples = e * active_total``), cross-checked
against bridgepack's ``rank_loads``. Reported per packing: imbalance = mean over all steps of the epochs of
max/mean rank cost (plus p95 and worst), and the epoch time implied by waiting for the slowest rank
(sum over steps of the max rank cost) relative to Bridge's packs. "Excess cut" = 1 - (imbalance - 1) /
(Bridge's imbalance - 1).

``bound`` is what no packing into as many packs can beat: sorted descending, the j most expensive packs
cost at least what the packs holding the j longest sequences must cost -- their squares and, with at
most ``pack`` tokens per pack, at least ``T - (packs - j) * pack`` tokens; the most even cost vector
meeting every such prefix bound (the least concave majorant, see ``most_even_costs``) has the least
spread (CV) any packing can have (variance is Schur-convex); its simulated imbalance is shown for
reference. ``seconds`` = wall time of the packing call (one run after a JIT warm-up).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
import types
from pathlib import Path
from typing import Any

import numba
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from bridgepack._io import atomic_write_bytes  # noqa: E402
from bridgepack.packing import CostModel, PackPlan, balanced_pack, pack_costs, pack_lengths  # noqa: E402
from bridgepack.sizing import rank_loads  # noqa: E402

RESULT = REPO / "benchmarks" / "results" / "balance.json"
DP = 8
SEED = 1234
SCENARIOS = {  # name: (top length, pack size, GBS)
    "chat-16k": (16384, 16384, 32),
    "chat-32k": (32768, 32768, 16),
    "chat-16k/pack-32k": (16384, 32768, 16),
}


def chat(n: int, top: int, rng: np.random.Generator) -> np.ndarray:
    kind = rng.choice(3, size=n, p=[0.70, 0.25, 0.05])
    short = rng.lognormal(np.log(300), 0.9, n)
    long = rng.lognormal(np.log(2000), 0.8, n)
    docs = np.exp(rng.uniform(np.log(4096), np.log(top), n))
    values = np.where(kind == 0, short, np.where(kind == 1, long, docs))
    return np.clip(np.round(values), 16, top).astype(np.int64)


def bridge_sampler_module() -> types.ModuleType:
    from _support.bridge_batching import bridge_module

    return bridge_module("data/samplers.py", "bridge_samplers")


def bridge_loads(module: types.ModuleType, costs: np.ndarray, gbs: int, epoch: int) -> np.ndarray:
    """``[steps, DP]`` rank costs of one epoch, dealt by Bridge's sampler (one instance per rank)."""
    total = costs.shape[0]
    active = total // gbs * gbs  # drop_last
    per_rank = []
    for rank in range(DP):
        sampler = module.MegatronPretrainingBatchSampler(
            total_samples=total,
            consumed_samples=epoch * active,
            micro_batch_size=1,
            global_batch_size=gbs,
            data_parallel_rank=rank,
            data_parallel_size=DP,
            drop_last=True,
            shuffle=True,
            seed=SEED,
        )
        per_rank.append([costs[np.asarray(batch)].sum() for batch in sampler])
    return np.asarray(per_rank, dtype=np.float64).T


def imbalance(loads: list[np.ndarray]) -> dict[str, float]:
    stacked = np.concatenate(loads)
    ratios = stacked.max(axis=1) / stacked.mean(axis=1)
    return {
        "imbalance_mean": float(ratios.mean()),
        "imbalance_p95": float(np.percentile(ratios, 95)),
        "imbalance_worst": float(ratios.max()),
        "epoch_time": float(sum(s.max(axis=1).sum() for s in loads) / len(loads)),
        "steps": int(stacked.shape[0]),
    }


def most_even_costs(lengths: np.ndarray, packs: int, pack: int, model: CostModel) -> np.ndarray:
    """Most even pack-cost vector any packing of ``lengths`` into ``packs`` packs can reach.

    Sort pack costs descending. The j most expensive packs cost at least as much as the j packs that
    hold the j longest sequences: those hold all j sequences (their squares) and, since no pack holds
    more than ``pack`` tokens, at least ``T - (packs - j) * pack`` tokens. So every prefix sum is at least
    ``B_j = dense * max(sum_{k<=j} L_k, T - (packs-j) * pack) + attention * sum_{k<=j} L_k^2`` and the total
    is fixed; the most even such vector (minimal in the majorization order, so of least variance) has
    the least concave majorant of the points ``(j, B_j)`` as its prefix sums.
    """
    top = np.sort(lengths)[::-1][:packs].astype(np.float64)
    total_tokens = float(lengths.sum())
    j = np.arange(0, packs + 1, dtype=np.float64)
    tokens = np.maximum(np.concatenate([[0.0], np.cumsum(top)]), total_tokens - (packs - j) * pack)
    squares = np.concatenate([[0.0], np.cumsum(top * top)])
    bound = model.dense * tokens + model.attention * squares
    bound[-1] = float(model.sequence_costs(lengths).sum())
    hull: list[int] = []  # upper hull (monotone chain) of the points (j, bound[j])
    for k in range(packs + 1):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (bound[b] - bound[a]) * (k - a) <= (bound[k] - bound[a]) * (b - a):
                hull.pop()
            else:
                break
        hull.append(k)
    prefix = np.interp(j, np.asarray(hull, dtype=np.float64), bound[hull])
    return np.diff(prefix)


def run_packing(name: str, lengths: np.ndarray, pack: int, model: CostModel) -> tuple[PackPlan, float]:
    start = time.perf_counter()
    if name == "bridgepack balanced":
        plan = balanced_pack(lengths, pack, model)
    else:
        plan = pack_lengths(lengths, pack, algorithm=name.split()[-1], seed=0)
    return plan, time.perf_counter() - start


def versions() -> dict[str, str]:
    import torch

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "torch": torch.__version__,
        "megatron_bridge": "0.6.2",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="sequences per scenario")
    parser.add_argument("--epochs", type=int, default=3, help="sampler epochs simulated per packing")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()

    module = bridge_sampler_module()
    model = CostModel.default()
    balanced_pack(np.array([5, 3, 1, 1, 1]), 10, model)  # JIT warm-up (numba caches on disk)
    rows: list[dict[str, Any]] = []
    for scenario, (top, pack, gbs) in SCENARIOS.items():
        lengths = chat(args.n, top, np.random.default_rng(SEED))
        base: dict[str, Any] | None = None
        for name in ("bridge first_fit_shuffle", "bridgepack best_fit_decreasing", "bridgepack balanced"):
            plan, seconds = run_packing(name, lengths, pack, model)
            dense, attention = pack_costs(plan, model)
            costs = dense + attention
            loads = [bridge_loads(module, costs, gbs, e) for e in range(args.epochs)]
            for e, epoch_loads in enumerate(loads):  # bridgepack's simulation deals the same way
                np.testing.assert_allclose(rank_loads(costs, DP, gbs, SEED, e), epoch_loads, rtol=1e-12)
            row: dict[str, Any] = {
                "scenario": scenario,
                "packing": name,
                "algorithm_used": plan.algorithm,
                "n": args.n,
                "pack_size": pack,
                "gbs": gbs,
                "dp": DP,
                "packs": plan.num_packs,
                "efficiency": plan.total_length / (plan.num_packs * pack),
                "cost_cv": float(costs.std() / costs.mean()),
                "attention_share": float(attention.sum() / costs.sum()),
                "seconds": seconds,
                **imbalance(loads),
            }
            if base is None:
                base = row
            row["excess_cut_vs_bridge"] = 1 - (row["imbalance_mean"] - 1) / (base["imbalance_mean"] - 1)
            row["epoch_time_vs_bridge"] = row["epoch_time"] / base["epoch_time"]
            row["efficiency_delta_vs_bridge"] = row["efficiency"] - base["efficiency"]
            rows.append(row)
        ideal = most_even_costs(lengths, rows[-1]["packs"], pack, model)
        rows.append(
            {
                "scenario": scenario,
                "packing": "bound (no packing does better)",
                "packs": rows[-1]["packs"],
                "cost_cv": float(ideal.std() / ideal.mean()),
                **imbalance([rank_loads(ideal, DP, gbs, SEED, e) for e in range(args.epochs)]),
            }
        )
        rows[-1]["excess_cut_vs_bridge"] = 1 - (rows[-1]["imbalance_mean"] - 1) / (base["imbalance_mean"] - 1)

    header = (
        f"{'scenario':<18} {'packing':<28} {'packs':>7} {'eff %':>8} {'cost CV':>8} {'imbal':>7} "
        f"{'p95':>6} {'excess cut':>10} {'epoch time':>10} {'seconds':>8}"
    )
    print(header)
    for row in rows:
        eff = f"{100 * row['efficiency']:.3f}" if "efficiency" in row else "-"
        time_ratio = f"{row['epoch_time_vs_bridge']:.4f}" if "epoch_time_vs_bridge" in row else "-"
        seconds = f"{row['seconds']:.2f}" if "seconds" in row else "-"
        print(
            f"{row['scenario']:<18} {row['packing']:<28} {row['packs']:>7} {eff:>8} "
            f"{row['cost_cv']:>8.4f} {row['imbalance_mean']:>7.4f} {row['imbalance_p95']:>6.3f} "
            f"{row['excess_cut_vs_bridge']:>10.1%} {time_ratio:>10} {seconds:>8}"
        )

    report = {
        "schema_version": 1,
        "benchmark": "balance",
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "processor": platform.processor(),
        },
        "versions": versions(),
        "inputs": {
            "scenarios": {k: {"top": t, "pack_size": p, "gbs": g} for k, (t, p, g) in SCENARIOS.items()},
            "dp": DP,
            "sampler_seed": SEED,
            "epochs": args.epochs,
            "cost_model": model.to_record(),
        },
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(args.out, (json.dumps(report, indent=2) + "\n").encode(), overwrite=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
