"""The one series type every reader produces: metric -> {iteration: value}, kept as numpy arrays.

A training log is a sequence of records. Readers collect, per metric, the iterations and values in
*log order*; :func:`build_curves` then resolves them into sorted, unique iterations. When a run restarted
from a checkpoint the iterations go back (``... 140, 150, [restart] 110, 120 ...``): the log is split into
:class:`Segment` s and, for an iteration seen twice, the later segment wins (it is the run that went on)::

    log order   10 20 30 40 | 30 40 50          segments: [10..40], [30..50] (restart at line L)
    resolved    10 20 30' 40' 50                 (primes: values from the second segment)

Two different kinds of "no value" are kept apart, because they mean different things:

* a step that was *not recorded* (golden JSON's string ``"nan"``, a gap in a CSV) is simply absent;
* a step whose line was printed but whose loss was left off is listed in ``missing`` (Megatron prints the
  loss only when it is > 0, so a NaN loss vanishes from the line) or in ``skipped`` (every iteration of the
  interval was skipped, e.g. fp16 loss-scale overflow). A NaN that *is* printed is a real ``nan`` value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Series:
    """One metric of one run: sorted unique ``iterations`` (int64) and their ``values`` (float64)."""

    iterations: IntArray
    values: FloatArray

    def __len__(self) -> int:
        return int(self.iterations.size)

    def as_dict(self) -> dict[int, float]:
        """``{iteration: value}`` (small series only: reports and tests)."""
        return dict(zip(self.iterations.tolist(), self.values.tolist(), strict=True))

    def window(self, start: int | None, stop: int | None) -> Series:
        """The steps with ``start <= iteration <= stop`` (either bound may be ``None``)."""
        keep = np.ones(self.iterations.size, dtype=bool)
        if start is not None:
            keep &= self.iterations >= start
        if stop is not None:
            keep &= self.iterations <= stop
        return Series(self.iterations[keep], self.values[keep])


@dataclass(frozen=True)
class Segment:
    """A stretch of a log where iterations only go forward; a new one starts where they go back."""

    first_iteration: int
    last_iteration: int
    records: int
    line: int | None = None  # 1-based line of the segment's first record (text logs)


@dataclass
class Curves:
    """Everything read from one input: metrics, run segments, and what the reader noticed."""

    source: str
    format: str
    metrics: dict[str, Series]
    segments: list[Segment] = field(default_factory=list)
    # Iterations whose line was printed without the loss (a NaN loss Megatron left off the line).
    missing: dict[str, IntArray] = field(default_factory=dict)
    # Iterations whose line says every step of the interval was skipped (no loss expected).
    skipped: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    notes: list[str] = field(default_factory=list)
    #: The run's name when the input holds several (a W&B panel export of several runs).
    run: str | None = None
    #: Damage that stopped the reader early (a TensorBoard file cut short): also in ``notes``; a comparison
    #: whose other run has steps past what was read is a mismatch, never a shorter match.
    damaged: list[str] = field(default_factory=list)

    @property
    def restarts(self) -> int:
        return max(len(self.segments) - 1, 0)

    def to_dict(self) -> dict[str, Any]:
        """What was read, without the values: format, segments, steps per metric, missing/skipped steps."""
        return {
            "source": self.source,
            "format": self.format,
            "segments": [
                {"first": s.first_iteration, "last": s.last_iteration, "records": s.records, "line": s.line}
                for s in self.segments
            ],
            "restarts": self.restarts,
            "metrics": {name: len(series) for name, series in self.metrics.items()},
            "missing": {name: steps.tolist() for name, steps in self.missing.items()},
            "skipped": self.skipped.tolist(),
            "notes": self.notes,
        }

    def summary(self, metric: str) -> dict[str, Any]:
        """One metric at a glance: steps, first and last ``[iteration, value]``, finite min/max, NaN count."""
        series = self.metrics.get(metric)
        if series is None or len(series) == 0:
            return {"steps": 0}
        vals = series.values
        finite = vals[~(vals != vals)]
        return {
            "steps": len(series),
            "first": [int(series.iterations[0]), float(vals[0])],
            "last": [int(series.iterations[-1]), float(vals[-1])],
            "min": float(finite.min()) if finite.size else None,
            "max": float(finite.max()) if finite.size else None,
            "nan": int((vals != vals).sum()),
        }

    def reader_notes(self) -> list[str]:
        """The reader's notes plus a line for the steps printed without a loss and the skipped ones."""
        notes = list(self.notes)
        for metric, steps in self.missing.items():
            if steps.size:
                notes.append(
                    f"{self.source}: '{metric}' missing from the line at iteration(s) {steps[:10].tolist()} "
                    "(Megatron omits a NaN loss)"
                )
        if self.skipped.size:
            notes.append(f"{self.source}: all steps skipped at iteration(s) {self.skipped[:10].tolist()}")
        return notes


def resolve(iterations: list[int] | IntArray, values: list[float] | FloatArray) -> Series:
    """Sort by iteration and keep the *last* value seen for an iteration (log order -> series)."""
    it = np.asarray(iterations, dtype=np.int64)
    va = np.asarray(values, dtype=np.float64)
    if it.size == 0:
        return Series(it, va)
    if it.size > 1 and bool(np.all(it[1:] > it[:-1])):
        return Series(it, va)
    rev_it = it[::-1]
    uniq, first_in_reversed = np.unique(rev_it, return_index=True)
    return Series(uniq, va[::-1][first_in_reversed])


def find_segments(iterations: IntArray, lines: IntArray | None = None) -> list[Segment]:
    """Split a log-order iteration sequence where it goes back (``it[k] < it[k-1]``: a restart).

    A repeated iteration (several ranks printing the same line) does not start a segment.
    """
    if iterations.size == 0:
        return []
    starts = np.concatenate(([0], np.flatnonzero(iterations[1:] < iterations[:-1]) + 1, [iterations.size]))
    segments = []
    for lo, hi in zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True):
        part = iterations[lo:hi]
        segments.append(
            Segment(
                first_iteration=int(part[0]),
                last_iteration=int(part.max()),
                records=int(hi - lo),
                line=None if lines is None else int(lines[lo]),
            )
        )
    return segments
