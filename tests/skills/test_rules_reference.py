"""The skills' rule ids come from the doctor's rule catalog: the rule table of ``references/rules.md`` and of
``references/zh.md`` is generated from it (tests/_support/skill_rules.py), the description's id range is the
catalog's, the guidance table gives every id exactly one row, and every id or range any page names exists."""

from __future__ import annotations

import re

import pytest

from _support import skill_rules
from _support.skill_pages import SKILL_NAMES, SKILLS_DIR, front_matter, pages

REGENERATE = "run `python tests/_support/skill_rules.py` to regenerate it from the catalog"
ID = re.compile(r"\bSP\d{3}\b")


@pytest.fixture(scope="module")
def rule_ids() -> list[str]:
    return [r.id for r in skill_rules.catalog("en")]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_rule_table_is_the_catalog(lang: str, rule_ids: list[str]) -> None:
    path = skill_rules.SKILL / skill_rules.PAGES[lang]
    text = path.read_text(encoding="utf-8")
    assert text == skill_rules.rendered(text, lang), f"{path.name} is not the catalog's: {REGENERATE}"
    block = text.split(skill_rules.BEGIN, 1)[1].split(skill_rules.END, 1)[0]
    listed = [line.split("|")[1].strip() for line in block.splitlines() if ID.match(line.strip("| "))]
    assert listed == rule_ids
    texts = {r.id: r.says for r in skill_rules.catalog(lang)}
    assert texts["SP005"].startswith(
        "micro_batch_size is ⟨mbs⟩" if lang == "en" else "离线打包时 micro_batch_size 为 ⟨mbs⟩"
    )


def test_description_names_the_catalogs_range(rule_ids: list[str]) -> None:
    path = skill_rules.SKILL / "SKILL.md"
    text = path.read_text(encoding="utf-8")
    assert text == skill_rules.rendered(text, None), (
        f"SKILL.md's id ranges are not the catalog's: {REGENERATE}"
    )
    meta, _ = front_matter(skill_rules.SKILL.name)
    assert f"rule ids {rule_ids[0]}-{rule_ids[-1]}" in meta["description"]


def covered(cell: str, rule_ids: list[str]) -> list[str]:
    """The catalog ids one guidance row names: ``SP001``, ``SP012, SP013``, ``SP040-SP044``."""
    out: list[str] = []
    for part in cell.replace(" ", "").split(","):
        first, _, last = part.partition("-")
        out += [i for i in rule_ids if first <= i <= (last or first)]
    return out


def test_guidance_gives_every_rule_one_row(rule_ids: list[str]) -> None:
    text = (skill_rules.SKILL / "references" / "rules.md").read_text(encoding="utf-8")
    guidance = text.split("| id | what it means | what to do next |", 1)[1].split("\n\n", 1)[0]
    cells = [line.split("|")[1].strip() for line in guidance.splitlines()[2:] if line.startswith("| SP")]
    named = [i for cell in cells for i in covered(cell, rule_ids)]
    assert sorted(named) == rule_ids, (
        f"ids with no guidance row: {sorted(set(rule_ids) - set(named))}; "
        f"in two rows: {sorted({i for i in named if named.count(i) > 1})}"
    )


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_every_rule_id_a_page_names_exists(skill: str, rule_ids: list[str]) -> None:
    known = set(rule_ids)
    for page in pages(skill):
        text = (SKILLS_DIR / skill / page).read_text(encoding="utf-8")
        for first, last in skill_rules.RANGE.findall(text):
            assert {first, last} <= known and first < last, (
                f"{skill}/{page}: {first}-{last} is not a range of ids"
            )
        unknown = sorted(set(ID.findall(text)) - known)
        assert not unknown, f"{skill}/{page} names rule ids the doctor does not have: {unknown}"
