"""The one rule catalog: every rule and every known-defect atlas entry, as one record each.

``bridgepack doctor --list-rules`` and ``--explain ID``, the rule table of ``docs/doctor.md``
(:func:`rules_markdown`) and the skills' rule reference all read :data:`CATALOG`, built from the rules
(``_rules``: each carries its messages) and the atlas (``_defects``) when the module is imported::

    SP005  rule    error    packing   micro_batch_size is ⟨mbs⟩ with offline packing; ...
    SP201  defect  error    atlas     middle pipeline stages (PP > 2) get no cu_seqlens, ...

A rule's title is its message template with each parameter shown as ``⟨name⟩``; an atlas entry's
severity is the most its finding can be (an error for silent wrong training on a release known to be
affected; a warning otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from bridgepack.doctor._defect_model import EFFECTS, Defect
from bridgepack.doctor._defects import DEFECTS
from bridgepack.doctor._findings import ERROR, LANGS, WARNING, Rule, Severity
from bridgepack.doctor._registry import GROUP_BY_NAME
from bridgepack.doctor._rules import RULES
from bridgepack.errors import UsageError, param

#: What the rules are checked against (their defaults, names and checks: tests/doctor/test_bridge_defaults).
RULES_CHECKED_AGAINST = "megatron-bridge 0.6.2 (<= 0.5 names read too)"
#: The group of every atlas entry.
ATLAS_GROUP = "atlas"
#: Short names a defect's source uses for another repository (``"Megatron-LM #2566"``).
_REPOS = {
    "Megatron-LM": "NVIDIA/Megatron-LM",
    "Megatron-Bridge": "NVIDIA-NeMo/Megatron-Bridge",
    "Bridge": "NVIDIA-NeMo/Megatron-Bridge",
    "TransformerEngine": "NVIDIA/TransformerEngine",
    "TE": "NVIDIA/TransformerEngine",
}
_REPO = re.compile(r"^([\w.-]+/[\w.-]+)")
_CITED = re.compile(r"(?:\b(" + "|".join(_REPOS) + r")\s+)?(PR\s+)?#(\d+)")


@dataclass(frozen=True)
class CatalogEntry:
    """One rule or atlas entry: what it says, why, what fixes it, where it comes from, which releases."""

    id: str
    kind: Literal["rule", "defect"]
    severity: Severity
    group: str
    #: ``lang -> (title, why)``: the title is one line.
    text: Mapping[str, tuple[str, str]]
    #: Rules: the config keys their fix sets; atlas entries: the workaround overrides and the upgrade.
    fix: tuple[str, ...]
    fields: tuple[str, ...]
    #: Rules: the upstream behaviour they mirror; atlas entries: the repository, issue and fix PR.
    upstream: str
    links: tuple[str, ...]
    versions: str
    #: Rules: a ``bridgepack doctor`` command that makes the rule fire (``None``: it needs files).
    example: str | None = None
    #: Atlas entries: what the defect does to a run.
    effect: str | None = None

    def title(self, lang: str = "en") -> str:
        return self.text[lang][0]

    def why(self, lang: str = "en") -> str:
        return self.text[lang][1]

    def group_title(self) -> str:
        """``SP001-SP010: packing switches, ...``: the id range of the entry's group and its job."""
        group = GROUP_BY_NAME[self.group]
        return f"{group.ids()}: {group.title}"

    def to_dict(self, lang: str = "en") -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "severity": self.severity,
            "group": self.group,
            "title": self.title(lang),
            "why": self.why(lang),
            "fix": list(self.fix),
            "fields": list(self.fields),
            "upstream": self.upstream,
            "links": list(self.links),
            "versions": self.versions,
            "example": self.example,
            "effect": None if self.effect is None else EFFECTS[self.effect][lang],
        }


def shown_template(template: str) -> str:
    """A message template as a title: ``"seq_length {seq} ..."`` -> ``"seq_length ⟨seq⟩ ..."``. The angle
    brackets are not ``<>``: a Markdown page (the docs' and the skills' rule tables) reads ``<seq>`` as an
    HTML tag and shows nothing."""
    return re.sub(r"(?<!\{)\{(\w+)\}(?!\})", r"⟨\1⟩", template).replace("{{", "{").replace("}}", "}")


def rule_entry(rule: Rule) -> CatalogEntry:
    return CatalogEntry(
        id=rule.id,
        kind="rule",
        severity=rule.severity,
        group=rule.group,
        text={lang: (shown_template(rule.message(lang)), rule.why(lang)) for lang in LANGS},
        fix=rule.fix,
        fields=rule.fields,
        upstream=rule.upstream,
        links=(),
        versions=RULES_CHECKED_AGAINST,
        example=None if rule.example is None else rule.example.command(),
    )


def defect_links(source: str) -> tuple[str, ...]:
    """GitHub links of every issue and PR a defect's source cites (``owner/repo#N``, ``PR #N``, ``TE #N``)."""
    home = _REPO.match(source)
    links = []
    for short, pr, number in _CITED.findall(source):
        repo = _REPOS[short] if short else home.group(1) if home else None
        if repo is not None:
            links.append(f"https://github.com/{repo}/{'pull' if pr else 'issues'}/{number}")
    return tuple(dict.fromkeys(links))


def defect_entry(defect: Defect) -> CatalogEntry:
    versions = f"{defect.component} {defect.affected.describe()}"
    versions += "".join(f"; with {component} {a.describe()}" for component, a in defect.also)
    upgrade = (f"upgrade {defect.component} to {defect.affected.fixed}",) if defect.affected.fixed else ()
    return CatalogEntry(
        id=defect.id,
        kind="defect",
        severity=ERROR if defect.effect == "silent" else WARNING,
        group=ATLAS_GROUP,
        text={lang: defect.text[lang] for lang in LANGS},
        fix=(*defect.workaround, *upgrade),
        fields=defect.fields,
        upstream=defect.source,
        links=defect_links(defect.source),
        versions=versions,
        effect=defect.effect,
    )


#: Every rule and atlas entry, in id order.
CATALOG: tuple[CatalogEntry, ...] = tuple(
    sorted([*map(rule_entry, RULES), *map(defect_entry, DEFECTS)], key=lambda e: e.id)
)
_BY_ID: Mapping[str, CatalogEntry] = {e.id: e for e in CATALOG}


def known_ids() -> str:
    """The id ranges, for messages: ``SP001..SP107, SP201..SP243``."""
    rules = [e.id for e in CATALOG if e.kind == "rule"]
    defects = [e.id for e in CATALOG if e.kind == "defect"]
    return f"{rules[0]}..{rules[-1]}, {defects[0]}..{defects[-1]}"


def catalog_entry(rule_id: str) -> CatalogEntry:
    """The entry of ``rule_id`` (``sp005`` is ``SP005``); an unknown id is a one-line usage error."""
    found = _BY_ID.get(rule_id.strip().upper())
    if found is None:
        raise UsageError(f"{param('rule_id')} {rule_id!r}: no such rule (ids: {known_ids()})")
    return found


@dataclass
class RuleCatalog:
    """Catalog entries in one language: ``bridgepack doctor --list-rules`` (every entry) and ``--explain ID``
    (one) as one JSON document."""

    SCHEMA_VERSION: ClassVar[int] = 1

    entries: Sequence[CatalogEntry]
    lang: str = "en"

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.SCHEMA_VERSION,
            "lang": self.lang,
            "rules": [e.to_dict(self.lang) for e in self.entries],
        }


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def rules_markdown() -> str:
    """The rule table ``docs/doctor.md`` carries (generated; a test keeps the two identical)."""
    lines = ["| id | severity | upstream | finding | fix sets |", "|---|---|---|---|---|"]
    for e in CATALOG:
        if e.kind == "rule":
            fix = ", ".join(f"`{k}`" for k in e.fix) or "-"
            lines.append(f"| {e.id} | {e.severity} | {e.upstream} | {_cell(e.title())} | {fix} |")
    return "\n".join(lines) + "\n"
