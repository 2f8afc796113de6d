"""Run one training command, tee its output into a log file, and keep what a report needs when it fails.

The command runs without a shell (an argv from :func:`shlex.split`) unless ``shell=True``; stdout and stderr
are merged, as a terminal shows them, and each line goes to the log file the moment it arrives (and to
``echo`` for live progress). A command that fails keeps its exit code and the last lines of its log; a
command that cannot start at all (no such program, not executable) is recorded as not started.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Lines of a log kept for the report of a failed run.
TAIL_LINES = 20
#: POSIX shell exit codes for a command it could not run.
SHELL_CANNOT_START = {126: "not executable", 127: "command not found"}


@dataclass(frozen=True)
class RunResult:
    """What happened to one command: exit code (``None`` if it never started), log file, duration, tail."""

    label: str
    command: str
    log: Path
    returncode: int | None
    seconds: float
    tail: tuple[str, ...]
    error: str | None = None

    @property
    def started(self) -> bool:
        """False when the program could not be run (missing, not executable; 126/127 from a shell)."""
        return self.error is None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "command": self.command,
            "log": os.fspath(self.log),
            "returncode": self.returncode,
            "seconds": round(self.seconds, 3),
            "tail": [] if self.ok else list(self.tail),  # the last lines matter when a run failed
            "error": self.error,
        }


def run_logged(
    label: str,
    command: Sequence[str] | str,
    log_path: Path,
    *,
    env: dict[str, str] | None = None,
    echo: Callable[[str], None] | None = None,
    display: str | None = None,
) -> RunResult:
    """Run ``command`` (an argv, or a shell line when given as ``str``) and tee its output to ``log_path``.

    ``log_path`` must not exist yet (the run folder is new); it is created even if the command cannot start,
    so every run in the report has a log to look at. ``display`` is how the report shows the command
    (e.g. with the ``PYTHONPATH=...`` it adds), by default the command itself.
    """
    shell = isinstance(command, str)
    text = display or (command if isinstance(command, str) else shlex.join(command))
    child_env = {**(env if env is not None else os.environ), "PYTHONUNBUFFERED": "1"}
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    start = time.monotonic()
    with open(log_path, "x", encoding="utf-8") as log:
        try:
            proc = subprocess.Popen(
                command,
                shell=shell,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=child_env,
                text=True,
                errors="replace",
                bufsize=1,
            )
        except OSError as exc:
            program = command if shell else next(iter(command), "")
            message = f"cannot start {program!r}: {exc.strerror or exc}"
            log.write(message + "\n")
            return RunResult(label, text, log_path, None, time.monotonic() - start, (message,), message)
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                tail.append(line.rstrip("\n"))
                if echo is not None:
                    echo(line.rstrip("\n"))
            returncode = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    error = None
    if shell and returncode in SHELL_CANNOT_START:
        error = f"cannot start: the shell says exit {returncode} ({SHELL_CANNOT_START[returncode]})"
    return RunResult(label, text, log_path, returncode, time.monotonic() - start, tuple(tail), error)
