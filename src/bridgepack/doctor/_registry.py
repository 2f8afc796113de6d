"""Registering a rule: :func:`rule` checks everything a rule says about itself when its module is imported.

A rule is defined in one place -- its check, severity, fields, upstream behaviour, id group, fix keys, an
example and its messages in every language -- and registration refuses, with the rule's id, what would
otherwise surface only when the rule fires (or never)::

    a message missing, empty or not one line, a language missing or unknown    -> RuleDefinitionError
    a field or fix key that is not a Bridge config key (nor a fact the doctor knows)
    a template parameter the check never returns (read from the check's own ``Hit({...})`` literals)
    two languages' templates naming different parameters
    an id outside its group's range, or taken twice

The groups (:data:`GROUPS`) are id ranges with a job each; the known-defect atlas is ``SP200-SP299``.
"""

from __future__ import annotations

import ast
import inspect
import re
import string
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bridgepack.doctor._config_facts import ConfigFacts
from bridgepack.doctor._fields import field_problem
from bridgepack.doctor._findings import LANGS, CheckResult, Example, Rule, Severity
from bridgepack.doctor._load import parse_override
from bridgepack.errors import UsageError
from bridgepack.findings import SEVERITIES


class RuleDefinitionError(ValueError):
    """A rule that says something wrong about itself (raised at import, naming the rule)."""


@dataclass(frozen=True)
class Group:
    """A range of ids with one job: a new rule takes the next free id of its group."""

    name: str
    first: int
    last: int
    title: str

    def ids(self) -> str:
        return f"SP{self.first:03d}-SP{self.last:03d}"


GROUPS: tuple[Group, ...] = (
    Group("packing", 1, 10, "packing switches, fixed-width rows and CUDA graphs"),
    Group("parallel", 11, 25, "context parallelism, lengths, batches and the pad multiple"),
    Group("families", 26, 31, "model families, multi-token prediction, Energon, PEFT"),
    Group("data", 32, 99, "the packed data on disk against the config"),
    Group("input", 100, 199, "the input itself: unknown, mistyped, contradictory or mixed-era fields"),
    Group("atlas", 200, 299, "known upstream defects on the given releases"),
)
GROUP_BY_NAME: Mapping[str, Group] = {g.name: g for g in GROUPS}

#: Every registered rule, in registration order (``_rules`` imports the rule modules and sorts them).
REGISTERED: list[Rule] = []

_ID = re.compile(r"SP(\d{3})")


def rule(
    rule_id: str,
    severity: Severity,
    fields: tuple[str, ...],
    upstream: str,
    *,
    group: str,
    fix: tuple[str, ...] = (),
    example: Example | None = None,
    **text: tuple[str, str],
) -> Callable[[Callable[[ConfigFacts], CheckResult]], Callable[[ConfigFacts], CheckResult]]:
    """Register the decorated check as rule ``rule_id``; ``text`` is ``en=(message, why), zh=(...)``."""

    def register(check: Callable[[ConfigFacts], CheckResult]) -> Callable[[ConfigFacts], CheckResult]:
        made = make_rule(
            rule_id, severity, fields, upstream, check, group=group, fix=fix, example=example, text=text
        )
        if any(r.id == rule_id for r in REGISTERED):
            raise RuleDefinitionError(f"{rule_id}: the id is taken twice")
        REGISTERED.append(made)
        return check

    return register


def make_rule(
    rule_id: str,
    severity: Severity,
    fields: tuple[str, ...],
    upstream: str,
    check: Callable[[ConfigFacts], CheckResult],
    *,
    group: str,
    fix: tuple[str, ...] = (),
    example: Example | None = None,
    text: Mapping[str, tuple[str, str]],
) -> Rule:
    """A :class:`Rule`, every statement it makes about itself checked (module docstring)."""

    def fail(problem: str) -> RuleDefinitionError:
        return RuleDefinitionError(f"{rule_id} ({check.__name__}): {problem}")

    _check_id(rule_id, group, fail)
    if severity not in SEVERITIES:
        raise fail(f"severity {severity!r} is not one of {', '.join(SEVERITIES)}")
    for name in fields:
        problem = field_problem(name)
        if problem is not None:
            raise fail(f"field {name!r}: {problem}")
    for key in fix:
        problem = field_problem(key, facts=False)
        if problem is not None:
            raise fail(f"fix key {key!r}: {problem}")
    _check_text(text, check, fail)
    if example is not None:
        for item in example.overrides:
            try:
                parse_override(item)
            except UsageError as exc:
                raise fail(f"example: {exc}") from None
    return Rule(rule_id, severity, fields, upstream, check, group, dict(text), fix, example)


def _check_id(rule_id: str, group: str, fail: Callable[[str], RuleDefinitionError]) -> None:
    match = _ID.fullmatch(rule_id)
    if match is None:
        raise fail("an id is SP and three digits")
    found = GROUP_BY_NAME.get(group)
    if found is None:
        raise fail(f"group {group!r} is not one of {', '.join(GROUP_BY_NAME)}")
    if not found.first <= int(match.group(1)) <= found.last:
        raise fail(f"the id is outside its group {group!r} ({found.ids()})")


def _check_text(
    text: Mapping[str, tuple[str, str]],
    check: Callable[[ConfigFacts], CheckResult],
    fail: Callable[[str], RuleDefinitionError],
) -> None:
    missing = [lang for lang in LANGS if lang not in text]
    unknown = [lang for lang in text if lang not in LANGS]
    if missing or unknown:
        raise fail(f"messages in {', '.join(LANGS)} are needed (missing: {missing}, unknown: {unknown})")
    returned = returned_params(check)
    names: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
    for lang in LANGS:
        pair = text[lang]
        if (
            not isinstance(pair, tuple)
            or len(pair) != 2
            or not all(isinstance(s, str) and s.strip() for s in pair)
        ):
            raise fail(f"{lang}: expected (message, why), two non-empty strings")
        message, why = pair
        if "\n" in message:
            raise fail(f"{lang}: the message is one line")
        names[lang] = (_placeholders(message, lang, fail), _placeholders(why, lang, fail))
        used = names[lang][0] | names[lang][1]
        if returned is not None and not used <= returned:
            raise fail(f"{lang}: the template names {sorted(used - returned)}, which the check never returns")
    if len({pair for pair in names.values()}) > 1:
        raise fail(f"the languages' templates name different parameters: {names}")


def _placeholders(template: str, lang: str, fail: Callable[[str], RuleDefinitionError]) -> frozenset[str]:
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise fail(f"{lang}: {exc} in {template!r}") from None
    return frozenset(name for _, name, _, _ in parsed if name)


def returned_params(check: Callable[..., object]) -> frozenset[str] | None:
    """The parameter names of every ``Hit(...)`` the check builds, read from its source: ``None`` when that
    cannot be known (no source, a ``Hit`` built elsewhere, parameters that are not a literal dict)."""
    try:
        source = textwrap.dedent(inspect.getsource(check))
    except (OSError, TypeError):
        return None
    keys: set[str] = set()
    built = False
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Hit"):
            continue
        built = True
        params = (
            node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "params"), None)
        )
        if params is None:
            continue
        if not isinstance(params, ast.Dict):
            return None
        names = [k.value for k in params.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        if len(names) != len(params.keys):  # a computed key or ``**spread``
            return None
        keys.update(names)
    return frozenset(keys) if built else None
