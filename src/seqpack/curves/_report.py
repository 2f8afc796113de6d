"""Pictures and pages of a comparison: a PNG (curves above, per-step difference below) and a one-file HTML.

matplotlib is imported only here and only when a plot is asked for, with the non-interactive Agg backend
(no display needed on a cluster login node). The PNG::

    +------------------------------------------------+
    |  lm loss   -- run A   -- run B                  |   curves on one axis
    |            |  first divergence (dotted line)    |
    +------------------------------------------------+
    |  B - A     ~~~~ shaded: +-allowed per step      |   per-step difference and tolerance band
    +------------------------------------------------+
"""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path

import numpy as np

from seqpack._plot import pyplot
from seqpack.curves._compare import Comparison
from seqpack.curves._series import Curves


def _labels(paths: list[str]) -> dict[str, str]:
    """Short legend labels: file names, or the last two path parts where file names collide."""
    names = [os.path.basename(p.rstrip("/")) or p for p in paths]
    out = {}
    for path, name in zip(paths, names, strict=True):
        if names.count(name) > 1:
            name = "/".join(Path(path).parts[-2:])
        out[path] = name
    return out


def render_png(
    runs: list[Curves],
    metric: str,
    comparisons: list[Comparison] | None = None,
    steps: tuple[int | None, int | None] = (None, None),
) -> bytes:
    """Draw ``metric`` of every run; with ``comparisons``, add the difference panel. Returns PNG bytes."""
    plt = pyplot()
    with_diff = bool(comparisons)
    fig, axes = plt.subplots(
        2 if with_diff else 1,
        1,
        figsize=(10, 7 if with_diff else 4.5),
        sharex=True,
        gridspec_kw={"height_ratios": [3, 2]} if with_diff else None,
        squeeze=False,
    )
    top = axes[0][0]
    labels = _labels([run.source for run in runs])
    colors = {run.source: f"C{k % 10}" for k, run in enumerate(runs)}
    for run in runs:
        series = run.metrics.get(metric)
        if series is None:
            continue
        part = series.window(*steps)
        top.plot(part.iterations, part.values, lw=1.2, color=colors[run.source], label=labels[run.source])
        for seg in run.segments[1:]:
            top.axvline(seg.first_iteration, color="grey", lw=0.8, ls="--")
    top.set_ylabel(metric)
    top.grid(alpha=0.3)
    top.legend(loc="best", fontsize=8)
    if with_diff and comparisons:
        bottom = axes[1][0]
        first = comparisons[0]
        band = np.where(np.isfinite(first.allowed), first.allowed, np.nan)
        if np.any(np.isfinite(band)):
            bottom.fill_between(first.steps, -band, band, color="tab:green", alpha=0.2, label="tolerance")
        for comp in comparisons:
            bottom.plot(
                comp.steps,
                comp.cand - comp.ref,
                lw=1.0,
                color=colors.get(comp.candidate),
                label=f"{labels.get(comp.candidate, comp.candidate)} - reference",
            )
            step = comp.first_divergence
            if step is not None:
                k = int(np.flatnonzero(comp.steps == step)[0])
                for ax in (top, bottom):
                    ax.axvline(step, color="tab:red", lw=1.0, ls=":")
                bottom.plot([step], [comp.cand[k] - comp.ref[k]], "o", color="tab:red")
                top.annotate(
                    f"first divergence: step {step}",
                    xy=(step, comp.cand[k]),
                    xytext=(8, 8),
                    textcoords="offset points",
                    color="tab:red",
                    fontsize=8,
                )
        bottom.axhline(0.0, color="black", lw=0.6)
        bottom.set_ylabel("difference")
        bottom.set_xlabel("iteration")
        bottom.grid(alpha=0.3)
        bottom.legend(loc="best", fontsize=8)
        verdict = "match" if all(c.passed for c in comparisons) else "MISMATCH"
        top.set_title(f"{metric}: {verdict} ({first.profile.name}: {first.rule})", fontsize=10)
    else:
        top.set_xlabel("iteration")
        top.set_title(metric, fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
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
