"""One shape for every finding seqpack reports: doctor's rules and known defects, ``seqpack env``'s
conclusions about the installed stack, and what blocks a correlation plan.

A finding names what is wrong (``message``), why it matters (``why``) and what to change (``fix``: a list,
e.g. overrides, empty when nothing mechanical fixes it); doctor's also carry the fields they read, the
upstream behaviour they mirror and whether ``--allow`` accepted them. Every JSON report lists findings as
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
        }
