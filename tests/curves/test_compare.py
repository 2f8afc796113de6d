"""Comparison rules: each profile on hand-built series with known answers, and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.cli._common import flag
from bridgepack.curves import Profile, Series, bf16_ulp, compare_series, tolerated_failures
from bridgepack.errors import UsageError


def series(values: list[float], start: int = 1, step: int = 1) -> Series:
    its = np.arange(start, start + step * len(values), step, dtype=np.int64)
    return Series(its, np.asarray(values, dtype=np.float64))


def test_bf16_ulp_values() -> None:
    # 8 significand bits: in [8, 16) the spacing is 2**(3-7); in [1, 2) it is 2**-7.
    assert bf16_ulp(np.array([10.9, 8.0, 15.99, 1.0, 1.99, 0.3])).tolist() == [
        0.0625,
        0.0625,
        0.0625,
        0.0078125,
        0.0078125,
        0.001953125,
    ]


@pytest.mark.parametrize(("n", "k"), [(1, 1), (50, 1), (100, 1), (250, 2), (5000, 50), (10**6, 50)])
def test_tolerated_failures(n: int, k: int) -> None:
    assert tolerated_failures(n) == k


def test_bf16_two_ulps_at_ten() -> None:
    ref = series([10.9, 10.9, 10.9])
    ok = compare_series(ref, series([10.9 + 0.125, 10.9 - 0.1, 10.9]), Profile("bf16"))
    assert ok.passed
    bad = compare_series(ref, series([10.9, 10.9 + 0.13, 10.9]), Profile("bf16"))
    assert not bad.passed and bad.first_divergence == 2
    assert compare_series(ref, series([10.9, 10.9 + 0.13, 10.9]), Profile("bf16", ulps=3)).passed


def test_exact_and_nan() -> None:
    nan = float("nan")
    assert compare_series(series([1.0, nan]), series([1.0, nan]), Profile("exact")).passed
    result = compare_series(series([1.0, 2.0]), series([1.0, nan]), Profile("bf16"))
    assert not result.passed and result.first_divergence == 2


@pytest.mark.parametrize("profile", ["exact", "bf16", "golden", "trend"])
@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_a_non_finite_step_against_a_number_is_never_tolerated(profile: str, bad: float) -> None:
    # 200 steps: golden tolerates 2 failing steps and trend 20; a diverged step is not one of them.
    values = [2.0 + 0.01 * k for k in range(200)]
    broken = values.copy()
    broken[57] = bad
    for ref, cand in ((values, broken), (broken, values)):
        result = compare_series(series(ref), series(cand), Profile(profile))
        assert not result.passed and result.failing.sum() == 1 and result.first_divergence == 58
        assert any("non-finite in one run only; first at step 58" in r for r in result.reasons)


@pytest.mark.parametrize("profile", ["exact", "bf16", "golden", "trend"])
@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [("nan", "nan", True), ("inf", "inf", True), ("inf", "-inf", False), ("nan", "inf", False)],
)
def test_non_finite_against_non_finite(profile: str, a: str, b: str, agree: bool) -> None:
    values = [2.0 + 0.01 * k for k in range(20)]
    ref, cand = values.copy(), values.copy()
    ref[5], cand[5] = float(a), float(b)
    result = compare_series(series(ref), series(cand), Profile(profile))
    assert result.passed is agree
    assert any("non-finite in both runs" in n for n in result.notes) is agree


def test_golden_tolerates_one_failing_step_per_hundred() -> None:
    ref = series([10.0] * 100)
    one = series([10.0] * 99 + [11.0])
    two = series([10.0] * 98 + [11.0, 11.0])
    assert compare_series(ref, one, Profile("golden")).passed
    result = compare_series(ref, two, Profile("golden"))
    assert (
        not result.passed
        and "2 of 100 steps beyond tolerance, 1 tolerated; first at step 99" in result.reasons[0]
    )
    assert not compare_series(ref, one, Profile("golden", deterministic=True)).passed


def test_golden_num_zeros_twenty_percent_and_time_median() -> None:
    ref = series([100.0] * 10)
    assert compare_series(ref, series([119.0] * 10), Profile("golden"), metric="num-zeros").passed
    assert not compare_series(ref, series([119.0] * 10), Profile("golden"), metric="lm loss").passed
    # iteration time: a slow first step does not count; the steady median does.
    times = series([5.0] + [0.2] * 9)
    assert compare_series(times, series([0.2] * 10), Profile("golden"), metric="iteration-time").passed
    slow = compare_series(times, series([0.3] * 10), Profile("golden"), metric="iteration-time")
    assert not slow.passed and "median" in slow.reasons[0]


def test_missing_steps_fail_only_under_golden_or_when_required() -> None:
    ref = series([10.0] * 10)
    short = series([10.0] * 7)
    assert compare_series(ref, short, Profile("bf16")).passed
    assert not compare_series(ref, short, Profile("golden")).passed
    assert not compare_series(ref, short, Profile("bf16", require_all_steps=True)).passed
    result = compare_series(ref, short, Profile("bf16"))
    assert result.only_reference.tolist() == [8, 9, 10]


def test_sparser_run_is_not_missing_steps() -> None:
    dense = series([10.0] * 20)  # steps 1..20
    sparse = series([10.0] * 4, start=5, step=5)  # 5, 10, 15, 20
    result = compare_series(dense, sparse, Profile("golden"), steps=(5, 20))
    assert result.passed and result.steps.tolist() == [5, 10, 15, 20]
    assert any("every 1" in n and "every 5" in n for n in result.notes)


def test_trend_rules() -> None:
    ref = series(list(np.linspace(10, 3, 50)))
    assert compare_series(ref, series(list(np.linspace(10, 3, 50) * 1.02)), Profile("trend")).passed
    drift = compare_series(ref, series(list(np.linspace(10, 3, 50) * 1.05)), Profile("trend"))
    assert not drift.passed and any("final value" in r for r in drift.reasons)
    flat = compare_series(ref, series([6.0] * 25 + [6.5] * 25), Profile("trend"))
    assert not flat.passed


def test_no_shared_step_is_a_mismatch() -> None:
    result = compare_series(series([1.0, 2.0]), series([1.0, 2.0], start=10), Profile("bf16"))
    assert not result.passed and "no step in common" in result.reasons[-1]


def test_unknown_profile_is_a_usage_error() -> None:
    """The library names its parameter; the command line renders the same error with its flag."""
    with pytest.raises(UsageError, match=r"^profile: expected one of") as caught:
        Profile("loose")
    assert caught.value.render(flag).startswith("--tolerance: expected one of")


finite = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False)


@given(st.lists(finite, min_size=2, max_size=40), st.sampled_from(["exact", "bf16", "golden", "trend"]))
def test_a_run_matches_itself_under_every_profile(values: list[float], profile: str) -> None:
    s = series(values)
    result = compare_series(s, s, Profile(profile))
    assert result.passed and result.failing.sum() == 0


@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=40), st.integers(0, 4))
def test_bf16_verdict_is_symmetric(pairs: list[tuple[float, float]], ulps: int) -> None:
    a = series([p[0] for p in pairs])
    b = series([p[1] for p in pairs])
    ab = compare_series(a, b, Profile("bf16", ulps=ulps))
    ba = compare_series(b, a, Profile("bf16", ulps=ulps))
    assert ab.passed == ba.passed
    assert ab.failing.tolist() == ba.failing.tolist()
