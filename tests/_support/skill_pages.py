"""The agent skills under ``skills/``: where they are, their pages and front matter (tests/skills/)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
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


#: A command that only sets a shell variable for the commands after it, as the examples' first line does:
#: ``WORK=$(mktemp -d)``.
ASSIGNMENT = re.compile(r"^([A-Za-z_]\w*)=(\$\([^()]*\)|\S+)$")


@dataclass
class PageRun:
    """One page run twice in its own copy of the skill folder: ``results`` of every command, ``wrote``
    (per command, whether it changed a file under a folder a variable names: those run again), ``rerun``
    (the results of running the writers again, with a fresh ``$WORK``) and the ``env`` the last pass had."""

    skill: str
    page: str
    workdir: Path
    results: list[fenced_blocks.Result]
    wrote: list[bool]
    rerun: list[fenced_blocks.Result]
    env: dict[str, str]


def _files_under(folders: list[Path]) -> dict[str, tuple[int, int]]:
    """Size and modification time of every file under some folders: what a command wrote there."""
    return {
        str(p): (st.st_size, st.st_mtime_ns)
        for folder in folders
        if folder.is_dir()
        for p in folder.rglob("*")
        if p.is_file() and (st := p.stat())
    }


def run_in_shell_order(
    cmds: list[fenced_blocks.Command], cwd: Path, env: dict[str, str]
) -> tuple[list[fenced_blocks.Result], list[bool], dict[str, str]]:
    """Run a page's commands as a reader's shell would: each command on its own (fenced_blocks.run), but a
    variable a command sets (``WORK=$(mktemp -d)``) is set for the commands after it. Returns the results,
    which commands wrote under a folder a variable names (an assignment counts), and the final env."""
    env = dict(env)
    results: list[fenced_blocks.Result] = []
    wrote: list[bool] = []
    for cmd in cmds:
        assignment = ASSIGNMENT.match(cmd.text) if not cmd.needs else None
        if assignment:
            name = assignment.group(1)
            proc = subprocess.run(
                ["bash", "-c", f'{cmd.text} && printf %s "${name}"'],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
            )
            result = fenced_blocks.Result(cmd, proc.returncode, proc.stderr)
            if proc.returncode != cmd.exit_code:
                result.problems.append(
                    f"{cmd.where}: exit {proc.returncode}, the page says {cmd.exit_code}: {cmd.text}"
                )
            env[name] = proc.stdout
            results.append(result)
            wrote.append(True)
            continue
        watched = [Path(env[name]) for name in _assigned(cmds) if name in env]
        before = _files_under(watched)
        results += fenced_blocks.run([cmd], cwd, env)
        wrote.append(_files_under(watched) != before)
    return results, wrote, env


def _assigned(cmds: list[fenced_blocks.Command]) -> list[str]:
    return [m.group(1) for c in cmds if (m := ASSIGNMENT.match(c.text))]


def run_twice(skill: str, page: str, workdir: Path, env: dict[str, str]) -> PageRun:
    """Run a page's commands, then those that wrote files again, as a reader re-running the examples."""
    cmds = page_commands(skill, page)
    results, wrote, _ = run_in_shell_order(cmds, workdir, env)
    writers = [cmd for cmd, w in zip(cmds, wrote, strict=True) if w]
    rerun, _, final_env = run_in_shell_order(writers, workdir, env)
    return PageRun(skill, page, workdir, results, wrote, rerun, final_env)


def tree(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file under a folder (links read through; caches left out)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def prose_after_blocks(skill: str, page: str) -> list[tuple[list[int], str]]:
    """For each command block of a page: the indices of its commands (in ``page_commands`` order) and the
    prose after it (after its output block, if any) up to the next block or heading: what the page says
    about that command's result."""
    text = (SKILLS_DIR / skill / page).read_text(encoding="utf-8")
    lines = text.splitlines()
    page_blocks = fenced_blocks.blocks(text)
    cmds = page_commands(skill, page)
    out = []
    for i, block in enumerate(page_blocks):
        indices = [k for k, c in enumerate(cmds) if block.line <= c.line <= block.end_line]
        if block.lang not in fenced_blocks.COMMAND_LANGS or not indices:
            continue
        end, later = block.end_line, page_blocks[i + 1 :]
        if later and later[0].lang == fenced_blocks.OUTPUT_LANG:
            end, later = later[0].end_line, later[1:]
        stop = later[0].line - 2 if later else len(lines)
        prose = []
        for line in lines[end:stop]:
            if line.startswith("#"):
                break
            prose.append(line)
        out.append((indices, "\n".join(prose)))
    return out


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
