"""Pack-size candidates evaluated on the user's own lengths, a recommendation and its Bridge overrides.

For each candidate pack size ``N`` (runtime tokens) and the topology's pad multiple ``m`` (bridge-format §7)::

    cap        = floor(N / m) * m              longest runtime length a sample may keep
    rejected   = #{r > cap}                    not packed (``bridgepack pack`` default; or truncated)
    r'         = ceil(r / m) * m               CP/SP pre-padding of every kept sample (bridge-format §2)
    packs      = best_fit_decreasing(r', N)    the tightest packing (the default, balanced, uses as many)
    efficiency = sum(r) / (packs * N)          real tokens per token slot (pre-padding counts as waste)
    pad cost   = sum(r' - r) / sum(r)          extra tokens the pad multiple costs
    saved      = (kept - packs) * N            token slots saved versus one padded row per sample
    GBS        = token_slots // N              same tokens per step for every candidate (MBS 1, bridge-format
    §8) steps      = packs // GBS                  optimizer steps per epoch (the last partial batch drops)

Worked example, lengths 3 5 2 7 (runtime), m = 1, N = 8, token slots 16: cap 8, nothing rejected,
best_fit_decreasing packs [7] [5, 3] [2] -> 3 packs, efficiency 17/24 = 70.8%, saved (4-3)*8 = 8 slots,
GBS 2, 1 step per epoch.

Recommendation: among candidates whose GBS the DP size divides, the fewest rejected samples, then the
least estimated epoch time::

    epoch time ~ (dense * packs * N + attention * sum(r^2)) * imbalance

(every token slot is computed, padding included; attention is the same for every candidate since each
sequence costs its own L^2 in any pack; the step waits for the slowest rank, so the mean simulated
imbalance -- of balanced packs when they are better, else of plain ones; 1 without ``--dp`` --
scales it). Within :data:`EPOCH_TIE` of the best, the smaller pack wins (more optimizer steps, less
activation memory).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from bridgepack._ranges import SIZE
from bridgepack.data.packset import offline_packing_overrides
from bridgepack.errors import UsageError, param
from bridgepack.packing import (
    BEST_FIT_DECREASING,
    CostModel,
    PackPlan,
    balanced_pack,
    pack_costs,
    pack_lengths,
    pad_multiple,
)
from bridgepack.sizing._imbalance import Imbalance, step_imbalance

IntArray = npt.NDArray[np.int64]

DEFAULT_PACK_SIZES = (2048, 4096, 8192, 16384)
DEFAULT_TOKEN_SLOTS = 65536
#: Sampler epochs simulated per candidate (more steps, less noise on small datasets).
SIMULATED_EPOCHS = 3
#: Balanced packs (the default) are reported as lowering the simulated mean imbalance from this much on.
BALANCE_WORTHWHILE = 0.002
#: Estimated epoch times within this fraction of the best count as a tie, won by the smaller pack.
EPOCH_TIE = 0.005


@dataclass(frozen=True)
class Topology:
    """Parallel sizes that matter to packing: TP/CP/SP give the pad multiple, DP the batch split."""

    tp: int = 1
    cp: int = 1
    sequence_parallel: bool = False
    dp: int | None = None

    @classmethod
    def resolve(
        cls, tp: int, cp: int, sequence_parallel: bool, dp: int | None, world_size: int | None
    ) -> Topology:
        """``--dp`` or ``--world-size`` (DP = world / (TP * CP), no pipeline parallelism), not both."""
        if dp is not None and world_size is not None:
            raise UsageError(f"give either {param('dp')} or {param('world_size')}, not both")
        if world_size is not None:
            if world_size < 1 or world_size % (tp * cp):
                raise UsageError(f"{param('world_size')} {world_size} is not a multiple of TP {tp} x CP {cp}")
            dp = world_size // (tp * cp)
        if dp is not None and dp < 1:
            raise UsageError(f"{param('dp')} must be >= 1, got {dp}")
        pad_multiple(cp, tp, sequence_parallel)  # validates tp/cp
        return cls(tp, cp, sequence_parallel, dp)

    @property
    def pad_multiple(self) -> int:
        return pad_multiple(self.cp, self.tp, self.sequence_parallel)


@dataclass
class Candidate:
    """One pack size, evaluated (see the module docstring for every formula)."""

    pack_size: int
    pad_multiple: int
    samples: int
    rejected: int
    packs: int
    lower_bound: int
    real_tokens: int
    pad_tokens: int
    gbs: int
    gbs_exact: bool
    dp_divides: bool | None
    steps_per_epoch: int
    dense_flops_per_step: float
    attention_flops_per_step: float
    epoch_flops: float  # dense over every token slot + attention over every kept sequence
    imbalance: Imbalance | None = None
    imbalance_balanced: Imbalance | None = (
        None  # the same, for balanced packs (``bridgepack pack``'s default)
    )
    notes: list[str] = field(default_factory=list)

    @property
    def kept(self) -> int:
        return self.samples - self.rejected

    @property
    def efficiency(self) -> float:
        return self.real_tokens / (self.packs * self.pack_size) if self.packs else 0.0

    @property
    def pad_cost(self) -> float:
        return self.pad_tokens / self.real_tokens if self.real_tokens else 0.0

    @property
    def padding_saved(self) -> int:
        """Token slots saved versus padding every kept sample to ``N`` on its own."""
        return (self.kept - self.packs) * self.pack_size

    @property
    def padding_saved_fraction(self) -> float:
        return 1.0 - self.packs / self.kept if self.kept else 0.0

    @property
    def attention_share(self) -> float:
        total = self.dense_flops_per_step + self.attention_flops_per_step
        return self.attention_flops_per_step / total if total else 0.0

    @property
    def best_imbalance(self) -> float:
        """Mean simulated imbalance of the better of plain and balanced packs (1.0 when not simulated)."""
        means = [i.mean for i in (self.imbalance, self.imbalance_balanced) if i is not None]
        return min(means) if means else 1.0

    @property
    def estimated_epoch_cost(self) -> float:
        """FLOPs of an epoch scaled by the time ranks wait for the slowest one (module docstring)."""
        return self.epoch_flops * self.best_imbalance

    @property
    def feasible(self) -> bool:
        return self.packs > 0 and self.gbs >= 1 and self.dp_divides is not False

    def to_dict(self) -> dict[str, Any]:
        return {
            "pack_size": self.pack_size,
            "pad_seq_to_mult": self.pad_multiple,
            "samples": self.samples,
            "rejected": self.rejected,
            "packs": self.packs,
            "lower_bound": self.lower_bound,
            "efficiency": self.efficiency,
            "padding_saved_tokens": self.padding_saved,
            "padding_saved_fraction": self.padding_saved_fraction,
            "pad_multiple_tokens": self.pad_tokens,
            "pad_multiple_cost": self.pad_cost,
            "global_batch_size": self.gbs,
            "gbs_keeps_token_slots": self.gbs_exact,
            "dp_divides_gbs": self.dp_divides,
            "steps_per_epoch": self.steps_per_epoch,
            "dense_flops_per_step": self.dense_flops_per_step,
            "attention_flops_per_step": self.attention_flops_per_step,
            "attention_share": self.attention_share,
            "epoch_flops": self.epoch_flops,
            "estimated_epoch_cost": self.estimated_epoch_cost,
            "imbalance": None if self.imbalance is None else self.imbalance.to_dict(),
            "imbalance_balanced": None
            if self.imbalance_balanced is None
            else self.imbalance_balanced.to_dict(),
            "notes": self.notes,
        }


def _prepadded(lengths: IntArray, pack_size: int, mult: int) -> tuple[IntArray, IntArray, int]:
    """``(kept runtime lengths, their pre-padded lengths, rejected count)`` for one candidate."""
    cap = pack_size // mult * mult
    keep = lengths <= cap
    kept = lengths[keep]
    padded = -(-kept // mult) * mult
    return kept, padded, int(lengths.shape[0] - kept.shape[0])


def evaluate_candidate(
    lengths: npt.ArrayLike,
    pack_size: int,
    token_slots: int,
    topology: Topology,
    model: CostModel,
    *,
    simulate: bool = True,
) -> Candidate:
    """Evaluate one pack size on runtime ``lengths`` (module docstring)."""
    if pack_size < 1:
        raise UsageError(f"pack sizes must be positive, got {pack_size}")
    array = np.asarray(lengths, dtype=np.int64)
    mult = topology.pad_multiple
    if mult > pack_size:
        raise UsageError(f"pack size {pack_size} is smaller than the pad multiple {mult}")
    kept, padded, rejected = _prepadded(array, pack_size, mult)
    plan: PackPlan = pack_lengths(padded, pack_size, algorithm=BEST_FIT_DECREASING)
    gbs = token_slots // pack_size
    notes: list[str] = []
    if rejected:
        notes.append(
            f"pack size {pack_size} is below the longest sample ({int(array.max())} runtime tokens): "
            f"{rejected} sample(s) would be rejected (or truncated with --too-long truncate)"
        )
    if gbs < 1:
        notes.append(f"token slots {token_slots} hold no pack of {pack_size}")
    elif token_slots % pack_size:
        notes.append(f"GBS {gbs} x {pack_size} = {gbs * pack_size} token slots, not {token_slots}")
    dp_divides = None if topology.dp is None or gbs < 1 else gbs % topology.dp == 0
    if dp_divides is False:
        notes.append(f"DP {topology.dp} does not divide GBS {gbs}")
    dense, attention = pack_costs(plan, model)
    mean_dense = float(dense.mean()) if plan.num_packs else 0.0
    mean_attention = float(attention.mean()) if plan.num_packs else 0.0
    imbalance = balanced_imbalance = None
    if simulate and dp_divides and topology.dp is not None and plan.num_packs >= gbs:
        dp = topology.dp
        try:
            imbalance = step_imbalance(dense + attention, dp, gbs, epochs=SIMULATED_EPOCHS)
            balanced = balanced_pack(padded, pack_size, model)
            if balanced.num_packs >= gbs:
                dense_b, attention_b = pack_costs(balanced, model)
                balanced_imbalance = step_imbalance(dense_b + attention_b, dp, gbs, epochs=SIMULATED_EPOCHS)
        except ImportError:  # the sampler's permutation needs torch (the ``torch`` extra)
            notes.append("imbalance not simulated: install bridgepack[torch] for Bridge's sampler")
    return Candidate(
        pack_size=pack_size,
        pad_multiple=mult,
        samples=int(array.shape[0]),
        rejected=rejected,
        packs=plan.num_packs,
        lower_bound=plan.lower_bound,
        real_tokens=int(kept.sum()),
        pad_tokens=int(padded.sum() - kept.sum()),
        gbs=gbs,
        gbs_exact=gbs >= 1 and token_slots % pack_size == 0,
        dp_divides=dp_divides,
        steps_per_epoch=plan.num_packs // gbs if gbs >= 1 else 0,
        dense_flops_per_step=mean_dense * gbs,
        attention_flops_per_step=mean_attention * gbs,
        epoch_flops=model.dense * plan.num_packs * pack_size + float(attention.sum()),
        imbalance=imbalance,
        imbalance_balanced=balanced_imbalance,
        notes=notes,
    )


def evaluate(
    lengths: npt.ArrayLike,
    pack_sizes: list[int],
    token_slots: int,
    topology: Topology,
    model: CostModel,
    *,
    simulate: bool = True,
) -> list[Candidate]:
    """Every candidate pack size, evaluated on the same lengths."""
    if token_slots < 1:
        raise UsageError(f"{param('token_slots')} must be positive, got {token_slots}")
    return [
        evaluate_candidate(lengths, n, token_slots, topology, model, simulate=simulate) for n in pack_sizes
    ]


def recommend(candidates: list[Candidate]) -> Candidate:
    """The candidate to use (module docstring); a UsageError when none is feasible."""
    feasible = [c for c in candidates if c.feasible]
    if not feasible:
        reasons = "; ".join(f"{c.pack_size}: {', '.join(c.notes) or 'nothing packed'}" for c in candidates)
        raise UsageError(f"no candidate pack size is usable ({reasons})")
    fewest = min(c.rejected for c in feasible)
    pool = [c for c in feasible if c.rejected == fewest]
    best = min(c.estimated_epoch_cost for c in pool)
    tied = (c for c in pool if c.estimated_epoch_cost <= best * (1 + EPOCH_TIE))
    return min(tied, key=lambda c: c.pack_size)


def balance_worthwhile(candidate: Candidate) -> bool:
    """Whether balanced packs lower the simulated imbalance of ``candidate`` enough to recommend them."""
    plain, balanced = candidate.imbalance, candidate.imbalance_balanced
    return plain is not None and balanced is not None and balanced.mean <= plain.mean - BALANCE_WORTHWHILE


def overrides_for_candidate(candidate: Candidate, topology: Topology) -> list[str]:
    """The Megatron-Bridge 0.6.2 overrides for training on packs of ``candidate`` (bridge-format §1, §4, §7,
    §8)."""
    return offline_packing_overrides(
        candidate.pack_size,
        candidate.pad_multiple,
        global_batch_size=candidate.gbs,
        cp=topology.cp,
        tp=topology.tp,
        sequence_parallel=topology.sequence_parallel,
    )


def pack_command(
    inputs: list[str], candidate: Candidate, topology: Topology, *, carried: Sequence[tuple[str, Any]] = ()
) -> str:
    """The ``bridgepack pack`` command line that writes the packs ``candidate`` describes.

    ``carried`` are the ``(flag, value)`` pairs the user gave the planner that change what ``pack`` writes
    (tokenizer, text fields, EOS id, cost model); pairs whose value is ``None`` are left out.
    """
    parts = ["bridgepack", "pack", *inputs, "--out", f"packed_{candidate.pack_size}"]
    parts += ["--pack-size", str(candidate.pack_size)]
    if topology.cp > 1:
        parts += ["--cp", str(topology.cp)]
    if topology.tp > 1:
        parts += ["--tp", str(topology.tp)]
    if topology.sequence_parallel:
        parts.append("--sequence-parallel")
    for flag, value in carried:
        if value is not None:
            parts += [flag, str(value)]
    return " ".join(shlex.quote(p) for p in parts)


def parse_pack_sizes(text: str) -> list[int]:
    """``"2048,4096"`` -> ``[2048, 4096]`` (sorted, unique, positive)."""
    try:
        sizes = sorted({int(p) for p in text.split(",") if p.strip()})
    except ValueError:
        raise UsageError(f"{param('pack_sizes')} expects comma-separated integers, got {text!r}") from None
    if not sizes:
        raise UsageError(f"{param('pack_sizes')} expects positive integers, got {text!r}")
    for size in sizes:
        SIZE.check(param("pack_sizes"), size)
    return sizes
