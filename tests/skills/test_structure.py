"""Each skill is a valid Agent Skill with what reviewers look for: the reference validator passes, the
SkillEvaluator sections and metadata are there (author, version = bridgepack's, the validated stack, tags as
one comma-separated string), install, permission boundaries, rollback, changelog, what it does not cover,
Chinese triggers and instructions, references one level deep, and nothing destructive in a command."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bridgepack
from _support.skill_pages import REPO_ROOT, SKILL_NAMES, SKILLS_DIR, front_matter, page_commands, pages

CJK = re.compile(r"[\u4e00-\u9fff]")
AUTHOR = re.compile(r"^[^<>]+ <[^@<>\s]+@[^@<>\s]+\.[^@<>\s]+>$")
STACK_KEYS = (
    "validated-bridgepack",
    "validated-megatron-bridge",
    "validated-megatron-core",
    "validated-transformer-engine",
)
SECTIONS = (
    "## Install",
    "## Permission boundaries",
    "## Instructions",
    "## Examples",
    "## Rollback",
    "## Not covered",
    "## Changelog",
)


def agentskills() -> str:
    """The reference validator (``skills-ref``, Python >= 3.11): required in CI, skipped with the reason
    elsewhere."""
    found = shutil.which("agentskills", path=str(Path(sys.executable).parent)) or shutil.which("agentskills")
    if found:
        return found
    reason = "agentskills (pip install 'skills-ref==0.1.1', Python >= 3.11) is not installed"
    if os.environ.get("CI") and sys.version_info >= (3, 11):
        pytest.fail(reason)
    pytest.skip(reason)


def test_there_are_two_skills() -> None:
    assert SKILL_NAMES == ["bridgepack-mlm-bridge-training", "bridgepack-sequence-packing"]


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_reference_validator_accepts_it(skill: str) -> None:
    proc = subprocess.run(
        [agentskills(), "validate", str(SKILLS_DIR / skill)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_front_matter(skill: str) -> None:
    meta, _ = front_matter(skill)
    assert meta["name"] == skill
    assert len(meta["description"]) <= 1024
    assert CJK.search(meta["description"]), "no Chinese trigger phrases in the description"
    assert meta["license"] == "Apache-2.0"
    assert "Bash(bridgepack:*)" in meta["allowed-tools"].split()
    metadata = meta["metadata"]
    assert all(isinstance(v, str) for v in metadata.values()), f"metadata values must be strings: {metadata}"
    assert AUTHOR.match(metadata["author"]), metadata["author"]
    assert metadata["version"] == bridgepack.__version__
    assert metadata["validated-bridgepack"] == bridgepack.__version__
    for key in STACK_KEYS:
        assert re.match(r"^\d+\.\d+", metadata[key]), f"{key}: {metadata.get(key)!r}"
    tags = [t.strip() for t in metadata["tags"].split(",")]
    assert len(tags) >= 3 and all(re.fullmatch(r"[a-z0-9-]+", t) for t in tags), metadata["tags"]


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_body_sections(skill: str) -> None:
    meta, body = front_matter(skill)
    assert len(body.splitlines()) < 500
    headings = [line for line in body.splitlines() if line.startswith("## ")]
    for section in SECTIONS:
        assert section in headings, f"{skill}: no '{section}'"
    examples = body.split("## Examples", 1)[1].split("\n## ", 1)[0]
    worked = [part for part in examples.split("\n### ")[1:] if "```bash" in part and "```output" in part]
    assert len(worked) >= 3, f"{skill}: {len(worked)} worked examples with shown output"
    changelog = body.split("## Changelog", 1)[1].split("\n## ", 1)[0]
    assert f"- {meta['metadata']['version']}:" in changelog
    assert "references/zh.md" in body and "--lang zh" in body


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_references_are_one_level_deep(skill: str) -> None:
    root = SKILLS_DIR / skill
    assert not [p for p in (root / "references").iterdir() if p.is_dir()]
    for page in pages(skill):
        text = (root / page).read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)\)", text):
            if "://" in target:
                continue
            resolved = ((root / page).parent / target).resolve()
            assert resolved.exists(), f"{skill}/{page}: broken link {target}"
            assert resolved.is_relative_to(root.resolve()), f"{skill}/{page}: {target} leaves the skill"


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_no_command_destroys_anything(skill: str) -> None:
    for page in pages(skill):
        for cmd in page_commands(skill, page):
            words = cmd.words()
            assert words[0] != "rm" and "--delete" not in words, f"{cmd.where}: {cmd.text}"
            if "--overwrite" in words:
                pytest.fail(f"{cmd.where}: an example must not overwrite (rollback keeps old results)")


def test_skills_share_one_grading_engine() -> None:
    """The engine both graders run is one file (``skills/shared/grading.py``); each skill's
    ``evals/grading.py`` links to it, and the installer copies what the link names (test_install), so a
    skill folder installed alone carries it. Each ``grade.py`` holds only its own skill's checks."""
    shared = (SKILLS_DIR / "shared" / "grading.py").resolve()
    for skill in SKILL_NAMES:
        link = SKILLS_DIR / skill / "evals" / "grading.py"
        assert link.is_symlink() and link.resolve() == shared, (
            f"{skill}: evals/grading.py is not the shared one"
        )
        assert not link.readlink().is_absolute(), f"{skill}: the link must be relative (the checkout moves)"
        grader = (SKILLS_DIR / skill / "evals" / "grade.py").read_text(encoding="utf-8")
        assert "import grading" in grader and "def check_doctor" not in grader, skill


def test_license_is_the_one_pyproject_names() -> None:
    text = (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert 'license = "Apache-2.0"' in (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_readme_tells_agents_how_to_install() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## For agents", 1)[1].split("\n## ", 1)[0]
    for skill in SKILL_NAMES:
        assert f"--skill {skill}" in section
