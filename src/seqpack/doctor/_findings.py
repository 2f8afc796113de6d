"""The rule record and what a rule returns (:class:`Hit`); the finding it becomes is
:class:`seqpack.findings.Finding`, re-exported here with the severities."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from seqpack._bridge_keys import override as bridge_override
from seqpack.findings import ERROR, INFO, SEVERITY_ORDER, WARNING, Finding, Severity  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from seqpack.doctor._context import Context


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


def format_value(value: Any) -> str:
    """A value as it is written in an override (``true``, ``null``, ``4096``, ``bf16_mixed``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def override(key: str, value: Any) -> str:
    """``key=value`` in run_recipe's override syntax (Hydra's quoting:
    :func:`seqpack._bridge_keys.override`)."""
    return bridge_override(key, value)
