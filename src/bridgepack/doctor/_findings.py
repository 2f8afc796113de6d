"""The rule record, what a rule returns (:class:`Hit`) and the words rules share; the finding a hit becomes is
:class:`bridgepack.findings.Finding`, re-exported here with the severities."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bridgepack._bridge_keys import override as bridge_override
from bridgepack.findings import ERROR, INFO, SEVERITY_ORDER, WARNING, Finding, Severity  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from bridgepack.doctor._config_facts import ConfigFacts

#: The languages every rule and every atlas entry speaks (``--lang``).
LANGS: tuple[str, ...] = ("en", "zh")

#: The upstream behaviour a rule mirrors.
RAISES = "raises at validation"
#: Unknown YAML keys: skipped with a warning when Bridge merges the file, refused as command-line overrides
#: (``process_config_with_overrides``), never reaching ``validate()``.
AT_MERGE = "skipped at merge (YAML), refused as an override"
RUNTIME = "fails at runtime"
DOCUMENTED = "documented only"
BRIDGEPACK_ONLY = "bridgepack-only"


@dataclass
class Hit:
    """One occurrence of a rule: the values its message template needs and the concrete fix overrides.

    ``params["suggestion"]``, when set, adds the language's "did you mean" tail to the message. The first
    key of the fix, else of the hit's fields (or the rule's), that a YAML file wrote is where the finding is
    located.
    """

    params: dict[str, Any] = field(default_factory=dict)
    fix: list[str] = field(default_factory=list)
    fields: list[str] | None = None  # overrides the rule's field list when the hit is about other fields


CheckResult = Hit | Iterable[Hit] | None


@dataclass(frozen=True)
class Example:
    """A config that makes a rule fire, as ``bridgepack doctor`` arguments: overrides and the context options.

    ``bridgepack doctor --explain`` prints it as a command, and the test suite runs it (the rule fires; its
    fix applied, the rule is quiet and no new error appears).
    """

    overrides: tuple[str, ...]
    world_size: int | None = None
    dp: int | None = None
    model_family: str | None = None
    recipe: str | None = None
    kernel_chunk: int | None = None
    dataset_kind: str | None = None

    #: Context options in the order ``command`` writes them (the CLI flag is the name in kebab case).
    _OPTIONS = ("world_size", "dp", "model_family", "recipe", "kernel_chunk", "dataset_kind")

    def options(self) -> dict[str, Any]:
        """The context options that are set, by their library name."""
        return {name: getattr(self, name) for name in self._OPTIONS if getattr(self, name) is not None}

    def command(self) -> str:
        """``bridgepack doctor ...`` as a user types it (shell-quoted)."""
        words = ["bridgepack", "doctor", *self.overrides]
        for name, value in self.options().items():
            words += ["--" + name.replace("_", "-"), str(value)]
        return shlex.join(words)


@dataclass(frozen=True)
class Rule:
    """One rule of the table: ``check`` returns ``None`` (passes), a :class:`Hit` or several.

    It carries everything said about it: ``text[lang] = (message, why)`` in every language of
    :data:`LANGS` (``message`` a one-line ``str.format`` template of the parameters the check returns),
    ``group`` (the id range it belongs to), ``fix`` (the config keys its fix may set) and an ``example``
    config that makes it fire (``None`` when only files can: packed data, YAML documents).
    """

    id: str
    severity: Severity
    fields: tuple[str, ...]
    upstream: str
    check: Callable[[ConfigFacts], CheckResult]
    group: str
    text: Mapping[str, tuple[str, str]]
    fix: tuple[str, ...] = ()
    example: Example | None = None

    def message(self, lang: str) -> str:
        return self.text[lang][0]

    def why(self, lang: str) -> str:
        return self.text[lang][1]


def format_value(value: Any) -> str:
    """A value as it is written in an override (``true``, ``null``, ``4096``, ``bf16_mixed``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def override(key: str, value: Any) -> str:
    """``key=value`` in run_recipe's override syntax (Hydra's quoting:
    :func:`bridgepack._bridge_keys.override`)."""
    return bridge_override(key, value)
