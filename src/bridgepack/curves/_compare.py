"""Compare two curves step by step under a tolerance profile (bridge-format §11).

Steps are aligned by iteration. Each profile turns a pair of values into "within tolerance or not":

=========  ===================================================================================================
profile    rule (source)
=========  ===================================================================================================
exact      bit-equal values (NaN equals NaN). For deterministic runs.
bf16       ``|a - b| <= K * ulp_bf16(max(|a|, |b|))``, K = 2 by default. bf16 keeps 8 significand bits, so
           1 ulp at 10.9 is 2**(3-7) = 0.0625: two runs whose loss is only rounded differently land 0-1 ulp
           apart (measured on Megatron-LM's golden files: same case on two machines <= 1.2 ulp).
golden     Megatron-LM functional tests: lm loss 5% relative, num-zeros 20%, memory 5%, iteration time 5% on
           the median over a steady window (first 10% of steps dropped); ``min(max(N // 100, 1), 50)``
           failing steps tolerated; a step of the reference missing from the other run fails; an exact check
           is added with ``deterministic=True``.
trend      Bridge's performance checker (``scripts/performance/utils/evaluate.py``): Pearson r >= 0.95,
           per-step 10% / 5% / 2% for reference values > 2 / > 0.5 / else, at most 10% of steps outside
           that, final value within 3%, at most 10% of steps with a residual beyond 3 sigma.
=========  ===================================================================================================

Steps present in one run only are always reported; they fail the comparison under ``golden`` or with
``require_all_steps``.

Non-finite values: under every profile, a step where one run has ``inf``/``-inf``/``nan`` and the other a
different value (a number, the other infinity, or ``nan`` against ``inf``) fails, and such a step is never
among the tolerated ones -- one diverged step is a mismatch whatever the profile lets through. The same
non-finite value in both runs (``nan`` and ``nan``, ``inf`` and ``inf``) agrees: both runs diverged at that
step, as a deterministic rerun does; it is named in the notes. A step that was *not recorded* is absent,
not ``nan`` (see :mod:`bridgepack.curves._series`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bridgepack.curves._names import LOSS, canonical
from bridgepack.curves._series import BoolArray, Curves, FloatArray, IntArray, Series
from bridgepack.errors import DataError, UsageError, param

DEFAULT_PROFILE = "bf16"
DEFAULT_ULPS = 2
BF16_MANTISSA_BITS = 7  # stored fraction bits; with the implicit bit, 8 significand bits

# Megatron-LM functional-test tolerances (bridge-format §11), relative.
GOLDEN_RELATIVE: dict[str, float] = {"lm loss": 0.05, "num-zeros": 0.20}
GOLDEN_DEFAULT_RELATIVE = 0.05  # memory, iteration time and any other metric
GOLDEN_MEDIAN_METRICS: tuple[str, ...] = ("iteration-time",)
STEADY_SKIP_FRACTION = 0.10

# Bridge performance-checker thresholds (bridge-format §11).
TREND_CORRELATION = 0.95
TREND_BANDS: tuple[tuple[float, float], ...] = ((2.0, 0.10), (0.5, 0.05), (-math.inf, 0.02))
TREND_FINAL = 0.03
TREND_MAX_OUTLIER_RATIO = 0.10
TREND_SIGMA = 3.0


@dataclass(frozen=True)
class Profile:
    """A tolerance profile and its knobs."""

    name: str = DEFAULT_PROFILE
    ulps: int = DEFAULT_ULPS
    deterministic: bool = False
    require_all_steps: bool = False

    def __post_init__(self) -> None:
        if self.name not in PROFILES:
            expected = ", ".join(PROFILES)
            raise UsageError(f"{param('profile')}: expected one of {expected}, found {self.name!r}")
        if self.ulps < 0:
            raise UsageError(f"{param('ulps')}: expected a non-negative integer, found {self.ulps}")


@dataclass
class Comparison:
    """The result of comparing one metric of a candidate run against the reference run."""

    metric: str
    reference: str
    candidate: str
    profile: Profile
    rule: str
    steps: IntArray
    ref: FloatArray
    cand: FloatArray
    allowed: FloatArray  # per-step absolute allowance (NaN where the rule is not per step)
    failing: BoolArray
    only_reference: IntArray
    only_candidate: IntArray
    tolerated: int = 0
    correlation: float | None = None
    passed: bool = True
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def abs_diff(self) -> FloatArray:
        with np.errstate(invalid="ignore"):
            return np.abs(self.cand - self.ref)

    @property
    def rel_diff(self) -> FloatArray:
        return _relative(self.ref, self.cand)

    @property
    def first_divergence(self) -> int | None:
        hits = np.flatnonzero(self.failing)
        return int(self.steps[hits[0]]) if hits.size else None

    def summary(self) -> dict[str, object]:
        """Plain numbers for tables and JSON."""
        out: dict[str, object] = {
            "metric": self.metric,
            "reference": self.reference,
            "candidate": self.candidate,
            "profile": self.profile.name,
            "rule": self.rule,
            "shared_steps": int(self.steps.size),
            "only_in_reference": _step_list(self.only_reference),
            "only_in_candidate": _step_list(self.only_candidate),
            "failing_steps": int(self.failing.sum()),
            "tolerated_failing_steps": self.tolerated,
            "first_divergence": None,
            "max_abs_diff": None,
            "max_rel_diff": None,
            "correlation": self.correlation,
            "final": None,
            "passed": self.passed,
            "reasons": self.reasons,
            "notes": self.notes,
        }
        if self.steps.size:
            first = self.first_divergence
            if first is not None:
                k = int(np.flatnonzero(self.steps == first)[0])
                out["first_divergence"] = {
                    "step": first,
                    "reference": _num(self.ref[k]),
                    "candidate": _num(self.cand[k]),
                    "allowed_abs_diff": _num(self.allowed[k]),
                }
            absd = self.abs_diff
            reld = self.rel_diff
            if np.any(np.isfinite(absd)):
                k = int(np.nanargmax(np.where(np.isfinite(absd), absd, -1.0)))
                out["max_abs_diff"] = {"step": int(self.steps[k]), "value": _num(absd[k])}
            if np.any(np.isfinite(reld)):
                k = int(np.nanargmax(np.where(np.isfinite(reld), reld, -1.0)))
                out["max_rel_diff"] = {"step": int(self.steps[k]), "value": _num(reld[k])}
            out["final"] = {
                "step": int(self.steps[-1]),
                "reference": _num(self.ref[-1]),
                "candidate": _num(self.cand[-1]),
                "abs_diff": _num(absd[-1]),
                "rel_diff": _num(reld[-1]),
            }
        return out


def _num(x: float) -> float | str | None:
    """JSON-safe number: NaN/inf become strings so that every reader can load the report."""
    value = float(x)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _step_list(steps: IntArray) -> dict[str, object]:
    return {"count": int(steps.size), "first": steps[:10].tolist()}


def _relative(ref: FloatArray, cand: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):  # inf - inf: nan, judged by _nonfinite_mismatch
        diff = np.abs(cand - ref)
        rel = diff / np.abs(ref)
    rel = np.where((diff == 0) & (ref == 0), 0.0, rel)
    return np.asarray(rel, dtype=np.float64)


def bf16_ulp(x: FloatArray) -> FloatArray:
    """Spacing of bfloat16 numbers at ``|x|``: ``2**(floor(log2|x|) - 7)``; at 10.9 that is 0.0625.

    >>> bf16_ulp(np.array([10.9, 1.0, 0.3])).tolist()
    [0.0625, 0.0078125, 0.001953125]
    """
    _, exponent = np.frexp(np.abs(x))  # |x| = m * 2**e with m in [0.5, 1): floor(log2|x|) = e - 1
    ulp = np.ldexp(1.0, exponent - 1 - BF16_MANTISSA_BITS)
    return np.where(np.isfinite(x), ulp, np.inf)


def tolerated_failures(n_steps: int) -> int:
    """Failing steps Megatron-LM's approximate checks let through: ``min(max(N // 100, 1), 50)``."""
    return min(max(n_steps // 100, 1), 50)


def _nonfinite_mismatch(ref: FloatArray, cand: FloatArray) -> BoolArray:
    """Steps where a non-finite value faces a different value (``inf`` vs 2.3, ``nan`` vs ``inf``)."""
    same = (ref == cand) | (np.isnan(ref) & np.isnan(cand))
    return np.asarray(~(np.isfinite(ref) & np.isfinite(cand)) & ~same, dtype=bool)


def _steady_median(values: FloatArray) -> float:
    skip = max(1, int(values.size * STEADY_SKIP_FRACTION)) if values.size > 1 else 0
    window = values[skip:]
    window = window[np.isfinite(window)]
    return float(np.median(window)) if window.size else math.nan


def _correlation(ref: FloatArray, cand: FloatArray) -> float | None:
    ok = np.isfinite(ref) & np.isfinite(cand)
    if ok.sum() < 2 or np.std(ref[ok]) == 0 or np.std(cand[ok]) == 0:
        return None
    return float(np.corrcoef(ref[ok], cand[ok])[0, 1])


def _interval(steps: IntArray) -> int | None:
    if steps.size < 2:
        return None
    diffs = np.diff(steps)
    values, counts = np.unique(diffs, return_counts=True)
    return int(values[np.argmax(counts)])


def _off_grid(steps: IntArray, recorded: IntArray, interval: int | None) -> BoolArray:
    """Steps inside the recorded range that the recording interval skips (a sparser run, not a gap).

    A run logged every 5 steps (5, 10, ..., 100) never had step 51; a run that stops at 70 *lost* 71-100.
    """
    if interval is None or interval <= 1 or recorded.size == 0:
        return np.zeros(steps.size, dtype=bool)
    inside = (steps > recorded[0]) & (steps < recorded[-1])
    return np.asarray(inside & ((steps - recorded[-1]) % interval != 0), dtype=bool)


@dataclass
class _Verdict:
    """What a profile's rule says of the shared steps: the rule in words, the allowed difference per step
    (NaN where the rule is not per step), the failing steps, how many failures it tolerates, reasons beyond
    single steps, and whether every reference step must be in the other run."""

    rule: str
    allowed: FloatArray
    failing: BoolArray
    tolerated: int = 0
    reasons: list[str] = field(default_factory=list)
    reference_steps_required: bool = False


def _identical(ref: FloatArray, cand: FloatArray) -> BoolArray:
    return np.asarray((ref == cand) | (np.isnan(ref) & np.isnan(cand)), dtype=bool)


def _judge_exact(
    ref: FloatArray, cand: FloatArray, profile: Profile, metric: str, steps: int, correlation: float | None
) -> _Verdict:
    return _Verdict("values identical", np.zeros(ref.size), ~_identical(ref, cand))


def _judge_bf16(
    ref: FloatArray, cand: FloatArray, profile: Profile, metric: str, steps: int, correlation: float | None
) -> _Verdict:
    allowed = profile.ulps * bf16_ulp(np.maximum(np.abs(ref), np.abs(cand)))
    return _Verdict(
        f"|diff| <= {profile.ulps} bf16 ulp of the larger value", allowed, np.abs(cand - ref) > allowed
    )


def _judge_golden(
    ref: FloatArray, cand: FloatArray, profile: Profile, metric: str, steps: int, correlation: float | None
) -> _Verdict:
    rel_tol = GOLDEN_RELATIVE.get(metric, GOLDEN_DEFAULT_RELATIVE)
    if metric in GOLDEN_MEDIAN_METRICS:
        verdict = _Verdict(
            f"median over steady window within {rel_tol:.0%}",
            np.full(ref.size, np.nan),
            np.zeros(ref.size, dtype=bool),
            reference_steps_required=True,
        )
        mr, mc = _steady_median(ref), _steady_median(cand)
        rel = abs(mc - mr) / abs(mr) if mr else math.inf
        if not rel <= rel_tol:
            verdict.reasons.append(
                f"median {metric} {mc:.6g} vs {mr:.6g}: {rel:.2%} apart (allowed {rel_tol:.0%})"
            )
        return verdict
    verdict = _Verdict(
        f"relative diff <= {rel_tol:.0%}",
        rel_tol * np.abs(ref),
        _relative(ref, cand) > rel_tol,
        reference_steps_required=True,
    )
    if profile.deterministic:
        verdict.rule += " and identical (deterministic)"
        verdict.failing |= ~_identical(ref, cand)
        verdict.allowed[:] = 0.0
    verdict.tolerated = 0 if profile.deterministic else tolerated_failures(steps)
    return verdict


def _judge_trend(
    ref: FloatArray, cand: FloatArray, profile: Profile, metric: str, steps: int, correlation: float | None
) -> _Verdict:
    band = np.select(
        [ref > TREND_BANDS[0][0], ref > TREND_BANDS[1][0]], [TREND_BANDS[0][1], TREND_BANDS[1][1]]
    )
    band = np.where(band == 0, TREND_BANDS[2][1], band)
    verdict = _Verdict(
        "Bridge checker: r>=0.95, 10/5/2% per step, <=10% outliers, final within 3%",
        band * np.abs(ref),
        _relative(ref, cand) > band,
        tolerated=math.floor(TREND_MAX_OUTLIER_RATIO * ref.size),
    )
    n = max(ref.size, 1)
    if correlation is not None and correlation < TREND_CORRELATION:
        verdict.reasons.append(f"correlation {correlation:.4f} < {TREND_CORRELATION}")
    if ref.size:
        final_rel = float(_relative(ref[-1:], cand[-1:])[0])
        if not final_rel <= TREND_FINAL:
            verdict.reasons.append(f"final value {final_rel:.2%} apart (allowed {TREND_FINAL:.0%})")
        residual = cand - ref
        finite = residual[np.isfinite(residual)]
        if finite.size:
            outliers = np.abs(finite - finite.mean()) > TREND_SIGMA * finite.std()
            if outliers.sum() / n > TREND_MAX_OUTLIER_RATIO:
                verdict.reasons.append(f"{int(outliers.sum())}/{n} residuals beyond 3 sigma (allowed 10%)")
    return verdict


#: Each profile's rule, by name (the module docstring's table); ``PROFILES`` lists them in this order.
_JUDGES: dict[str, Callable[[FloatArray, FloatArray, Profile, str, int, float | None], _Verdict]] = {
    "exact": _judge_exact,
    "bf16": _judge_bf16,
    "golden": _judge_golden,
    "trend": _judge_trend,
}
PROFILES: tuple[str, ...] = tuple(_JUDGES)


@np.errstate(invalid="ignore")  # inf - inf is nan by design; _nonfinite_mismatch judges those steps
def compare_series(
    reference: Series,
    candidate: Series,
    profile: Profile,
    *,
    metric: str = LOSS,
    reference_name: str = "A",
    candidate_name: str = "B",
    steps: tuple[int | None, int | None] = (None, None),
    candidate_missing: IntArray | None = None,
) -> Comparison:
    """Align two series by iteration and judge them under ``profile``.

    ``candidate_missing`` lists iterations where the candidate printed a line without this metric (a NaN
    loss Megatron left off); they are named in the notes.
    """
    ref_s = reference.window(*steps)
    cand_s = candidate.window(*steps)
    shared, ia, ib = np.intersect1d(ref_s.iterations, cand_s.iterations, return_indices=True)
    ref = ref_s.values[ia]
    cand = cand_s.values[ib]
    only_ref = np.setdiff1d(ref_s.iterations, cand_s.iterations)
    only_cand = np.setdiff1d(cand_s.iterations, ref_s.iterations)
    notes: list[str] = []
    reasons: list[str] = []
    ri, ci = _interval(ref_s.iterations), _interval(cand_s.iterations)
    if ri is not None and ci is not None and ri != ci:
        notes.append(
            f"step intervals differ: {reference_name} every {ri}, {candidate_name} every {ci}; "
            f"compared on {shared.size} shared steps"
        )
    if candidate_missing is not None and candidate_missing.size:
        lost = np.intersect1d(candidate_missing, only_ref)
        if lost.size:
            notes.append(
                f"{candidate_name}: '{metric}' left off the line at iteration(s) {lost[:10].tolist()} "
                "(Megatron omits a NaN loss)"
            )
    name = profile.name
    correlation = _correlation(ref, cand)
    diverged = _nonfinite_mismatch(ref, cand)
    verdict = _JUDGES[name](ref, cand, profile, metric, int(ref_s.iterations.size), correlation)
    rule, allowed, failing, tolerated = verdict.rule, verdict.allowed, verdict.failing, verdict.tolerated
    reasons += verdict.reasons
    failing |= diverged  # every profile: a non-finite step against a number fails
    n_fail = int(failing.sum())
    if diverged.any():  # never tolerated: one non-finite step is a divergence, not noise
        k = int(np.flatnonzero(diverged)[0])
        reasons.append(
            f"{int(diverged.sum())} step(s) non-finite in one run only; first at step {int(shared[k])} "
            f"({reference_name}: {ref[k]:.6g}, {candidate_name}: {cand[k]:.6g})"
        )
    both = ~np.isfinite(ref) & ~diverged
    if both.any():
        notes.append(
            f"{int(both.sum())} step(s) non-finite in both runs (same value, counted as agreeing): "
            f"{shared[both][:10].tolist()}"
        )
    if n_fail > tolerated:
        first = int(shared[np.flatnonzero(failing)[0]])
        extra = f", {tolerated} tolerated" if tolerated else ""
        reasons.insert(0, f"{n_fail} of {shared.size} steps beyond tolerance{extra}; first at step {first}")
    if shared.size == 0:
        reasons.append(
            f"no step in common ({reference_name}: {ref_s.iterations.size}, {candidate_name}: "
            f"{cand_s.iterations.size} steps)"
        )
    unsampled = _off_grid(only_ref, cand_s.iterations, ci)
    if candidate_missing is not None:  # a line printed without the value is a gap, not a sparser log
        unsampled &= ~np.isin(only_ref, candidate_missing)
    if unsampled.any():
        notes.append(
            f"{int(unsampled.sum())} step(s) of {reference_name} fall between the steps {candidate_name} "
            f"records (every {ci}): not counted as missing"
        )
    missing = only_ref[~unsampled]
    if missing.size and (verdict.reference_steps_required or profile.require_all_steps):
        reasons.append(
            f"{missing.size} step(s) of {reference_name} missing from {candidate_name} "
            f"(first {missing[:5].tolist()})"
        )
    if only_cand.size and profile.require_all_steps:
        reasons.append(
            f"{only_cand.size} step(s) of {candidate_name} missing from {reference_name} "
            f"(first {only_cand[:5].tolist()})"
        )
    return Comparison(
        metric=metric,
        reference=reference_name,
        candidate=candidate_name,
        profile=profile,
        rule=rule,
        steps=shared,
        ref=ref,
        cand=cand,
        allowed=np.asarray(allowed, dtype=np.float64),
        failing=failing,
        only_reference=only_ref,
        only_candidate=only_cand,
        tolerated=tolerated,
        correlation=correlation,
        passed=not reasons,
        reasons=reasons,
        notes=notes,
    )


ALL_METRICS = "all"


def _pick_metrics(reference: Curves, candidates: list[Curves], metrics: list[str]) -> list[str]:
    """Canonical metric names to compare; a metric absent from a run is an error naming what it has."""
    if metrics == [ALL_METRICS]:
        names = [m for m in reference.metrics if all(m in c.metrics for c in candidates)]
        if not names:
            raise DataError(f"{reference.source}: no metric in common with {candidates[0].source}")
        return names
    picked = []
    for metric in metrics:
        name = canonical(metric)
        for run in (reference, *candidates):
            if name not in run.metrics:
                have = ", ".join(sorted(run.metrics)[:12])
                raise DataError(f"{run.source}: no metric '{metric}' (it has: {have})")
        picked.append(name)
    return picked


def compare_curves(
    reference: Curves,
    candidates: list[Curves],
    profile: Profile,
    *,
    metrics: list[str] | None = None,
    steps: tuple[int | None, int | None] = (None, None),
) -> list[Comparison]:
    """Compare every candidate run with the reference, metric by metric.

    ``metrics`` holds names (any spelling :func:`~bridgepack.curves._names.canonical` knows) or ``["all"]``.
    """
    names = _pick_metrics(reference, candidates, metrics or [LOSS])
    out = []
    for run in candidates:
        for name in names:
            found = compare_series(
                reference.metrics[name],
                run.metrics[name],
                profile,
                metric=name,
                reference_name=reference.source,
                candidate_name=run.source,
                steps=steps,
                candidate_missing=run.missing.get(name),
            )
            hidden = _hidden_by_damage(run, found.only_reference) or _hidden_by_damage(
                reference, found.only_candidate
            )
            if hidden is not None:
                found.reasons.append(hidden)
                found.passed = False
            out.append(found)
    return out


def _hidden_by_damage(run: Curves, beyond: IntArray) -> str | None:
    """Why the comparison cannot pass when ``run`` was read only in part and the other run has steps
    (``beyond``: those ``run`` lacks) after the last one read: the damage may hide a divergence."""
    if not run.damaged or beyond.size == 0:
        return None
    return (
        f"{run.source} was read only in part ({run.damaged[0]}); {beyond.size} step(s) of the other run "
        f"from {int(beyond.min())} on are not compared"
    )
