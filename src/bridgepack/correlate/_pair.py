"""Run two commands one after the other in a new run folder, then compare them (``bridgepack correlate run``).

The second command runs even when the first fails or cannot start: the report then shows both outcomes,
which is what one needs to see to fix a launch. Nothing already on disk is reused or overwritten: the caller
creates the run folder new (:func:`~bridgepack.correlate.make_run_dir`) before anything runs.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bridgepack.correlate._report import CorrelationReport, compare_runs
from bridgepack.correlate._runner import RunResult, run_logged
from bridgepack.curves import Profile


@dataclass(frozen=True)
class PlannedRun:
    """One command to run: its label (log file ``<label>.log``), argv or shell line, environment to add,
    and how to show it (default: the command itself)."""

    label: str
    command: Sequence[str] | str
    env: dict[str, str] = field(default_factory=dict)
    display: str | None = None


def run_pair(
    run_dir: Path,
    runs: tuple[PlannedRun, PlannedRun],
    profile: Profile,
    *,
    echo: Callable[[str, str], None] | None = None,
    metrics: list[str] | None = None,
) -> CorrelationReport:
    """Run both commands in order in the existing ``run_dir``, tee their logs, compare, write the report.

    ``echo(label, line)`` receives every output line as it arrives (live progress on stderr in the CLI).
    """
    results: list[RunResult] = []
    for planned in runs:
        env = {**os.environ, **planned.env}
        text = planned.display or (
            planned.command if isinstance(planned.command, str) else shlex.join(planned.command)
        )
        if echo is not None:
            echo(planned.label, f"starting: {text}")
        line_echo = (lambda line, label=planned.label: echo(label, line)) if echo is not None else None
        result = run_logged(
            planned.label,
            planned.command,
            run_dir / f"{planned.label}.log",
            env=env,
            echo=line_echo,
            display=text,
        )
        if echo is not None:
            state = f"exit {result.returncode}" if result.started else result.error
            echo(planned.label, f"finished: {state} after {result.seconds:.1f} s")
        results.append(result)
    return compare_runs(run_dir, (results[0], results[1]), profile, metrics)
