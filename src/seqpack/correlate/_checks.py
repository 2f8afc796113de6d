"""Checks that block a correlation plan: values that cannot train, or that one launcher cannot express.

Each check is a small function in :data:`CHECKS` returning a :class:`Finding` or ``None``; ``seqpack correlate
plan`` prints every finding and exits 1 when there is any, so no half-matched pair is ever written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from seqpack.correlate._spec import CorrelationSpec


@dataclass(frozen=True)
class Finding:
    """One reason the plan is blocked: ``rule`` id, what is wrong (naming the fields) and the fix."""

    rule: str
    message: str
    fix: str


def _seeds(s: CorrelationSpec) -> Finding | None:
    if s["seed.data"] == s["seed.init"]:
        return None
    return Finding(
        "CR001",
        f"seed.data={s['seed.data']} differs from seed.init={s['seed.init']}: Megatron-LM seeds the mock data"
        " with --seed, so it cannot run with two seeds",
        "set seed.data equal to seed.init (or drop it)",
    )


def _warmup(s: CorrelationSpec) -> Finding | None:
    if s["lr.warmup_iters"] < s["lr.decay_iters"]:
        return None
    return Finding(
        "CR002",
        f"lr.warmup_iters={s['lr.warmup_iters']} is not below lr.decay_iters={s['lr.decay_iters']}:"
        " the LR scheduler of both launchers asserts warmup < decay",
        "lower lr.warmup_iters or raise lr.decay_iters",
    )


def _min_lr(s: CorrelationSpec) -> Finding | None:
    if s["lr.min_lr"] <= s["lr.lr"]:
        return None
    return Finding("CR003", f"lr.min_lr={s['lr.min_lr']} is above lr.lr={s['lr.lr']}", "set min_lr <= lr")


def _world(s: CorrelationSpec) -> Finding | None:
    model_parallel = s["parallel.tp"] * s["parallel.pp"] * s["parallel.cp"]
    if s.world_size % model_parallel == 0:
        return None
    return Finding(
        "CR005",
        f"parallel.nproc_per_node={s.world_size} is not a multiple of TP x PP x CP = {model_parallel}",
        f"use a multiple of {model_parallel} processes",
    )


def _batch(s: CorrelationSpec) -> Finding | None:
    model_parallel = s["parallel.tp"] * s["parallel.pp"] * s["parallel.cp"]
    dp = max(s.world_size // model_parallel, 1)
    step = s["train.micro_batch_size"] * dp
    if s["train.global_batch_size"] % step == 0:
        return None
    return Finding(
        "CR006",
        f"train.global_batch_size={s['train.global_batch_size']} is not a multiple of micro_batch_size x DP"
        f" = {s['train.micro_batch_size']} x {dp} (spec §8, batch divisibility)",
        f"use a global batch size that is a multiple of {step}",
    )


def _heads(s: CorrelationSpec) -> Finding | None:
    heads, hidden, tp = s["model.num_attention_heads"], s["model.hidden_size"], s["parallel.tp"]
    if hidden % heads == 0 and heads % tp == 0:
        return None
    return Finding(
        "CR007",
        f"model.hidden_size={hidden} and model.num_attention_heads={heads} with parallel.tp={tp}:"
        " hidden must divide by heads and heads by TP",
        "pick heads that divide hidden_size and are a multiple of TP",
    )


def _cp(s: CorrelationSpec) -> Finding | None:
    cp, seq = s["parallel.cp"], s["model.seq_length"]
    if cp == 1 or seq % (2 * cp) == 0:
        return None
    return Finding(
        "CR008",
        f"model.seq_length={seq} is not divisible by 2 x parallel.cp = {2 * cp} (spec §8, CP divisibility)",
        f"use a sequence length that is a multiple of {2 * cp}",
    )


def _sp(s: CorrelationSpec) -> Finding | None:
    if not s["parallel.sp"] or s["parallel.tp"] > 1:
        return None
    return Finding(
        "CR009",
        "parallel.sp=true with parallel.tp=1: Megatron-LM turns sequence parallelism off with a warning,"
        " Bridge keeps the flag, so the two runs would not be configured alike",
        "set parallel.sp=false or parallel.tp > 1",
    )


def _mock(s: CorrelationSpec) -> Finding | None:
    if s["data.mock"]:
        return None
    return Finding(
        "CR010",
        "data.mock=false: the plan writes mock-data pairs only (real data needs one blend on both sides)",
        "set data.mock=true",
    )


CHECKS: tuple[Callable[[CorrelationSpec], Finding | None], ...] = (
    _seeds,
    _warmup,
    _min_lr,
    _world,
    _batch,
    _heads,
    _cp,
    _sp,
    _mock,
)


def check_spec(spec: CorrelationSpec) -> list[Finding]:
    """Every finding that blocks a plan for ``spec`` (empty: the plan can be written)."""
    return [finding for check in CHECKS if (finding := check(spec)) is not None]
