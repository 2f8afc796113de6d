"""Progress reporting for long work: rich bars on a terminal, plain lines in logs, nothing with --quiet.

Library code takes a :class:`Progress`-like object from :func:`progress` and calls ``add_task`` /
``advance`` / ``update``. On a terminal that is a rich bar. When stderr is not a terminal (a Slurm or CI
log) it is :class:`LineProgress`: one plain line per task at most every :data:`LINE_SECONDS` seconds, and
one at the end of a long command, so a log shows the job is alive without a carriage-return mess::

    bridgepack: read 1,200,000/4,000,000 (30%) 98,400/s, 12s
    bridgepack: write 3,500 packs 350/s, 22s

With ``quiet=True`` it is a no-op stand-in, so hot loops never pay for rendering.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from bridgepack._console import literal_console


class _SilentProgress:
    """The no-op stand-in for :class:`rich.progress.Progress`."""

    def add_task(self, description: str, total: float | None = None, **fields: Any) -> TaskID:
        return TaskID(0)

    def advance(self, task: TaskID, advance: float = 1) -> None:
        return None

    def update(self, task: TaskID, **kwargs: Any) -> None:
        return None


#: Seconds between two plain progress lines (``BRIDGEPACK_PROGRESS_SECONDS`` overrides it, e.g. for tests).
LINE_SECONDS = 10.0


class LineProgress:
    """:class:`rich.progress.Progress`'s interface, written as plain lines at most every ``interval`` s."""

    def __init__(
        self,
        write: Callable[[str], Any],
        interval: float = LINE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._write, self._interval, self._clock = write, interval, clock
        self._start = self._last = clock()
        self._tasks: list[dict[str, Any]] = []

    def add_task(self, description: str, total: float | None = None, **fields: Any) -> TaskID:
        self._tasks.append(
            {"description": description, "total": total, "completed": 0.0, "t0": self._clock()}
        )
        return TaskID(len(self._tasks) - 1)

    def advance(self, task: TaskID, advance: float = 1) -> None:
        self._tasks[task]["completed"] += advance
        self._tick()

    def update(self, task: TaskID, **kwargs: Any) -> None:
        state = self._tasks[task]
        for key in ("total", "completed", "description"):
            if kwargs.get(key) is not None:
                state[key] = kwargs[key]
        if kwargs.get("advance"):
            state["completed"] += kwargs["advance"]
        self._tick()

    def _tick(self) -> None:
        now = self._clock()
        if now - self._last >= self._interval:
            self._last = now
            self._print(now)

    def _print(self, now: float) -> None:
        for state in self._tasks:
            done, total = state["completed"], state["total"]
            elapsed = max(now - state["t0"], 1e-9)
            count = f"{done:,.0f}/{total:,.0f} ({done / total:.0%})" if total else f"{done:,.0f}"
            self._write(f"bridgepack: {state['description']} {count} {done / elapsed:,.0f}/s, {elapsed:.0f}s")

    def close(self) -> None:
        """The final state, when the command ran long enough to have printed (or owed) a line."""
        now = self._clock()
        if self._tasks and now - self._start >= self._interval:
            self._print(now)


def _line_seconds() -> float:
    """``BRIDGEPACK_PROGRESS_SECONDS`` when it is a finite number >= 0 (nan, inf, negatives: the default)."""
    try:
        seconds = float(os.environ.get("BRIDGEPACK_PROGRESS_SECONDS", LINE_SECONDS))
    except ValueError:
        return LINE_SECONDS
    return seconds if math.isfinite(seconds) and seconds >= 0 else LINE_SECONDS


@contextmanager
def progress(quiet: bool = False, *extra_columns: Any) -> Iterator[Progress | _SilentProgress | LineProgress]:
    """A rich bar on a terminal, :class:`LineProgress` on other stderr, a silent stand-in when ``quiet``."""
    if quiet:
        yield _SilentProgress()
        return
    if not sys.stderr.isatty():
        lines = LineProgress(lambda text: print(text, file=sys.stderr, flush=True), _line_seconds())
        yield lines
        lines.close()  # not after an error: its one-line message stays the last line
        return
    columns = (
        # a description may name a file: shown as it is, never read as markup (bridgepack._console)
        TextColumn("{task.description}", style="progress.description", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        *extra_columns,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=literal_console(stderr=True), transient=False) as bar:
        yield bar
