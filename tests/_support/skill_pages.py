"""The agent skills under ``skills/``: where they are, their pages and front matter (tests/skills/)."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

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


def evals(skill: str) -> dict[str, Any]:
    """A skill's ``evals/evals.json``."""
    return json.loads((SKILLS_DIR / skill / "evals" / "evals.json").read_text(encoding="utf-8"))


def graded_checks(skill: str, kind: str) -> list[tuple[str, dict[str, Any]]]:
    """(task id, check) of every check of one kind in a skill's graded tasks."""
    return [
        (task["id"], check)
        for task in evals(skill)["evals"]
        if "grade" in task
        for check in task["grade"]["checks"]
        if check["kind"] == kind
    ]


def grader(skill: str) -> ModuleType:
    """A skill's ``evals/grade.py`` as a module (it imports the shared ``grading.py`` beside it)."""
    path = SKILLS_DIR / skill / "evals" / "grade.py"
    spec = importlib.util.spec_from_file_location(f"grade_{skill.replace('-', '_')}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module
