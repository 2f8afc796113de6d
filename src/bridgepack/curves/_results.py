"""What ``bridgepack curves compare|show|export`` report: result objects, ``to_dict()`` the JSON document.

Every document of the three commands carries :data:`SCHEMA_VERSION` as its first key ``schema_version``
(:class:`bridgepack.results.JsonResult`); a change of shape bumps it here, once for the three.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bridgepack.curves._compare import Comparison, Profile
from bridgepack.curves._series import Curves

#: Version of the JSON documents of ``bridgepack curves compare``, ``show`` and ``export``.
SCHEMA_VERSION = 1


def run_notes(runs: list[Curves]) -> list[str]:
    """Every run's :meth:`~bridgepack.curves.Curves.reader_notes`, in run order."""
    return [note for run in runs for note in run.reader_notes()]


@dataclass(frozen=True)
class CompareReport:
    """Candidates compared with the reference ``runs[0]``: a :class:`Comparison` per candidate and metric."""

    SCHEMA_VERSION: ClassVar[int] = SCHEMA_VERSION

    profile: Profile
    steps: tuple[int | None, int | None]
    runs: list[Curves]
    comparisons: list[Comparison]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    @property
    def notes(self) -> list[str]:
        """What the readers noticed, then what each comparison noticed."""
        return run_notes(self.runs) + [note for comp in self.comparisons for note in comp.notes]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.SCHEMA_VERSION,
            "command": "curves compare",
            "passed": self.passed,
            "profile": {
                "name": self.profile.name,
                "ulps": self.profile.ulps,
                "deterministic": self.profile.deterministic,
                "require_all_steps": self.profile.require_all_steps,
            },
            "steps": {"start": self.steps[0], "stop": self.steps[1]},
            "runs": [run.to_dict() for run in self.runs],
            "comparisons": [c.summary() for c in self.comparisons],
            "notes": self.notes,
        }


@dataclass(frozen=True)
class ShowReport:
    """What each run holds, and a summary of one metric (canonical name) per run."""

    SCHEMA_VERSION: ClassVar[int] = SCHEMA_VERSION

    metric: str
    runs: list[Curves]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.SCHEMA_VERSION,
            "command": "curves show",
            "metric": self.metric,
            "runs": [{**run.to_dict(), "summary": run.summary(self.metric)} for run in self.runs],
        }


@dataclass(frozen=True)
class ExportReport:
    """A golden-value file written from a run, with the notes of :func:`~bridgepack.curves.write_golden`."""

    SCHEMA_VERSION: ClassVar[int] = SCHEMA_VERSION

    source: str
    golden: str
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.SCHEMA_VERSION,
            "source": self.source,
            "golden": self.golden,
            "notes": self.notes,
        }
