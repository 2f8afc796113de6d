"""One shape for every finding bridgepack reports: doctor's rules and known defects, ``bridgepack env``'s
conclusions about the installed stack, and what blocks a correlation plan.

A finding names what is wrong (``message``), why it matters (``why``) and what to change (``fix``: a list,
e.g. overrides, empty when nothing mechanical fixes it); doctor's also carry the fields they read, the
upstream behaviour they mirror, whether ``--allow`` accepted them and, for a config read from a file, where
in it (:class:`Location`, ``sft.yaml:12:5`` as linters print it). Every JSON report lists findings as
:meth:`Finding.to_dict` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
ERROR: Severity = "error"
WARNING: Severity = "warning"
INFO: Severity = "info"
SEVERITIES: tuple[Severity, ...] = (ERROR, WARNING, INFO)
SEVERITY_ORDER: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class Location:
    """Where in a file a finding points: the file as the user named it, and the 1-based line and column of
    the key it is about (``None`` when it is about the file as a whole)."""

    file: str
    line: int | None = None
    col: int | None = None

    def __str__(self) -> str:
        """``file:line:col`` (``file:line``, ``file`` when less is known)."""
        return ":".join(str(part) for part in (self.file, self.line, self.col) if part is not None)

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "col": self.col}


@dataclass
class Finding:
    """What a check found, in the words of the chosen language."""

    id: str
    severity: Severity
    message: str
    why: str = ""
    fix: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    upstream: str = ""
    allowed: bool = False
    location: Location | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity,
            "fields": self.fields,
            "message": self.message,
            "why": self.why,
            "fix": self.fix,
            "upstream": self.upstream,
            "allowed": self.allowed,
            "location": None if self.location is None else self.location.to_dict(),
        }
