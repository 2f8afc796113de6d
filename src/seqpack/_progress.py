"""Progress reporting for long work: rich bars on stderr when it is a terminal, silence otherwise.

Library code takes a :class:`Progress`-like object from :func:`progress` and calls ``add_task`` /
``advance``; with ``quiet=True`` or a non-terminal stderr it gets a no-op stand-in, so hot loops never
pay for rendering in CI or pipes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class _SilentProgress:
    """The no-op stand-in for :class:`rich.progress.Progress`."""

    def add_task(self, description: str, total: float | None = None, **fields: Any) -> TaskID:
        return TaskID(0)

    def advance(self, task: TaskID, advance: float = 1) -> None:
        return None

    def update(self, task: TaskID, **kwargs: Any) -> None:
        return None


@contextmanager
def progress(quiet: bool = False, *extra_columns: Any) -> Iterator[Progress | _SilentProgress]:
    """A progress display on stderr, or a silent stand-in when ``quiet`` or stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        yield _SilentProgress()
        return
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *extra_columns,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        yield bar
