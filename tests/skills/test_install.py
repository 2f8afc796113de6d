"""Installability, as users install skills: ``npx skills add <checkout>`` lists both skills, and installing
one for Claude Code in a fresh project copies exactly the skill folder (less the names the installer
skips), which the reference validator still accepts, and its grader runs there alone (the shared grading
engine, a link in the checkout, is copied in as a file).

skills@1.7.0 is the newest release of the installer that runs on Node 20. Telemetry is off: the installer
reports to a public host otherwise. Skipped, with the reason, only where ``npx`` is absent; it needs the npm
registry once (then the npm cache): unreachable, it fails in CI and skips elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _support.skill_pages import REPO_ROOT, SKILL_NAMES, SKILLS_DIR

INSTALLER = "skills@1.7.0"
SKIPPED = ("__pycache__", "metadata.json", "README.md")
NETWORK_ERRORS = re.compile(r"ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|ECONNRESET|network", re.IGNORECASE)

pytestmark = pytest.mark.network


def npx(args: list[str], cwd: Path) -> str:
    exe = shutil.which("npx")
    if exe is None:
        pytest.skip("npx (Node.js) is not installed: the installer test needs it")
    env = dict(os.environ, DISABLE_TELEMETRY="1", DO_NOT_TRACK="1", NO_COLOR="1", CI="1")
    proc = subprocess.run(
        [exe, "-y", INSTALLER, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 and NETWORK_ERRORS.search(output):
        if os.environ.get("CI"):
            pytest.fail(f"npx could not fetch {INSTALLER}: {output[-1000:]}")
        pytest.skip(f"npx could not fetch {INSTALLER} (no network here)")
    assert proc.returncode == 0, output[-3000:]
    return output


def tree(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file the installer copies (it skips some names at any depth)."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in SKIPPED or part.startswith("_") for part in rel.parts):
            continue
        if path.is_file():
            files[str(rel)] = path.read_bytes()
    return files


def test_list_finds_both_skills(tmp_path: Path) -> None:
    output = npx(["add", str(REPO_ROOT), "--list"], cwd=tmp_path)
    for skill in SKILL_NAMES:
        assert skill in output
    assert "Found 2 skills" in output


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_install_copies_the_skill(tmp_path: Path, skill: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    npx(["add", str(REPO_ROOT), "--skill", skill, "--agent", "claude-code", "--yes"], cwd=project)
    installed = project / ".claude" / "skills" / skill
    assert installed.is_dir(), sorted(str(p.relative_to(project)) for p in project.rglob("*"))[:50]
    source, copy = tree(SKILLS_DIR / skill), tree(installed)
    assert sorted(copy) == sorted(source)
    assert [k for k in source if source[k] != copy[k]] == []
    grading = installed / "evals" / "grading.py"
    assert grading.is_file() and not grading.is_symlink(), "the shared grading engine is not copied in"
    task = next(
        t for t in json.loads((installed / "evals" / "evals.json").read_text())["evals"] if "grade" in t
    )
    answer = installed / "evals" / task["grade"]["answers"]["reference"]
    graded = subprocess.run(
        [sys.executable, str(installed / "evals" / "grade.py"), task["id"], str(answer)],
        capture_output=True,
        text=True,
        cwd=project,
    )
    assert (graded.returncode, graded.stdout.strip()) == (0, f"PASS {task['id']}"), (
        graded.stdout + graded.stderr
    )
    other = set(SKILL_NAMES) - {skill}
    assert not any((project / ".claude" / "skills" / name).exists() for name in other)
    validator = shutil.which("agentskills", path=str(Path(sys.executable).parent))
    if validator:
        proc = subprocess.run([validator, "validate", str(installed)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
