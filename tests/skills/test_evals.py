"""The evals anyone can re-run: the agentskills/SkillEvaluator shape and counts, and the grader: ``grade.py
--check-all`` passes every graded task's reference answer and fails each named wrong answer (at least four
per task, each stating why it is wrong) with a message naming its miss."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from _support.skill_pages import SKILL_NAMES, SKILLS_DIR, evals

CJK = re.compile(r"[\u4e00-\u9fff]")


def triggers(skill: str) -> list[dict[str, Any]]:
    return json.loads((SKILLS_DIR / skill / "evals" / "triggers.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_eval_set_shape_and_counts(skill: str) -> None:
    data = evals(skill)
    assert data["skill_name"] == skill
    tasks = data["evals"]
    assert len({t["id"] for t in tasks}) == len(tasks)
    for task in tasks:
        assert {"id", "prompt", "expected_output", "files", "assertions", "expected_skill"} <= task.keys(), (
            task["id"]
        )
        for name in task["files"]:
            assert (SKILLS_DIR / skill / name).exists(), f"{task['id']}: {name}"
    positive = [t for t in tasks if t["expected_skill"] == skill]
    negative = [t for t in tasks if t["expected_skill"] is None]
    assert len(positive) >= 10 and len(negative) >= 8, (len(positive), len(negative))
    assert any(CJK.search(t["prompt"]) for t in positive) and any(CJK.search(t["prompt"]) for t in negative)
    graded = [t for t in positive if "grade" in t]
    assert len(graded) >= 6
    for task in graded:
        answers = task["grade"]["answers"]
        assert (SKILLS_DIR / skill / "evals" / answers["reference"]).is_dir(), task["id"]
        assert len(answers["wrong"]) >= 4, f"{task['id']}: {len(answers['wrong'])} wrong answers, not 4"
        for name, wrong in answers["wrong"].items():
            assert set(wrong) == {"dir", "why", "miss"} and wrong["why"] and wrong["miss"], (task["id"], name)
            assert wrong["dir"] == f"answers/{task['id']}/wrong-{name}", (task["id"], name)
            assert (SKILLS_DIR / skill / "evals" / wrong["dir"]).is_dir(), (task["id"], name)
    listed = {t["grade"]["answers"]["reference"] for t in graded}
    listed |= {w["dir"] for t in graded for w in t["grade"]["answers"]["wrong"].values()}
    evals_dir = SKILLS_DIR / skill / "evals"
    on_disk = {str(p.relative_to(evals_dir)) for p in (evals_dir / "answers").glob("*/*")}
    assert on_disk == listed, f"answer folders not in evals.json: {sorted(on_disk - listed)}"


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_trigger_queries(skill: str) -> None:
    rows = triggers(skill)
    assert len(rows) >= 20
    assert all(set(r) == {"query", "should_trigger"} for r in rows)
    negative = [r for r in rows if not r["should_trigger"]]
    assert 0.4 <= len(negative) / len(rows) <= 0.6
    for should in (True, False):
        side = [r["query"] for r in rows if r["should_trigger"] is should]
        assert any(CJK.search(q) for q in side) and any(not CJK.search(q) for q in side)


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_check_all_passes_references_and_fails_each_wrong_answer_for_its_reason(
    graders: dict[str, ModuleType], skill: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """What CI and a reviewer run: ``grade.py --check-all`` prints one line per answer, ``ok`` when a
    reference passes or a wrong answer fails with a message holding its stated miss."""
    code = graders[skill].main(["--check-all"])
    lines = capsys.readouterr().out.splitlines()
    graded = [t for t in evals(skill)["evals"] if "grade" in t]
    assert len(lines) == sum(1 + len(t["grade"]["answers"]["wrong"]) for t in graded)
    assert [line for line in lines if not line.startswith("ok ")] == [] and code == 0


def test_grader_command_line(tmp_path: Path) -> None:
    """As a user runs it: exit 0 and PASS, exit 1 and FAIL naming the miss, exit 2 on an unknown task."""
    skill = "bridgepack-sequence-packing"
    evals_dir = SKILLS_DIR / skill / "evals"
    script = str(evals_dir / "grade.py")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, script, *args], capture_output=True, text=True, cwd=tmp_path)

    ok = run("gbs-for-dp", str(evals_dir / "answers/gbs-for-dp/reference"))
    assert (ok.returncode, ok.stdout.strip()) == (0, "PASS gbs-for-dp")
    bad = run("gbs-for-dp", str(evals_dir / "answers/gbs-for-dp/wrong-gbs-kept"))
    assert bad.returncode == 1 and bad.stdout.startswith("FAIL gbs-for-dp: ") and "SP017" in bad.stdout
    assert run("no-such-task", str(tmp_path)).returncode == 2
