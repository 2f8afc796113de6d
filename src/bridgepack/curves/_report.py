"""Pictures and pages of a comparison: a PNG (curves above, per-step difference below) and a one-file HTML.

matplotlib is imported only here and only when a plot is asked for, with the non-interactive Agg backend
(no display needed on a cluster login node). The PNG::

    +------------------------------------------+
    |  lm loss  ==== A (reference)             |  legend outside the axes,
    |           - o - B   (dashed, markers)    |  A (reference) is drawn wide and pale, B dashed on
    |           |  first divergence (dotted)   |  top of it: two equal curves stay both visible
    +------------------------------------------+
    |  |B - A|  log scale     ~~~~~            |  each difference on its own scale, the allowed
    |  - - - - - allowed |difference| - - - -  |  difference as a dashed line: 4e-6 under a band of
    +------------------------------------------+  1.6e-2 is a curve, not a flat line at zero
"""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path
from typing import Any

import numpy as np

from bridgepack._plot import pyplot
from bridgepack.curves._compare import Comparison
from bridgepack.curves._series import Curves

#: Candidate markers, one per run after the reference; at most ``_MARKS`` markers per curve.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_MARKS = 25
#: Longest legend label; longer ones keep their start and end (``gpt3_mcore_te…/golden_values_h100.json``).
_LABEL_CHARS = 48


def _labels(paths: list[str]) -> dict[str, str]:
    """Short legend labels: file names, or the last two path parts where file names collide."""
    names = [os.path.basename(p.rstrip("/")) or p for p in paths]
    out = {}
    for path, name in zip(paths, names, strict=True):
        if names.count(name) > 1:
            name = "/".join(Path(path).parts[-2:])
        if len(name) > _LABEL_CHARS:
            head = _LABEL_CHARS // 3
            name = name[:head] + "\u2026" + name[len(name) - (_LABEL_CHARS - head - 1) :]
        out[path] = name
    return out


def _legend_below(fig: Any, axes: list[Any]) -> None:
    """One legend for every panel, under the figure: it never covers a curve, whatever the label lengths
    (constrained layout shrinks the panels to make room)."""
    handles: list[Any] = []
    texts: list[str] = []
    for ax in axes:
        h, t = ax.get_legend_handles_labels()
        handles += h
        texts += t
    if handles:
        columns = 1 if max(len(t) for t in texts) > _LABEL_CHARS else 2
        fig.legend(handles, texts, loc="outside lower center", ncols=columns, fontsize=8, frameon=False)


def curves_figure(
    runs: list[Curves],
    metric: str,
    comparisons: list[Comparison] | None = None,
    steps: tuple[int | None, int | None] = (None, None),
) -> Any:
    """The matplotlib figure of :func:`render_png` (the caller closes it)."""
    plt = pyplot()
    with_diff = bool(comparisons)
    fig, axes = plt.subplots(
        2 if with_diff else 1,
        1,
        figsize=(10, (7 if with_diff else 4.5) + 0.18 * (len(runs) * (2 if with_diff else 1) // 2 + 1)),
        sharex=True,
        gridspec_kw={"height_ratios": [3, 2]} if with_diff else None,
        squeeze=False,
        layout="constrained",
    )
    top = axes[0][0]
    labels = _labels([run.source for run in runs])
    reference = runs[0].source if runs else ""
    colors = {run.source: f"C{k % 10}" for k, run in enumerate(runs)}
    for k, run in enumerate(runs):
        series = run.metrics.get(metric)
        if series is None:
            continue
        part = series.window(*steps)
        label = labels[run.source]
        if k == 0 and with_diff:
            top.plot(part.iterations, part.values, lw=4, alpha=0.35, color=colors[run.source],
                     label=f"{label} (reference)", solid_capstyle="butt")  # fmt: skip
        else:
            marker = _MARKERS[(k - 1) % len(_MARKERS)] if with_diff else None
            top.plot(part.iterations, part.values, lw=1.2, ls="--" if with_diff else "-", marker=marker,
                     markersize=3.5, markevery=max(1, len(part) // _MARKS), color=colors[run.source],
                     label=label)  # fmt: skip
        for seg in run.segments[1:]:
            top.axvline(seg.first_iteration, color="grey", lw=0.8, ls="--")
    top.set_ylabel(metric)
    top.grid(alpha=0.3)
    if with_diff and comparisons:
        _difference_panel(top, axes[1][0], comparisons, labels, colors, labels.get(reference, reference))
        first = comparisons[0]
        verdict = "match" if all(c.passed for c in comparisons) else "MISMATCH"
        top.set_title(f"{metric}: {verdict} ({first.profile.name}: {first.rule})", fontsize=10)
    else:
        top.set_xlabel("iteration")
        top.set_title(metric, fontsize=10)
    _legend_below(fig, [row[0] for row in axes])
    return fig


def _difference_panel(
    top: Any,
    bottom: Any,
    comparisons: list[Comparison],
    labels: dict[str, str],
    colors: dict[str, str],
    ref_label: str,
) -> None:
    """``|candidate - reference|`` per step on a log scale, with the allowed difference as a dashed line."""
    from matplotlib.transforms import blended_transform_factory

    first = comparisons[0]
    band = np.where(np.isfinite(first.allowed) & (first.allowed > 0), first.allowed, np.nan)
    lowest = np.inf  # the smallest value drawn: the zero ticks go a decade below it
    if np.any(np.isfinite(band)):
        bottom.plot(first.steps, band, color="black", ls="--", lw=1.0,
                    label=f"allowed |difference| ({first.profile.name})")  # fmt: skip
        lowest = float(np.nanmin(band))
    exact = []
    for comp in comparisons:
        diff = comp.abs_diff
        shown = np.where(diff > 0, diff, np.nan)  # a log axis has no 0: equal steps are counted instead
        label = labels.get(comp.candidate, comp.candidate)
        if np.any(np.isfinite(shown)):
            bottom.plot(comp.steps, shown, lw=1.0, color=colors.get(comp.candidate), marker=".",
                        markersize=3, label=f"|{label} - {ref_label}|")  # fmt: skip
            lowest = min(lowest, float(np.nanmin(shown)))
        equal = diff == 0
        if equal.any():
            exact.append(f"{label}: {int(equal.sum())} of {diff.size} steps equal to {ref_label}")
            # Ticks along the panel's foot: a log axis cannot place a zero.
            foot = blended_transform_factory(bottom.transData, bottom.transAxes)
            bottom.scatter(
                comp.steps[equal],
                np.full(int(equal.sum()), 0.03),
                marker="|",
                s=60,
                transform=foot,
                color=colors.get(comp.candidate),
                label=f"|{label} - {ref_label}| = 0",
            )
        step = comp.first_divergence
        if step is not None:
            k = int(np.flatnonzero(comp.steps == step)[0])
            for ax in (top, bottom):
                ax.axvline(step, color="tab:red", lw=1.0, ls=":")
            if diff[k] > 0:
                bottom.plot([step], [diff[k]], "o", color="tab:red")
            top.annotate(
                f"first divergence: step {step}",
                xy=(step, comp.cand[k]),
                xytext=(8, 8),
                textcoords="offset points",
                color="tab:red",
                fontsize=8,
            )
    if np.isfinite(lowest) or exact:
        bottom.set_yscale("log")
    if np.isfinite(lowest) and exact:
        bottom.set_ylim(bottom=lowest / 10)
    if exact:
        bottom.set_title("; ".join(exact), loc="left", fontsize=8, color="dimgrey")
    bottom.set_ylabel("|difference| (log scale)")
    bottom.set_xlabel("iteration")
    bottom.grid(alpha=0.3, which="both")


def render_png(
    runs: list[Curves],
    metric: str,
    comparisons: list[Comparison] | None = None,
    steps: tuple[int | None, int | None] = (None, None),
) -> bytes:
    """Draw ``metric`` of every run; with ``comparisons``, add the difference panel. Returns PNG bytes."""
    fig = curves_figure(runs, metric, comparisons, steps)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    pyplot().close(fig)
    return buffer.getvalue()


def render_html(title: str, rows: list[dict[str, str]], png: bytes, notes: list[str]) -> str:
    """A self-contained page: the table, the notes, and the PNG inlined as base64."""
    head = "".join(f"<th>{html.escape(k)}</th>" for k in rows[0]) if rows else ""
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row.values()) + "</tr>" for row in rows
    )
    note_items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    image = base64.b64encode(png).decode("ascii")
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><table><tr>{head}</tr>{body}</table>"
        f"<ul>{note_items}</ul>"
        f"<img alt='curves' src='data:image/png;base64,{image}'>"
        "</body></html>\n"
    )
