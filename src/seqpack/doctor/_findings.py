"""Findings and the rule record: what a rule reports, and the fixed facts each rule carries."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from seqpack.doctor._context import Context

Severity = Literal["error", "warning", "info"]
ERROR: Severity = "error"
WARNING: Severity = "warning"
INFO: Severity = "info"
SEVERITY_ORDER: dict[str, int] = {ERROR: 0, WARNING: 1, INFO: 2}

#: The upstream behaviour a rule mirrors.
RAISES = "raises at validation"
#: Unknown YAML keys: skipped with a warning when Bridge merges the file, refused as command-line overrides
#: (``process_config_with_overrides``), never reaching ``validate()``.
AT_MERGE = "skipped at merge (YAML), refused as an override"
RUNTIME = "fails at runtime"
DOCUMENTED = "documented only"
SEQPACK_ONLY = "seqpack-only"
UPSTREAM_KINDS = (RAISES, AT_MERGE, RUNTIME, DOCUMENTED, SEQPACK_ONLY)


@dataclass
class Hit:
    """One occurrence of a rule: the values its message template needs and the concrete fix overrides."""

    params: dict[str, Any] = field(default_factory=dict)
    fix: list[str] = field(default_factory=list)
    fields: list[str] | None = None  # overrides the rule's field list when the hit is about other fields


CheckResult = Hit | Iterable[Hit] | None


@dataclass(frozen=True)
class Rule:
    """One rule of the table: ``check`` returns ``None`` (passes), a :class:`Hit` or several."""

    id: str
    severity: Severity
    fields: tuple[str, ...]
    upstream: str
    check: Callable[[Context], CheckResult]


@dataclass
class Finding:
    """A rule that fired, with its message and why in the chosen language (the JSON report's record)."""

    id: str
    severity: Severity
    fields: list[str]
    message: str
    why: str
    fix: list[str]
    upstream: str
    allowed: bool = False

    def to_json(self) -> dict[str, Any]:
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


def format_value(value: Any) -> str:
    """A value as it is written in an override (``true``, ``null``, ``4096``, ``bf16_mixed``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def override(key: str, value: Any) -> str:
    """``key=value`` in run_recipe's override syntax."""
    return f"{key}={format_value(value)}"
