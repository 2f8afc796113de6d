"""The packing skill's rule reference, generated from the doctor's rule catalog (English and Chinese).

``references/rules.md`` and the rule part of ``references/zh.md`` carry a table of every rule id the
doctor knows, between two marker lines; the skill's description names the id range, and the guidance
table names the known-defect range. All of it comes from :func:`catalog`, so the skill cannot drift from
the tool: ``tests/skills/test_rules_reference.py`` holds the files to it, and after the catalog changes

    python tests/_support/skill_rules.py        # rewrites the tables and the ranges in place

brings them back. :func:`catalog` is the one place that reads bridgepack: ``bridgepack.doctor.CATALOG``, the
catalog ``bridgepack doctor --list-rules`` and ``--explain`` print.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

SKILL = Path(__file__).resolve().parents[2] / "skills" / "bridgepack-sequence-packing"
#: The page that carries the generated table, by language.
PAGES = {"en": "references/rules.md", "zh": "references/zh.md"}
BEGIN = "<!-- rule table: generated from bridgepack doctor's rule catalog (tests/_support/skill_rules.py) -->"
END = "<!-- end of the generated rule table -->"
HEADERS = {
    "en": ("id", "severity", "what the doctor reports"),
    "zh": ("编号", "级别", "doctor 报告的内容"),
}
RANGE = re.compile(r"\b(SP\d{3})-(SP\d{3})\b")


@dataclass(frozen=True)
class RuleRow:
    """One rule as the reference lists it."""

    id: str
    severity: str
    says: str
    known_defect: bool


def catalog(lang: str) -> list[RuleRow]:
    """Every id the doctor can report, from its one public catalog (``bridgepack.doctor.CATALOG``, the one
    ``bridgepack doctor --list-rules`` prints): a rule's title is its message with each value the finding
    fills
    in shown by its name (⟨mbs⟩); a known defect's title is followed by the releases it affects."""
    from bridgepack.doctor import CATALOG

    return [
        RuleRow(
            e.id,
            e.severity,
            e.title(lang) if e.kind == "rule" else f"{e.title(lang)} ({e.versions})",
            e.kind == "defect",
        )
        for e in CATALOG
    ]


def table(lang: str) -> str:
    """The generated block: markers, the table, one row per rule id."""
    head = HEADERS[lang]
    lines = [BEGIN, "", f"| {' | '.join(head)} |", "|---|---|---|"]
    lines += [f"| {r.id} | {r.severity} | {cell(r.says)} |" for r in catalog(lang)]
    return "\n".join([*lines, "", END])


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|")


def id_range(rows: list[RuleRow]) -> str:
    return f"{rows[0].id}-{rows[-1].id}"


def with_ranges(text: str) -> str:
    """Ranges that name a whole group brought up to date: the description's ``SP001-...`` (every rule) and
    ``SP2xx-...`` starting at the first known defect (every defect)."""
    rows = catalog("en")
    defects = [r for r in rows if r.known_defect]
    wholes = {rows[0].id: id_range(rows), defects[0].id: id_range(defects)}
    return RANGE.sub(lambda m: wholes.get(m.group(1), m.group(0)), text)


def rendered(text: str, lang: str | None) -> str:
    """A page with its generated table (if it carries one) and its group ranges as the catalog has them."""
    if lang is not None:
        before, rest = text.split(BEGIN, 1)
        _, after = rest.split(END, 1)
        text = before + table(lang) + after
    return with_ranges(text)


def targets() -> dict[Path, str | None]:
    """Each file the generator writes, with the language of the table it carries (None: ranges only)."""
    return {SKILL / "SKILL.md": None, **{SKILL / page: lang for lang, page in PAGES.items()}}


def main() -> int:
    for path, lang in targets().items():
        text = path.read_text(encoding="utf-8")
        new = rendered(text, lang)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {path.relative_to(SKILL.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
