"""``bridgepack demo``: the whole toolkit on bundled data in about a minute, ending in an HTML report."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from bridgepack._console import literal_console, styled
from bridgepack._ranges import RANKS
from bridgepack.cli._common import (
    FormatOption,
    OutputFormat,
    QuietOption,
    emit_json,
    err_console,
    number_option,
    out_console,
)
from bridgepack.doctor import checked_lang, default_lang

if TYPE_CHECKING:  # bridgepack.demo imports torch: loaded when the demo runs, not with every command
    from bridgepack.demo import DemoOptions, DemoResult, Reporter, StepResult

#: ``bridgepack.demo.DEFAULT_THREADS`` (not imported here, see above; a test keeps the two equal).
DEFAULT_THREADS = 1
OK, FAILED = ("✓", "green"), ("✗", "red")


class _LineReporter:
    """Plain lines on stderr (not a terminal: CI logs, pipes)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def begin(self, index: int, total: int, name: str, title: str, work: int | None) -> None:
        steps = f" ({work} steps)" if work else ""
        self.console.print(f"[{index}/{total}] {name}: {title}{steps} ...", markup=False, soft_wrap=True)

    def advance(self, amount: int = 1, note: str | None = None) -> None:
        return None

    def end(self, step: StepResult) -> None:
        mark = "ok" if step.ok else "FAILED"
        self.console.print(
            f"      {mark} in {step.seconds:.1f} s: {step.summary}", markup=False, soft_wrap=True
        )


class _BarReporter:
    """A rich display on a terminal: one line per step, a bar for the training steps."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.task: TaskID | None = None
        self.label = ""
        self.work = 1

    def begin(self, index: int, total: int, name: str, title: str, work: int | None) -> None:
        self.label = f"[{index}/{total}] {name}: {title}"  # shown as it is: the bar reads no markup
        self.work = work or 1
        self.task = self.bar.add_task(f"  {self.label}", total=work, note="")

    def advance(self, amount: int = 1, note: str | None = None) -> None:
        if self.task is not None:
            self.bar.update(self.task, advance=amount, note=note or "")

    def end(self, step: StepResult) -> None:
        if self.task is None:
            return
        mark = OK if step.ok else FAILED
        # The line stays short (a terminal line); the summary at the end has each step's account.
        self.bar.update(
            self.task,
            description=f"{mark[0]} {self.label}",
            total=self.work,
            completed=self.work,
            note="" if step.ok else "did not do what it should",
        )


@contextmanager
def _reporter(quiet: bool) -> Iterator[Reporter]:
    if quiet:
        from bridgepack.demo import SilentReporter

        yield SilentReporter()
        return
    if not sys.stderr.isatty():
        yield _LineReporter(err_console)
        return
    columns = (
        TextColumn("{task.description}", markup=False),
        BarColumn(bar_width=24),
        MofNCompleteColumn(),
        TextColumn("{task.fields[note]}", markup=False),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=literal_console(stderr=True), transient=False) as bar:
        yield _BarReporter(bar)


def run_demo(options: DemoOptions, reporter: Reporter) -> DemoResult:
    """:func:`bridgepack.demo.run_demo`, imported on use."""
    from bridgepack.demo import run_demo as run

    return run(options, reporter)


def _print_summary(result: DemoResult) -> None:
    p = out_console.print
    if result.interrupted:
        head = ("stopped on request", "yellow")
    elif result.passed:
        head = ("every step did what it should", "green")
    else:
        head = ("some steps did not do what they should", "red")
    tail = f" ({result.seconds:.1f} s, run size {result.sizes.name})"
    p(styled(("bridgepack demo", "bold"), ": ", head, tail))
    width = max(len(step.name) for step in result.steps) if result.steps else 0
    for step in result.steps:
        # One line per step, never folded: a narrow terminal wraps it, a pipe or a log keeps it whole.
        mark = OK if step.ok else FAILED
        p(styled(" ", mark, " ", (f"{step.name:<{width}}", "bold"), f"  {step.summary}"), soft_wrap=True)
    speedup = result.speedup
    if speedup is not None and speedup.real_tokens_per_s is not None:
        p(
            f"speed-up  {speedup.real_tokens_per_s:.1f}x real tokens/s for packed training; padding took "
            f"{speedup.padding_fraction_padded * 100:.1f}% of the padded run's compute "
            f"({speedup.padding_fraction_packed * 100:.1f}% packed)"
        )
    if result.paths.report.exists():
        p(f"report    {os.fspath(result.paths.report)}")
    p(f"summary   {os.fspath(result.paths.summary)}")


def demo(
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Output directory (default: a new bridgepack-demo-<time> directory here)."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Use a non-empty --out, replacing the demo's files."
    ),
    quick: bool = typer.Option(False, "--quick", help="A tiny run (a few seconds): smaller model, 4 steps."),
    threads: int = number_option(
        DEFAULT_THREADS, "--threads", help="Torch CPU threads for training.", range=RANKS
    ),
    lang: str | None = typer.Option(None, "--lang", help="Doctor messages: en or zh (default: the locale)."),
    tokenizer: Path | None = typer.Option(
        None,
        "--tokenizer",
        help="A local Hugging Face tokenizer with a chat template instead of the built one; the ids present "
        "are remapped to a small vocabulary for the tiny model.",
    ),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """Run the whole toolkit on bundled chat data and write an HTML report.

    Builds a tokenizer from the bundled conversations (nothing is downloaded), packs them, inspects the
    packs, checks a Bridge config with one deliberate mistake (and its fix), trains a tiny model on the
    packs and on the same samples padded, compares the two loss curves and writes report.html with the
    curves, packing statistics, the measured speed-up and the doctor's findings. About a minute on two
    CPU cores. Exit 0 when every step did what it should, 1 when one did not.

    Example: bridgepack demo --out demo-out
    """
    from bridgepack.demo import DemoOptions

    options = DemoOptions(
        out=out,
        overwrite=overwrite,
        quick=quick,
        threads=threads,
        lang=checked_lang(lang or default_lang()),
        tokenizer=tokenizer,
    )
    with _reporter(quiet) as reporter:
        result = run_demo(options, reporter)
    if output_format is OutputFormat.json:
        emit_json(result)
    else:
        _print_summary(result)
    if result.interrupted:
        err_console.print(f"demo stopped on request; what it wrote is in {os.fspath(result.paths.root)}")
        raise typer.Exit(130)
    if not result.passed:
        raise typer.Exit(1)


#: What ``bridgepack demo`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = demo
