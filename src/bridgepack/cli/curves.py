"""``bridgepack curves compare|show|export``: loss curves from any Megatron log, with real tolerances."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from bridgepack._console import literal_console, styled
from bridgepack._io import atomic_write_bytes
from bridgepack._progress import progress
from bridgepack._ranges import COUNT0, STEP
from bridgepack.cli._common import (
    FormatOption,
    OutputFormat,
    QuietOption,
    emit_json,
    err_console,
    number_option,
    out_console,
    print_blocks,
    print_lines,
    stdout_is_terminal,
)
from bridgepack.curves import (
    DEFAULT_PROFILE,
    DEFAULT_ULPS,
    FORMATS,
    LOSS,
    PROFILES,
    CompareReport,
    Comparison,
    Curves,
    ExportReport,
    Profile,
    ShowReport,
    canonical,
    compare_curves,
    one_run,
    parse_metric_map,
    read_curves,
    read_runs,
    rename_metrics,
    run_notes,
    write_golden,
)
from bridgepack.errors import DataError, UsageError

TABLE_WIDTH = 160  # tables are wide: on a terminal narrower than this, print past its edge, not folded

app = typer.Typer(
    help="Loss curves from Megatron-LM/Bridge/NeMo logs, TensorBoard, golden JSON, CSV/JSONL: compare, plot.",
    no_args_is_help=True,
)

InputFormatOption = typer.Option(
    None, "--input-format", help=f"Force the input format ({'|'.join(FORMATS)}); detected when omitted."
)
MetricOption = typer.Option(
    [LOSS], "--metric", "-m", help="Metric to compare (repeatable; 'all' = every shared metric)."
)
StepsOption = typer.Option(None, "--steps", help="Only iterations A..B inclusive, as A:B (A: or :B open).")
MetricMapOption = typer.Option(
    None,
    "--metric-map",
    help="Read metric NAME as CANONICAL, as NAME=CANONICAL (repeatable; HF Trainer names are built in).",
)


def parse_steps(text: str | None) -> tuple[int | None, int | None]:
    """``"A:B"`` -> ``(A, B)``; either side may be empty."""
    if text is None:
        return (None, None)
    lo, sep, hi = text.partition(":")
    if not sep:
        raise UsageError(f"--steps: expected A:B (e.g. 10:500), found {text!r}")
    try:
        start = int(lo) if lo.strip() else None
        stop = int(hi) if hi.strip() else None
    except ValueError:
        raise UsageError(f"--steps: expected integers in A:B, found {text!r}") from None
    for step in (start, stop):
        if step is not None:
            STEP.check("--steps", step)
    if start is not None and stop is not None and start > stop:
        raise UsageError(f"--steps: start {start} is after stop {stop}")
    return (start, stop)


def _fmt(x: Any, digits: int = 6) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        return f"{x:.{digits}g}"
    return str(x)


def _rows(comparisons: list[Comparison]) -> list[dict[str, str]]:
    rows = []
    for comp in comparisons:
        s = comp.summary()
        first: Any = s["first_divergence"]
        max_abs: Any = s["max_abs_diff"]
        max_rel: Any = s["max_rel_diff"]
        final: Any = s["final"]
        only_ref: Any = s["only_in_reference"]
        only_cand: Any = s["only_in_candidate"]
        rows.append(
            {
                "candidate": comp.candidate,
                "metric": comp.metric,
                "steps": f"{s['shared_steps']} (+{only_ref['count']}/+{only_cand['count']})",
                "max |diff|": "-" if max_abs is None else f"{_fmt(max_abs['value'], 4)} @{max_abs['step']}",
                "max rel": "-"
                if max_rel is None
                else f"{_fmt(max_rel['value'] * 100, 3)}% @{max_rel['step']}",
                "first beyond": "-" if first is None else str(first["step"]),
                "failing": f"{s['failing_steps']} (tol {s['tolerated_failing_steps']})",
                "corr": _fmt(comp.correlation, 5),
                "final diff": "-" if final is None else _fmt(final["abs_diff"], 4),
                "verdict": "match" if comp.passed else "MISMATCH",
            }
        )
    return rows


def _print_table(title: str, rows: list[dict[str, str]]) -> None:
    """A table on a terminal; elsewhere the title, then one block per row (its first column as the heading,
    one ``key: value`` line per other column), never wrapped."""
    if not stdout_is_terminal():
        print_lines([title, ""])
        print_blocks([(": ".join(next(iter(row.items()))), list(row.items())[1:]) for row in rows])
        print_lines([""])
        return
    table = Table(title=title, title_justify="left")
    for key in rows[0] if rows else []:
        table.add_column(key, overflow="fold", no_wrap=key not in ("candidate", "file"))
    for row in rows:
        style = None if row.get("verdict") != "MISMATCH" else "red"
        table.add_row(*row.values(), style=style)
    wide = literal_console(width=max(out_console.width, TABLE_WIDTH))
    wide.print(table)


RunOption = typer.Option(
    None,
    "--run",
    help="A run of a W&B export of several runs (repeatable; for compare the first is the reference).",
)


def _read_all(
    paths: list[Path],
    input_format: str | None,
    quiet: bool,
    runs: list[str] | None,
    *,
    one_each: bool,
    metric_map: list[str] | None = None,
) -> list[Curves]:
    """Every run of every input, HF/custom metric names mapped to the canonical ones; with ``one_each`` an
    input of several runs needs ``--run`` to say which."""
    mapping = parse_metric_map(metric_map or [])
    with progress(quiet) as bar:
        found = [(p, read_runs(p, input_format, runs=runs or (), progress=bar)) for p in paths]
    if one_each and not runs:
        for path, group in found:
            one_run(path, group)
    curves = [c for _, group in found for c in group]
    for src, dst in mapping.items():
        if src != dst and not any(src in run.metrics for run in curves):
            names = sorted({name for run in curves for name in run.metrics})
            raise UsageError(
                f"--metric-map {src}={dst}: no run has a metric '{src}' (they have: {', '.join(names)})"
            )
    for run in curves:
        rename_metrics(run, mapping)
    return curves


def _write_png_html(
    runs: list[Curves],
    metric: str,
    comparisons: list[Comparison] | None,
    steps: tuple[int | None, int | None],
    plot: Path | None,
    html_out: Path | None,
    title: str,
    rows: list[dict[str, str]],
    notes: list[str],
    overwrite: bool,
    quiet: bool,
) -> None:
    from bridgepack.curves import render_html, render_png

    png = render_png(runs, metric, comparisons, steps)
    if plot is not None:
        atomic_write_bytes(plot, png, overwrite=overwrite)
        if not quiet:
            err_console.print(f"wrote {plot}")
    if html_out is not None:
        atomic_write_bytes(html_out, render_html(title, rows, png, notes).encode(), overwrite=overwrite)
        if not quiet:
            err_console.print(f"wrote {html_out}")


@app.command("compare")
def compare(
    runs: list[Path] = typer.Argument(..., help="Reference run first, then one or more runs to check."),
    tolerance: str = typer.Option(DEFAULT_PROFILE, "--tolerance", "-t", help=f"{'|'.join(PROFILES)}"),
    ulps: int = number_option(
        DEFAULT_ULPS, "--ulps", help="bf16 profile: allowed bf16 ulps per step.", range=COUNT0
    ),
    deterministic: bool = typer.Option(
        False, "--deterministic", help="golden: also require identical values."
    ),
    require_all_steps: bool = typer.Option(
        False, "--require-all-steps", help="Fail when a step is in one run only."
    ),
    metric: list[str] = MetricOption,
    steps: str | None = StepsOption,
    input_format: str | None = InputFormatOption,
    metric_map: list[str] | None = MetricMapOption,
    run_names: list[str] | None = RunOption,
    plot: Path | None = typer.Option(None, "--plot", help="Write a PNG: curves, difference, tolerance band."),
    html_out: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace existing --plot/--html files."),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """Compare loss curves of two or more runs; exit 0 when they match, 1 when not, 2 when unreadable.

    Example: bridgepack curves compare golden_values_dev_dgx_h100.json train.log -t golden --plot diff.png
    """
    profile = Profile(tolerance, ulps=ulps, deterministic=deterministic, require_all_steps=require_all_steps)
    window = parse_steps(steps)
    curves = _read_all(runs, input_format, quiet, run_names, one_each=True, metric_map=metric_map)
    if len(curves) < 2:
        raise UsageError("compare needs at least two runs (reference first)")
    comparisons = compare_curves(curves[0], curves[1:], profile, metrics=metric, steps=window)
    report = CompareReport(profile, window, curves, comparisons)
    notes, passed = report.notes, report.passed
    rows = _rows(comparisons)
    if output_format is OutputFormat.json:
        emit_json(report)
    else:
        _print_table(f"reference: {curves[0].source}  profile: {profile.name} ({comparisons[0].rule})", rows)
        for comp in comparisons:
            for reason in comp.reasons:
                line = f": {comp.candidate} '{comp.metric}': {reason}"
                out_console.print(styled(("mismatch", "red"), line))
        for note in notes:
            out_console.print(f"note: {note}", markup=False)
        out_console.print("verdict: " + ("match" if passed else "MISMATCH"))
    if plot is not None or html_out is not None:
        title = f"bridgepack curves compare ({profile.name})"
        _write_png_html(
            curves,
            comparisons[0].metric,
            comparisons,
            window,
            plot,
            html_out,
            title,
            rows,
            notes,
            overwrite,
            quiet,
        )
    if not passed:
        raise typer.Exit(1)


@app.command("show")
def show(
    logs: list[Path] = typer.Argument(..., help="Logs or metric files to summarise."),
    metric: str = typer.Option(LOSS, "--metric", "-m", help="Metric to summarise and plot."),
    steps: str | None = StepsOption,
    input_format: str | None = InputFormatOption,
    metric_map: list[str] | None = MetricMapOption,
    run_names: list[str] | None = RunOption,
    plot: Path | None = typer.Option(None, "--plot", help="Write a PNG of the metric of every run."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --plot file."),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """Summarise what each log holds (format, segments, metrics) and optionally plot one metric.

    Example: bridgepack curves show train.log --metric "lm loss" --plot loss.png
    """
    window = parse_steps(steps)
    curves = _read_all(logs, input_format, quiet, run_names, one_each=False, metric_map=metric_map)
    name = canonical(metric)
    if not any(len(c.metrics.get(name, ())) for c in curves):  # nothing to show is a finding, not a table
        have = "; ".join(f"{c.source} has: {', '.join(list(c.metrics)[:12]) or 'no metric'}" for c in curves)
        raise DataError(f"no run has metric '{metric}' ({have})")
    if output_format is OutputFormat.json:
        emit_json(ShowReport(name, curves))
    else:
        rows = []
        for run in curves:
            s = run.summary(name)
            rows.append(
                {
                    "file": run.source,
                    "format": run.format,
                    "segments": str(len(run.segments) or 1),
                    "steps": str(s["steps"]),
                    "first": "-" if not s["steps"] else f"{s['first'][0]}: {_fmt(s['first'][1])}",
                    "last": "-" if not s["steps"] else f"{s['last'][0]}: {_fmt(s['last'][1])}",
                    "min": _fmt(s.get("min")),
                    "max": _fmt(s.get("max")),
                    "nan": str(s.get("nan", 0)),
                }
            )
        _print_table(f"metric: {name}", rows)
        for run in curves:
            out_console.print(f"{run.source}: metrics: {', '.join(run.metrics)}", markup=False)
        for note in run_notes(curves):
            out_console.print(f"note: {note}", markup=False)
    if plot is not None:
        _write_png_html(curves, name, None, window, plot, None, "", [], [], overwrite, quiet)


@app.command("export")
def export(
    log: Path = typer.Argument(..., help="Log or metric file to export."),
    golden: Path = typer.Option(..., "--golden", help="Write Megatron-LM golden-value JSON here."),
    input_format: str | None = InputFormatOption,
    run_name: str | None = typer.Option(
        None, "--run", help="The run to export from a W&B export of several."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output file."),
    quiet: bool = QuietOption,
    output_format: OutputFormat = FormatOption,
) -> None:
    """Write a run's metrics as Megatron-LM golden-value JSON (exit 1 when it holds no 'lm loss').

    Example: bridgepack curves export train.log --golden golden_values_dev_dgx_h100.json
    """
    with progress(quiet) as bar:
        run = read_curves(log, input_format, run=run_name, progress=bar)
    notes = write_golden(run, golden, overwrite=overwrite)
    if output_format is OutputFormat.json:
        emit_json(ExportReport(str(log), str(golden), notes))
        return
    for note in notes:
        err_console.print(f"note: {note}", markup=False)
    if not quiet:
        err_console.print(f"wrote {golden}")


#: What ``bridgepack curves`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = app
