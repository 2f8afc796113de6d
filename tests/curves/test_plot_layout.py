"""The comparison plot reads at a glance: both curves visible, legends off the data, the difference scaled.

Checked on the drawn figure: matplotlib gives every artist's extent in display pixels after a draw.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bridgepack.curves import Curves, Profile, Series, compare_curves, curves_figure

pytest.importorskip("matplotlib")

STEPS = np.arange(1, 101, dtype=np.int64)


def _run(source: str, values: np.ndarray) -> Curves:
    return Curves(source=source, format="mlm", metrics={"lm loss": Series(STEPS, values)})


def _loss() -> np.ndarray:
    return 4.8 * np.exp(-STEPS / 40.0) + 2.0


def _drawn(runs: list[Curves], profile: Profile) -> tuple[object, list[object]]:
    comparisons = compare_curves(runs[0], runs[1:], profile)
    fig = curves_figure(runs, "lm loss", comparisons)
    fig.canvas.draw()
    return fig, comparisons


def _legend_texts(fig: object) -> list[str]:
    (legend,) = fig.legends  # type: ignore[attr-defined]
    return [t.get_text() for t in legend.get_texts()]


def _line_pixels(ax: object) -> list[np.ndarray]:
    """Every plotted line's finite points in display pixels."""
    out = []
    for line in ax.get_lines():  # type: ignore[attr-defined]
        x, y = (np.asarray(v, dtype=float) for v in line.get_data())
        if x.size != y.size or x.size < 2:
            continue  # axvline / single markers
        keep = np.isfinite(x) & np.isfinite(y)
        out.append(ax.transData.transform(np.column_stack([x[keep], y[keep]])))  # type: ignore[attr-defined]
    return out


def _assert_legend_clear(fig: object) -> None:
    """The legend lies inside the figure, on no plotted point, and the panels kept a readable height."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    box = fig.legends[0].get_window_extent(renderer)  # type: ignore[attr-defined]
    assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1)  # type: ignore[attr-defined]
    for ax in fig.axes:  # type: ignore[attr-defined]
        assert ax.bbox.height > 150 and ax.bbox.width > 500
        assert not ax.bbox.overlaps(box)
        for pixels in _line_pixels(ax):
            inside = (
                (pixels[:, 0] >= box.x0)
                & (pixels[:, 0] <= box.x1)
                & (pixels[:, 1] >= box.y0)
                & (pixels[:, 1] <= box.y1)
            )
            assert not inside.any()


@pytest.mark.parametrize("offset", [4e-6, 0.5])
def test_legend_names_the_runs_and_the_reference_and_covers_no_data(offset: float) -> None:
    base = _loss()
    cand = base + offset * np.linspace(0.1, 1.0, STEPS.size)
    fig, _ = _drawn([_run("logs/packed.log", base), _run("logs/padded.log", cand)], Profile("bf16", ulps=1))
    texts = _legend_texts(fig)
    assert texts[:2] == ["packed.log (reference)", "padded.log"]
    assert "|padded.log - packed.log|" in texts
    _assert_legend_clear(fig)


def test_long_colliding_names_keep_the_panels_and_the_legend_readable() -> None:
    """Four golden files named alike in long directories (docs/curves.md's real case)."""
    base = _loss()
    dirs = ["gpt3_mcore_te_tp2_pp2_resume_torch_dist", "gpt3_mcore_tp2_pp2_ep2_etp2_te_4experts2parallel"]
    runs = [
        _run(f"{dirs[k % 2]}/golden_values_dev_dgx_{machine}.json", base + 0.01 * k)
        for k, machine in enumerate(["h100", "gb200", "h100_2nd", "h100"])
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "constrained_layout not applied because axes sizes collapsed"
        fig, _ = _drawn(runs, Profile("bf16"))
        texts = _legend_texts(fig)
    assert all(len(t) <= 60 for t in texts[:4]) and len(set(texts)) == len(texts)
    assert texts[0].endswith("dgx_h100.json (reference)") and texts[0].startswith("gpt3_mcore_te")
    _assert_legend_clear(fig)


def test_equal_curves_both_visible_candidate_dashed_over_a_wide_reference() -> None:
    base = _loss()
    fig, _ = _drawn([_run("a.log", base), _run("b.log", base + 4e-6)], Profile("bf16", ulps=1))
    ref_line, cand_line = fig.axes[0].get_lines()[:2]  # type: ignore[attr-defined]
    assert ref_line.get_linestyle() == "-" and cand_line.get_linestyle() == "--"
    assert ref_line.get_linewidth() > 2 * cand_line.get_linewidth()
    assert cand_line.get_marker() not in (None, "None", "")


def test_a_tiny_difference_is_a_curve_not_a_flat_line_under_the_band() -> None:
    """4e-6 differences under a ~0.016 band: the difference line spans a good part of the panel's height."""
    base = _loss()
    cand = base + 4e-6 * (1 + np.sin(STEPS / 5.0)) + 1e-7
    fig, comparisons = _drawn([_run("a.log", base), _run("b.log", cand)], Profile("bf16", ulps=1))
    assert comparisons[0].passed and float(np.nanmin(comparisons[0].allowed)) > 1e-3
    bottom = fig.axes[1]  # type: ignore[attr-defined]
    diff_line = next(line for line in bottom.get_lines() if line.get_label() == "|b.log - a.log|")
    pixels = bottom.transData.transform(np.column_stack(diff_line.get_data()))
    span = np.nanmax(pixels[:, 1]) - np.nanmin(pixels[:, 1])
    assert span > 0.2 * bottom.bbox.height
    band = next(line for line in bottom.get_lines() if line.get_label().startswith("allowed"))
    assert np.allclose(band.get_ydata(), comparisons[0].allowed)


def test_identical_runs_say_so_instead_of_an_empty_log_panel() -> None:
    base = _loss()
    fig, _ = _drawn([_run("a.log", base), _run("b.log", base.copy())], Profile("exact"))
    bottom = fig.axes[1]  # type: ignore[attr-defined]
    assert bottom.get_title(loc="left") == f"b.log: {STEPS.size} of {STEPS.size} steps equal to a.log"
