"""The verdict of a correlation run: both runs' outcomes, the curve comparison, and the files that keep it.

The comparison itself is :mod:`bridgepack.curves` (readers of Megatron-LM / Bridge log lines, tolerance
profiles, first divergence, plot); this module only decides the verdict and writes the report::

    verdict       exit  when
    match         0     both runs exited 0 and every compared metric is within the tolerance
    mismatch      1     both runs exited 0, a metric is outside the tolerance (first divergence reported)
    failed        1     a run exited non-zero (its exit code and last log lines are in the report)
    not-started   2     a command could not be started at all

Files, beside the two logs in the run folder: ``report.txt``, ``report.json`` and ``curves.png``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import orjson

from bridgepack._io import atomic_write_bytes
from bridgepack.correlate._plan import PLAN_SCHEMA_VERSION
from bridgepack.correlate._runner import RunResult
from bridgepack.curves import Comparison, Curves, Profile, compare_curves, read_curves
from bridgepack.errors import BridgepackError

EXIT_CODES = {"match": 0, "mismatch": 1, "failed": 1, "not-started": 2}


@dataclass
class CorrelationReport:
    """Everything ``bridgepack correlate run`` found; ``exit_code`` follows the verdict table above."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`), ``report.json`` and
    #: ``--format json`` alike: the correlate commands' one version.
    SCHEMA_VERSION: ClassVar[int] = PLAN_SCHEMA_VERSION

    run_dir: Path
    runs: tuple[RunResult, RunResult]
    tolerance: str
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    plot: Path | None = None

    @property
    def verdict(self) -> str:
        if not all(run.started for run in self.runs):
            return "not-started"
        if not all(run.ok for run in self.runs):
            return "failed"
        if self.comparisons and all(c["passed"] for c in self.comparisons):
            return "match"
        return "mismatch"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.SCHEMA_VERSION,
            "run_dir": os.fspath(self.run_dir),
            "verdict": self.verdict,
            "tolerance": self.tolerance,
            "runs": [run.to_dict() for run in self.runs],
            "comparisons": self.comparisons,
            "plot": os.fspath(self.plot) if self.plot else None,
            "notes": self.notes,
        }


def _read(run: RunResult, notes: list[str]) -> Curves | None:
    if not run.started:
        return None
    try:
        return read_curves(run.log)
    except BridgepackError as exc:
        notes.append(f"{run.label}: no curve to compare ({exc})")
        return None


def compare_runs(
    run_dir: Path, runs: tuple[RunResult, RunResult], profile: Profile, metrics: list[str] | None = None
) -> CorrelationReport:
    """Compare the logs of two finished runs (the first is the reference) and write the report files."""
    report = CorrelationReport(run_dir, runs, profile.name)
    curves = [_read(run, report.notes) for run in runs]
    a, b = curves
    comparisons: list[Comparison] = []
    if a is not None and b is not None:
        try:
            comparisons = compare_curves(a, [b], profile, metrics=metrics)
        except BridgepackError as exc:
            report.notes.append(f"no comparison: {exc}")
    report.comparisons = [c.summary() for c in comparisons]
    if comparisons and a is not None and b is not None:
        from bridgepack.curves import render_png

        report.plot = run_dir / "curves.png"
        atomic_write_bytes(report.plot, render_png([a, b], comparisons[0].metric, comparisons))
    atomic_write_bytes(run_dir / "report.json", orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2))
    atomic_write_bytes(run_dir / "report.txt", (render_report(report) + "\n").encode())
    return report


def _fmt(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def render_report(report: CorrelationReport) -> str:
    """The report as text: each run's outcome, each metric's comparison, the verdict."""
    lines = [f"run folder: {report.run_dir}"]
    for run in report.runs:
        state = f"exit {run.returncode}" if run.started else run.error
        lines.append(f"  {run.label}: {state}, {run.seconds:.1f} s, log {run.log}")
        lines.append(f"     $ {run.command}")
        if not run.ok:
            lines += [f"     | {line}" for line in run.tail]
    for c in report.comparisons:
        status = "within tolerance" if c["passed"] else "OUTSIDE tolerance"
        lines.append(
            f"  {c['metric']} ({report.tolerance}: {c['rule']}): {status}, {c['shared_steps']} shared steps"
        )
        first = c["first_divergence"]
        if first:
            lines.append(
                f"     first divergence at step {first['step']}: {_fmt(first['reference'])}"
                f" vs {_fmt(first['candidate'])} (allowed |diff| {_fmt(first['allowed_abs_diff'])})"
            )
        if c["max_abs_diff"]:
            lines.append(
                f"     max |diff| {_fmt(c['max_abs_diff']['value'])} at step {c['max_abs_diff']['step']}"
            )
        lines += [f"     {reason}" for reason in c["reasons"]]
    lines += [f"  note: {note}" for note in report.notes]
    if report.plot:
        lines.append(f"  plot: {report.plot}")
    lines.append(f"verdict: {report.verdict}")
    return "\n".join(lines)
