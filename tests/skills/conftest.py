"""Fixtures for the agent skills under ``skills/``: one run of every page per session (a fresh copy of the
skill folder per page, the two skills in parallel; the commands that write run a second time). The command
test checks the results; the Chinese page is held against the English run."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import pytest

from _support import fenced_blocks
from _support.skill_pages import (
    SKILL_NAMES,
    SKILLS_DIR,
    ZH_PAGE,
    PageRun,
    grader,
    page_commands,
    pages,
    run_twice,
)


@pytest.fixture(scope="session")
def skill_page_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, str], PageRun]]:
    """Every page except the Chinese one, run as written, then its writing commands run once more (the
    Chinese page runs the same commands). ``mktemp`` makes ``$WORK`` inside the run's own temp folder."""
    jobs = [(s, p) for s in SKILL_NAMES for p in pages(s) if p != ZH_PAGE and page_commands(s, p)]

    def run(job: tuple[str, str]) -> PageRun:
        skill, page = job
        root = tmp_path_factory.mktemp(f"{skill}-{Path(page).stem}")
        workdir = root / skill
        shutil.copytree(SKILLS_DIR / skill, workdir, ignore=shutil.ignore_patterns("__pycache__"))
        return run_twice(skill, page, workdir, fenced_blocks.default_env({"TMPDIR": str(root)}))

    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {(r.skill, r.page): r for r in pool.map(run, jobs)}


@pytest.fixture(scope="session")
def graders() -> dict[str, ModuleType]:
    """Each skill's ``evals/grade.py``, loaded once."""
    return {skill: grader(skill) for skill in SKILL_NAMES}
