"""What a demo run did: one :class:`StepResult` per step, the artefacts the report draws, the summary."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from bridgepack.data.pipeline import PackResult
from bridgepack.demo._paths import DemoPaths
from bridgepack.demo._sizes import DemoSizes
from bridgepack.demo._steps import CurvesOut, DoctorOut, InspectOut, TokenizerOut
from bridgepack.train import DataMode, TrainResult


@dataclass(frozen=True)
class StepResult:
    """One step: whether it did what it should, in how long, a one-line account and the CLI equivalent."""

    name: str
    ok: bool
    seconds: float
    summary: str
    command: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "seconds": round(self.seconds, 3),
            "summary": self.summary,
            "command": self.command,
            "data": self.data,
        }


@dataclass
class Artefacts:
    """Everything the steps produced, filled in as they run (``None``: the step did not run)."""

    tokenizer: TokenizerOut | None = None
    pack: PackResult | None = None
    inspect: InspectOut | None = None
    doctor: DoctorOut | None = None
    train: dict[DataMode, TrainResult] = field(default_factory=dict)
    curves: CurvesOut | None = None


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 and math.isfinite(a) and math.isfinite(b) else None


@dataclass(frozen=True)
class Speedup:
    """Packed vs padded on the same samples and steps.

    ``real_tokens_per_s``: packed real tokens/s over padded real tokens/s (the measured speed-up);
    ``compute_ratio``: token slots the padded run computed per slot of the packed run (what it would be
    with a per-slot cost independent of the layout).
    """

    real_tokens_per_s: float | None
    compute_ratio: float | None
    padding_fraction_packed: float
    padding_fraction_padded: float

    @classmethod
    def of(cls, packed: TrainResult, padded: TrainResult) -> Speedup:
        return cls(
            real_tokens_per_s=_ratio(packed.real_tokens_per_s, padded.real_tokens_per_s),
            compute_ratio=_ratio(padded.positions, packed.positions),
            padding_fraction_packed=packed.padding_fraction,
            padding_fraction_padded=padded.padding_fraction,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "real_tokens_per_s": self.real_tokens_per_s,
            "compute_ratio": self.compute_ratio,
            "padding_fraction": {
                "packed": self.padding_fraction_packed,
                "padded": self.padding_fraction_padded,
            },
        }


@dataclass
class DemoResult:
    """The whole run; ``passed`` when every step did what it should."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    paths: DemoPaths
    sizes: DemoSizes
    threads: int
    steps: list[StepResult] = field(default_factory=list)
    artefacts: Artefacts = field(default_factory=Artefacts)
    interrupted: bool = False
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.interrupted and bool(self.steps) and all(s.ok for s in self.steps)

    @property
    def speedup(self) -> Speedup | None:
        runs = self.artefacts.train
        if not self.interrupted and DataMode.packed in runs and DataMode.padded in runs:
            return Speedup.of(runs[DataMode.packed], runs[DataMode.padded])
        return None

    def to_dict(self) -> dict[str, Any]:
        """``summary.json`` and ``bridgepack demo --format json``'s document."""
        speedup = self.speedup
        return {
            "schema_version": self.SCHEMA_VERSION,
            "command": "demo",
            "passed": self.passed,
            "interrupted": self.interrupted,
            "out_dir": os.fspath(self.paths.root),
            "report": os.fspath(self.paths.report) if self.paths.report.exists() else None,
            "sizes": self.sizes.__dict__,
            "threads": self.threads,
            "seconds": round(self.seconds, 3),
            "speedup": speedup.to_dict() if speedup is not None else None,
            "steps": [s.to_dict() for s in self.steps],
        }


def relative(path: Path, root: Path) -> str:
    """``path`` relative to the output directory when it lies inside it (report links stay valid)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return os.fspath(path)
