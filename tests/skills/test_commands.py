"""Every shell command in every skill page runs as written: the exit code the page states, every output line
it shows, against files the skill or bridgepack ships. Commands marked ``# needs: gpu|cluster|network`` are
parsed only (and their bridgepack options checked with ``--help``); at most a quarter may be marked. The
Chinese page runs the same commands as SKILL.md (``--lang zh`` may be added) with its own shown output."""

from __future__ import annotations

import re

import pytest

from _support import fenced_blocks
from _support.skill_pages import (
    SKILL_NAMES,
    SKILLS_DIR,
    ZH_PAGE,
    PageRun,
    page_commands,
    pages,
    prose_after_blocks,
    tree,
)
from bridgepack.cli import main

LANG_ZH = ("--lang", "zh")
WORK = "WORK=$(mktemp -d)"
COPY_IN = re.compile(r'cp -R assets/[\w./-]+ "\$WORK/[\w.-]+"')
RULE_ID = re.compile(r"\b(?:SP|ENV|CR)\d{3}\b")


def _without_lang_zh(words: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(words):
        if tuple(words[i : i + 2]) == LANG_ZH:
            i += 2
            continue
        out.append(words[i])
        i += 1
    return out


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_every_command_runs_as_written(skill: str, skill_page_runs: dict[tuple[str, str], PageRun]) -> None:
    runs = [r for (s, _), r in skill_page_runs.items() if s == skill]
    assert any(r.page == "SKILL.md" for r in runs), f"{skill}/SKILL.md has no command"
    problems = [p for r in runs for res in r.results for p in res.problems]
    details = [
        f"{p}\n--- output ---\n{res.output[-3000:]}"
        for r in runs
        for res in r.results
        for p in res.problems[:1]
    ]
    assert not problems, "\n\n".join(details)


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_commands_are_bridgepack_and_few_are_marked(skill: str) -> None:
    cmds = [c for page in pages(skill) for c in page_commands(skill, page) if page != ZH_PAGE]
    marked = [c for c in cmds if c.needs]
    assert len(marked) * 4 <= len(cmds), f"{skill}: {len(marked)} of {len(cmds)} commands only parsed"
    runnable = [c for c in page_commands(skill, "SKILL.md") if not c.needs]
    assert runnable[0].text == WORK, f"{skill}: the examples must start with {WORK}"
    for cmd in cmds:
        words = cmd.words()
        # Besides bridgepack: installing bridgepack itself (it needs the package index), the examples' own
        # temp
        # folder, and a copy of one of the skill's assets into it (an input the example then changes).
        assert (
            words[0] == "bridgepack"
            or (words[:2] == ["pip", "install"] and cmd.needs == "network")
            or cmd.text == WORK
            or COPY_IN.fullmatch(cmd.text)
        ), cmd.where


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_examples_run_twice_and_leave_the_skill_folder_as_it_was(
    skill: str, skill_page_runs: dict[tuple[str, str], PageRun]
) -> None:
    """A reader runs the examples again: every command that wrote a file runs a second time (with a new
    ``$WORK``) and still exits and prints as the page shows, and no example wrote into the skill folder."""
    for run in (r for (s, _), r in skill_page_runs.items() if s == skill):
        assert any(run.wrote[1:]), f"{run.page}: no example wrote a file, nothing was re-run"
        problems = [p for res in run.rerun for p in res.problems]
        assert not problems, "second run:\n" + "\n".join(problems)
        source, after = tree(SKILLS_DIR / skill), tree(run.workdir)
        changed = sorted(k for k in source.keys() | after.keys() if source.get(k) != after.get(k))
        assert not changed, f"{run.page}: the examples wrote into the skill folder: {changed[:10]}"


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_rule_ids_the_examples_name_are_printed(
    skill: str, skill_page_runs: dict[tuple[str, str], PageRun]
) -> None:
    """What a page says right after a command about the rule ids it reported (``the remaining warning is
    SP213``) is what that command printed, in both languages."""
    english = skill_page_runs[(skill, "SKILL.md")].results
    for page in ("SKILL.md", ZH_PAGE):
        for indices, prose in prose_after_blocks(skill, page):
            printed = " ".join(english[k].output for k in indices)
            named = set(RULE_ID.findall(prose)) - set(RULE_ID.findall(printed))
            where = english[indices[-1]].command.where
            assert not named, f"{skill}/{page}: after {where} it names {sorted(named)}, which was not printed"


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_marked_commands_name_real_options(skill: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A command that CI cannot run still has to be spelled right: bridgepack's own parser reads it with
    ``--help`` appended (an unknown command or option is a usage error, exit 2)."""
    for page in pages(skill):
        for cmd in page_commands(skill, page):
            words = cmd.words()
            if not cmd.needs or words[0] != "bridgepack":
                continue
            code = main([*words[1:], "--help"])
            assert code == 0, f"{cmd.where}: {capsys.readouterr().err[-500:]}"


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_chinese_page_runs_the_same_commands(
    skill: str, skill_page_runs: dict[tuple[str, str], PageRun]
) -> None:
    english = skill_page_runs[(skill, "SKILL.md")]
    zh = page_commands(skill, ZH_PAGE)
    en_words = [_without_lang_zh(r.command.words()) for r in english.results]
    zh_words = [_without_lang_zh(c.words()) for c in zh]
    assert zh_words == en_words, f"{skill}/{ZH_PAGE}: its commands are not SKILL.md's, in order"
    problems: list[str] = []
    for cmd, res in zip(zh, english.results, strict=True):
        if cmd.words() != res.command.words():
            # The same command with --lang zh: run it where the English page ran (same files present).
            (res,) = fenced_blocks.run([cmd], english.workdir, english.env)
            problems += res.problems
            assert LANG_ZH[0] in cmd.words() and cmd.exit_code == english_exit(english, cmd)
            continue
        problems += fenced_blocks.check_against([cmd], [res])
    assert not problems, "\n".join(problems)


def english_exit(english: PageRun, cmd: fenced_blocks.Command) -> int:
    """The exit code SKILL.md states for the command ``cmd`` translates."""
    target = _without_lang_zh(cmd.words())
    return next(r.command.exit_code for r in english.results if _without_lang_zh(r.command.words()) == target)
