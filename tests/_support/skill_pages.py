"""The agent skills under ``skills/``: where they are, their pages and front matter (tests/skills/)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from _support import fenced_blocks

REPO_ROOT = Path(__file__).resolve().parents[2]
SKILLS_DIR = REPO_ROOT / "skills"
SKILL_NAMES = sorted(p.name for p in SKILLS_DIR.iterdir() if (p / "SKILL.md").is_file())
ZH_PAGE = "references/zh.md"


def pages(skill: str) -> list[str]:
    """The Markdown pages of a skill whose commands run: SKILL.md and every reference, relative paths."""
    root = SKILLS_DIR / skill
    refs = sorted(str(p.relative_to(root)) for p in (root / "references").glob("*.md"))
    return ["SKILL.md", *refs]


def front_matter(skill: str) -> tuple[dict, str]:
    """The YAML front matter of a SKILL.md and its body."""
    text = (SKILLS_DIR / skill / "SKILL.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{skill}/SKILL.md: no front matter"
    head, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(head), body


def page_commands(skill: str, page: str) -> list[fenced_blocks.Command]:
    return fenced_blocks.commands((SKILLS_DIR / skill / page).read_text(encoding="utf-8"), f"{skill}/{page}")


@dataclass
class PageRun:
    """One page run in its own copy of the skill folder."""

    skill: str
    page: str
    workdir: Path
    results: list[fenced_blocks.Result]
