"""Megatron-LM training log lines (bridge-format §10) and TensorBoard scalars, so ``bridgepack curves`` reads
the
run.

One line per logged iteration, field widths as Megatron-LM prints them::

     [2026-08-22 10:00:00.123456] iteration       10/     100 | consumed samples:          320 | ...
     ... | lm loss: 9.876543E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped ...

``lm loss`` is the mean of the per-step losses since the previous line, as Megatron-LM averages over the
log interval; iteration 1 and every multiple of the interval are logged.
"""

from __future__ import annotations

import datetime as _dt
import io
from pathlib import Path
from typing import Any, TextIO

from bridgepack.train._config import StepRecord


def format_log_line(
    record: StepRecord, *, interval_loss: float, interval_ms: float, now: _dt.datetime | None = None
) -> str:
    """The Megatron-LM line for ``record`` (``interval_loss``/``interval_ms``: means over the interval)."""
    stamp = (now or _dt.datetime.now()).strftime("%Y-%m-%d %H:%M:%S.%f")
    return (
        f" [{stamp}]"
        f" iteration {record.iteration:8d}/{record.total_iterations:8d} |"
        f" consumed samples: {record.consumed_samples:12d} |"
        f" elapsed time per iteration (ms): {interval_ms:.1f} |"
        f" learning rate: {record.learning_rate:.6E} |"
        f" global batch size: {record.rows:5d} |"
        f" lm loss: {interval_loss:.6E} |"
        " loss scale: 1.0 |"
        f" grad norm: {record.grad_norm:.3f} |"
        " number of skipped iterations:   0 |"
        " number of nan iterations:   0 |"
    )


class RunLog:
    """Where log lines go: a console stream, the ``--log`` file, TensorBoard; only the logging rank writes."""

    def __init__(
        self, *, stream: TextIO | None, path: Path | None, tensorboard: Path | None, interval: int
    ) -> None:
        self.stream = stream
        self.interval = interval
        self._path = path
        self._file: TextIO | None = open(path, "w", encoding="utf-8") if path is not None else None  # noqa: SIM115
        self._tb: Any = None
        if tensorboard is not None:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(log_dir=str(tensorboard))
        self._pending: list[StepRecord] = []

    def step(self, record: StepRecord) -> None:
        """Record one step; write a line on iteration 1 and on multiples of the interval."""
        self._pending.append(record)
        if self._tb is not None:
            it = record.iteration
            self._tb.add_scalar("lm loss", record.loss, it)
            self._tb.add_scalar("lm loss vs samples", record.loss, record.consumed_samples)
            self._tb.add_scalar("learning-rate", record.learning_rate, it)
            self._tb.add_scalar("grad-norm", record.grad_norm, it)
            self._tb.add_scalar("iteration-time", record.seconds, it)
        if record.iteration == 1 or record.iteration % self.interval == 0:
            self.flush_line()

    def flush_line(self) -> None:
        """Write the line for the steps since the last one (also used for a final partial interval)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        loss = sum(r.loss for r in pending) / len(pending)
        ms = 1000.0 * sum(r.seconds for r in pending) / len(pending)
        line = format_log_line(pending[-1], interval_loss=loss, interval_ms=ms)
        for out in (self.stream, self._file):
            if out is not None:
                out.write(line + "\n")
                out.flush()

    def note(self, text: str) -> None:
        """A plain line in the log file (not a log record; log readers skip it)."""
        if self._file is not None:
            self._file.write(text + "\n")
            self._file.flush()

    def close(self) -> None:
        """Close the file; a write that a stop cut short (a second Ctrl-C during a slow write) still leaves
        the last line complete, so a reader of the log never sees half a record."""
        if self._file is not None and self._path is not None:
            try:
                self._file.close()
            finally:
                _end_with_newline(self._path)
        if self._tb is not None:
            self._tb.flush()
            self._tb.close()


def _end_with_newline(path: Path) -> None:
    """Append a newline to ``path`` unless it is empty or already ends with one."""
    with open(path, "rb+") as handle:
        size = handle.seek(0, io.SEEK_END)
        if size:
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                handle.write(b"\n")
