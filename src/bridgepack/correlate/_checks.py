"""Checks that block a correlation plan: values that cannot train, or that one launcher cannot express.

Two sources, one list: the correlation checks of :data:`CHECKS` (``CR...``: things only a *pair* of
launchers makes wrong, such as two seeds MLM cannot express) and the error findings of ``bridgepack doctor``'s
rule table (``SP...``: batch divisibility, CP divisibility, ...) run on the plan's Bridge overrides. The
plan prints every finding and exits 1 when there is any, so no half-matched pair is ever written.
"""

from __future__ import annotations

from collections.abc import Callable

from bridgepack._bridge_keys import override
from bridgepack.correlate._knobs import spec_overrides
from bridgepack.correlate._spec import CorrelationSpec
from bridgepack.doctor import DoctorOptions, check, load_config
from bridgepack.findings import ERROR, Finding

#: Doctor findings of this severity block a plan; warnings do not.
BLOCKING_SEVERITY = ERROR
#: The upstream a correlation check mirrors: the pair of launchers it keeps matched.
UPSTREAM = "correlation of two launchers (bridgepack correlate)"


def _blocking(check_id: str, message: str, fix: str) -> Finding:
    """A finding of :data:`CHECKS`: an error that blocks the plan, with its one fix."""
    return Finding(check_id, ERROR, message, fix=[fix], upstream=UPSTREAM)


def _seeds(s: CorrelationSpec) -> Finding | None:
    if s["seed.data"] == s["seed.init"]:
        return None
    return _blocking(
        "CR001",
        f"seed.data={s['seed.data']} differs from seed.init={s['seed.init']}: Megatron-LM seeds the mock data"
        " with --seed, so it cannot run with two seeds",
        "set seed.data equal to seed.init (or drop it)",
    )


def _warmup(s: CorrelationSpec) -> Finding | None:
    if s["lr.warmup_iters"] < s["lr.decay_iters"]:
        return None
    return _blocking(
        "CR002",
        f"lr.warmup_iters={s['lr.warmup_iters']} is not below lr.decay_iters={s['lr.decay_iters']}:"
        " the LR scheduler of both launchers asserts warmup < decay",
        "lower lr.warmup_iters or raise lr.decay_iters",
    )


def _min_lr(s: CorrelationSpec) -> Finding | None:
    if s["lr.min_lr"] <= s["lr.lr"]:
        return None
    return _blocking("CR003", f"lr.min_lr={s['lr.min_lr']} is above lr.lr={s['lr.lr']}", "set min_lr <= lr")


def _heads(s: CorrelationSpec) -> Finding | None:
    heads, hidden, tp = s["model.num_attention_heads"], s["model.hidden_size"], s["parallel.tp"]
    if hidden % heads == 0 and heads % tp == 0:
        return None
    return _blocking(
        "CR007",
        f"model.hidden_size={hidden} and model.num_attention_heads={heads} with parallel.tp={tp}:"
        " hidden must divide by heads and heads by TP",
        "pick heads that divide hidden_size and are a multiple of TP",
    )


def _sp(s: CorrelationSpec) -> Finding | None:
    if not s["parallel.sp"] or s["parallel.tp"] > 1:
        return None
    return _blocking(
        "CR009",
        "parallel.sp=true with parallel.tp=1: Megatron-LM turns sequence parallelism off with a warning,"
        " Bridge keeps the flag, so the two runs would not be configured alike",
        "set parallel.sp=false or parallel.tp > 1",
    )


def _mock(s: CorrelationSpec) -> Finding | None:
    if s["data.mock"]:
        return None
    return _blocking(
        "CR010",
        "data.mock=false: the plan writes mock-data pairs only (real data needs one blend on both sides)",
        "set data.mock=true",
    )


def _bf16_grads(s: CorrelationSpec) -> Finding | None:
    if s["precision.dtype"] != "bf16" or s["precision.grad_reduce_in_fp32"]:
        return None
    return _blocking(
        "CR011",
        "precision.dtype=bf16 with precision.grad_reduce_in_fp32=false: Megatron-LM turns fp32 gradient"
        " accumulation and all-reduce on by itself with --bf16, so the MLM run would not reduce in bf16",
        "set precision.grad_reduce_in_fp32=true",
    )


def _fp16_grads(s: CorrelationSpec) -> Finding | None:
    if s["precision.dtype"] != "fp16" or not s["precision.grad_reduce_in_fp32"]:
        return None
    return _blocking(
        "CR012",
        "precision.dtype=fp16 with precision.grad_reduce_in_fp32=true: Bridge's fp16_mixed preset sets"
        " ddp.grad_reduce_in_fp32=false after the overrides, so the Bridge run would reduce in fp16",
        "set precision.grad_reduce_in_fp32=false",
    )


CHECKS: tuple[Callable[[CorrelationSpec], Finding | None], ...] = (
    _seeds,
    _warmup,
    _min_lr,
    _heads,
    _sp,
    _mock,
    _bf16_grads,
    _fp16_grads,
)


def doctor_findings(spec: CorrelationSpec) -> list[Finding]:
    """``bridgepack doctor``'s error findings on the plan's Bridge side (the MLM side has the same values)."""
    overrides = [override(key, value) for key, value in spec_overrides(spec).items()]
    report = check(
        load_config(overrides=overrides),
        DoctorOptions(world_size=spec.world_size, recipe=spec["launch.recipe"]),
    )
    return [f for f in report.findings if f.severity == BLOCKING_SEVERITY and not f.allowed]


def check_spec(spec: CorrelationSpec) -> list[Finding]:
    """Every finding that blocks a plan for ``spec`` (empty: the plan can be written)."""
    own = [finding for rule in CHECKS if (finding := rule(spec)) is not None]
    return own + doctor_findings(spec)
