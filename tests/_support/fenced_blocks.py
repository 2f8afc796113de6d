"""Run the shell examples of a Markdown page as written: page -> fenced blocks -> commands -> results.

Documentation that shows a command promises three things: it runs, it ends with the exit code the text
says, and the output it shows is what the command prints. This module turns a page into a list of
:class:`Command` objects and runs them, so a test can hold every page to those promises. The skills'
test (``tests/skills/``) uses it, and any other page (README, ``docs/*.md``) can, with the same markers.

The markers, all inside the page itself:

- a fenced block whose info string is ``bash``, ``sh`` or ``shell`` holds commands. A command is one
  logical line (a trailing ``\\`` continues it); blank lines and comment-only lines are skipped. The
  commands of a page run in page order, each in its own ``bash -c``, all in one working directory, so a
  later command reads what an earlier one wrote (environment variables do not carry over);
- a trailing comment ``# exit N`` states the exit code (default 0), e.g.
  ``bridgepack doctor bad.yaml   # exit 1: the config has errors``;
- a trailing comment ``# needs: gpu`` (or ``cluster``, ``network``) marks a command that cannot run in CI:
  it gets a syntax check (``bash -n``) only;
- a trailing comment ``# pinned: tests/x/test_y.py`` marks a command that unit test runs, word for word,
  checking what the page promises about it (its exit code and every line it shows; ``pinned_commands``
  finds a test file's commands): the page's run only parses it, as it does a ``# needs:`` command, and the
  command prepares nothing a later command of the page reads;
- a fenced block with the info string ``output`` (pages may name others, e.g. ``text``), right after a
  command block (only blank lines between), shows the output of that block's last command. Every
  non-blank line of it must appear in the real output (stdout and stderr together), in the same order,
  compared with runs of whitespace collapsed; a line ``...`` stands for lines left out, and a line
  ending in ``...`` matches any line that starts with the text before it. Values that change between
  runs (timestamps, run ids where a line names them, durations, throughput, free memory, absolute
  paths) are compared by shape: each side has them masked before comparing;
- pages may also opt in (``commands(..., python=True, prompts=True)``, as the docs test does) to three
  more forms: a block whose info string names a file (```` ```yaml file=sft.yaml ````, ```` ```python
  file=train.py ````) is written to that file in page order, never run; a ``python`` block is one
  command (the block is the script; a first line ``# exit N``, ``# needs: X`` or ``# pinned: FILE``
  marks it, and an output block may follow it; a block of ``>>>`` lines is a doctest, run after the
  page's earlier doctest blocks), and an output block that follows no command
  block but whose lines start with ``$ `` is a transcript: each ``$ `` line is a command, the lines up to
  the next ``$ `` line are its shown output.

Example page fragment::

    ```bash
    bridgepack doctor assets/configs/sft.yaml --world-size 32 --fix   # exit 1
    ```
    ```output
    ...
    corrected overrides:
    train.micro_batch_size=1
    ```
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from _support import warm_bridgepack

COMMAND_LANGS = frozenset({"bash", "sh", "shell"})
PYTHON_LANG = "python"
OUTPUT_LANG = "output"
PROMPT = "$ "
_PY_END = "BRIDGEPACK_PY_BLOCK_END"
NEEDS = ("gpu", "cluster", "network")
ELLIPSIS = "..."

_FENCE = re.compile(r"^(?P<indent>\s{0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_EXIT = re.compile(r"#\s*exit\s+(\d+)\b")
_NEEDS = re.compile(r"#\s*needs:\s*(\w+)")
_PINNED = re.compile(r"#.*?\bpinned:\s*(\S+)")
_FILE = re.compile(r"(?:^|\s)file=(\S+)")
_FILE_END = "BRIDGEPACK_FILE_END"
# What differs between two runs of the same command, masked on both sides before a shown line is compared.
_VOLATILE = (
    re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"),  # ISO time
    # compact UTC stamps (clean's folders, run ids), with the -N a second run folder in the same second gets
    re.compile(r"\b\d{8}-\d{6}(?:-\d+)?\b"),
    # a run id where a line names it ("run_id": "9f2c...", run id 9f2c...); other digests stay exact
    re.compile(r"(?i)(?<=run[ _-]id)(\W{0,4})[0-9a-f]{8,}"),
    re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|min)\b"),  # durations
    re.compile(r"(?<![\w.])/(?:tmp|var|private|home|work|Users)/\S+"),  # absolute paths
    re.compile(r"(?<=\(ms\): )\d+(?:\.\d+)?"),  # Megatron-LM log lines: elapsed time per iteration (ms): N
    re.compile(r"\d[\d,]*(?:\.\d+)?(?= (?:real )?tokens/s)"),  # throughput
    re.compile(r"\d+(?:\.\d+)? GiB(?= is available)"),  # this machine's free memory
)


@dataclass(frozen=True)
class Block:
    """One fenced block: its info-string language, its text and where it starts (1-based, first content
    line) in the page."""

    lang: str
    text: str
    line: int
    end_line: int
    info: str = ""

    def file_name(self) -> str | None:
        """The file a block shows, named in its info string (```yaml file=sft.yaml), or ``None``."""
        m = _FILE.search(self.info)
        return m.group(1) if m else None


@dataclass(frozen=True)
class Command:
    """One command of a page, with what the page promises about it."""

    text: str
    source: str
    line: int
    exit_code: int = 0
    needs: str | None = None
    output: tuple[str, ...] = ()
    #: the unit test file (``tests/...py``) that runs this command as written (``# pinned: FILE``)
    pinned: str | None = None

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"

    @property
    def python_source(self) -> str | None:
        """The script of a ``python`` block's command (what ``python -`` reads), else ``None``."""
        head, tail = f"python - <<'{_PY_END}'\n", f"\n{_PY_END}"
        if self.text.startswith(head) and self.text.endswith(tail):
            return self.text[len(head) : -len(tail)]
        return None

    def words(self) -> list[str]:
        """The command as the shell splits it, comments dropped: what two pages compare to agree on it."""
        return shlex.split(self.text, comments=True)


@dataclass
class Result:
    """What running one command gave."""

    command: Command
    returncode: int
    output: str
    syntax_only: bool = False
    problems: list[str] = field(default_factory=list)


def blocks(markdown: str) -> list[Block]:
    """The fenced blocks of a page, in order. An unclosed fence runs to the end of the page, as
    CommonMark renders it."""
    out: list[Block] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        info = m.group("info").strip()
        lang = info.split()[0].lower() if info else ""
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            close = _FENCE.match(lines[j])
            if (
                close
                and close.group("fence")[0] == fence[0]
                and len(close.group("fence")) >= len(fence)
                and not close.group("info").strip()
            ):
                break
            body.append(lines[j])
            j += 1
        out.append(Block(lang=lang, text="\n".join(body), line=i + 2, end_line=j + 1, info=info))
        i = j + 1
    return out


def _logical_lines(block: Block) -> Iterable[tuple[int, str]]:
    """(line number, text) of each logical line of a command block; ``\\`` continues a line."""
    pending: list[str] = []
    start = block.line
    for offset, raw in enumerate(block.text.splitlines()):
        if not pending:
            start = block.line + offset
        stripped = raw.rstrip()
        if stripped.endswith("\\"):
            pending.append(stripped[:-1])
            continue
        pending.append(stripped)
        yield start, " ".join(part.strip() for part in pending).strip()
        pending = []
    if pending:
        yield start, " ".join(part.strip() for part in pending).strip()


def _markers(text: str, where: str) -> tuple[int, str | None, str | None]:
    """A command's ``# exit N``, ``# needs: X`` and ``# pinned: FILE`` (defaults 0, None, None)."""
    exit_code = 0
    needs = None
    if m := _EXIT.search(text):
        exit_code = int(m.group(1))
    if m := _NEEDS.search(text):
        needs = m.group(1)
        if needs not in NEEDS:
            raise ValueError(f"{where}: '# needs: {needs}' is not one of {', '.join(NEEDS)}")
    pinned = m.group(1) if (m := _PINNED.search(text)) else None
    return exit_code, needs, pinned


def _python_command(block: Block, source: str, earlier_doctests: Sequence[str] = ()) -> Command:
    """A ``python`` block as one command: the block fed to ``python`` on stdin, as a reader would paste it.
    A block of ``>>>`` lines is a doctest instead, its shown results checked; it runs after the page's
    earlier doctest blocks (unchecked here), so it sees their names as a reader's session would."""
    first = block.text.lstrip().splitlines()[0] if block.text.strip() else ""
    exit_code, needs, pinned = (0, None, None)
    if first.startswith("#"):
        exit_code, needs, pinned = _markers(first, f"{source}:{block.line}")
    if first.startswith(">>>"):
        payload = json.dumps([list(earlier_doctests), block.text, f"{source}:{block.line}"])
        body = _DOCTEST_RUNNER.replace("PAYLOAD", repr(payload))
    else:
        body = block.text
    text = f"python - <<'{_PY_END}'\n{body}\n{_PY_END}"
    return Command(text, source, block.line, exit_code, needs, pinned=pinned)


_DOCTEST_RUNNER = """import doctest, json, sys
earlier, block, where = json.loads(PAYLOAD)
parser, globs = doctest.DocTestParser(), {}
flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
for k, text in enumerate(earlier):
    test = parser.get_doctest(text, globs, f"earlier{k}", None, 0)
    doctest.DocTestRunner(optionflags=flags).run(test, out=lambda s: None, clear_globs=False)
    globs = test.globs  # a DocTest works on a copy
test = parser.get_doctest(block, globs, where, where, 0)
result = doctest.DocTestRunner(optionflags=flags).run(test, clear_globs=False)
sys.exit(1 if result.failed else 0)"""


def _transcript(block: Block, source: str) -> list[Command]:
    """The commands of a ``$ cmd`` transcript block, each with the lines after it as its shown output."""
    found: list[Command] = []
    pending: tuple[int, str] | None = None
    shown: list[str] = []

    def close() -> None:
        if pending is not None:
            line, text = pending
            exit_code, needs, pinned = _markers(text, f"{source}:{line}")
            shown_lines = tuple(s for s in shown if s.strip())
            found.append(Command(text, source, line, exit_code, needs, shown_lines, pinned))

    lines = block.text.splitlines()
    k = 0
    while k < len(lines):
        raw = lines[k]
        if raw.startswith(PROMPT):
            close()
            start, text = block.line + k, raw[len(PROMPT) :].rstrip()
            while text.endswith("\\") and k + 1 < len(lines):
                k += 1
                text = text[:-1].rstrip() + " " + lines[k].strip()
            pending, shown = (start, text.strip()), []
        else:
            shown.append(raw)
        k += 1
    close()
    return found


def is_transcript(block: Block) -> bool:
    """Whether a block is a ``$ cmd`` transcript (its first non-blank line is a prompt)."""
    first = next((s for s in block.text.splitlines() if s.strip()), "")
    return first.startswith(PROMPT)


def commands(
    markdown: str,
    source: str,
    *,
    output_langs: Iterable[str] = (OUTPUT_LANG,),
    python: bool = False,
    prompts: bool = False,
) -> list[Command]:
    """The commands of a page in order, each with its stated exit code, marker and shown output."""
    outputs = frozenset(output_langs)
    found: list[Command] = []
    page_lines = markdown.splitlines()
    page_blocks = blocks(markdown)
    consumed: set[int] = set()
    doctests: list[str] = []
    for index, block in enumerate(page_blocks):
        if index in consumed:
            continue
        block_commands: list[Command] = []
        if python and (name := block.file_name()):
            # A file the page shows (a python or shell one too: a script the page's commands run or the
            # reader submits), written where the page's commands run (they read it by that name), not run.
            text = f"cat > {shlex.quote(name)} <<'{_FILE_END}'\n{block.text}\n{_FILE_END}"
            found.append(Command(text, source, block.line))
            continue
        if block.lang in COMMAND_LANGS:
            for line, text in _logical_lines(block):
                if not text or text.startswith("#"):
                    continue
                exit_code, needs, pinned = _markers(text, f"{source}:{line}")
                block_commands.append(Command(text, source, line, exit_code, needs, pinned=pinned))
        elif python and block.lang == PYTHON_LANG:
            block_commands.append(_python_command(block, source, doctests))
            if block.text.lstrip().startswith(">>>"):
                doctests.append(block.text)
        elif prompts and block.lang in outputs and is_transcript(block):
            found.extend(_transcript(block, source))
            continue
        else:
            continue
        nxt = page_blocks[index + 1] if index + 1 < len(page_blocks) else None
        if nxt is not None and nxt.lang in outputs and not (prompts and is_transcript(nxt)):
            between = page_lines[block.end_line : nxt.line - 2]
            where = f"{source}:{nxt.line - 1}"
            if any(s.strip() for s in between):
                if nxt.lang == OUTPUT_LANG:
                    raise ValueError(f"{where}: an output block must follow its command block")
            else:
                if not block_commands:
                    raise ValueError(f"{where}: an output block after a block with no command")
                consumed.add(index + 1)
                shown = tuple(s for s in nxt.text.splitlines() if s.strip())
                last = block_commands[-1]
                block_commands[-1] = Command(
                    last.text, last.source, last.line, last.exit_code, last.needs, shown, last.pinned
                )
        found.extend(block_commands)
    return found


def script(cmds: Sequence[Command]) -> str:
    """A bash script that runs the commands in order and stops at the first unexpected exit code: the
    page as one file a person can run (``bash page.sh``); commands marked ``# needs:`` are only parsed."""
    parts = ["#!/usr/bin/env bash", "set -u"]
    for cmd in cmds:
        if cmd.needs:
            parts.append(f"bash -n -c {shlex.quote(cmd.text)} || exit 1   # needs: {cmd.needs}")
            continue
        parts.append(cmd.text)
        parts.append(
            f'rc=$?; [ "$rc" -eq {cmd.exit_code} ] || '
            f'{{ echo "{cmd.where}: exit $rc, the page says {cmd.exit_code}" >&2; exit 1; }}'
        )
    return "\n".join(parts) + "\n"


def _norm(line: str) -> str:
    return " ".join(line.split())


def _shape(line: str) -> str:
    for pattern in _VOLATILE:
        line = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "\u2027", line)
    return line


def _same(want: str, real: str, prefix: bool) -> bool:
    if real.startswith(want) if prefix else real == want:
        return True
    shaped_want, shaped_real = _shape(want), _shape(real)
    if shaped_want == want:  # nothing in the shown line varies
        return False
    return shaped_real.startswith(shaped_want) if prefix else shaped_real == shaped_want


def missing_lines(shown: Sequence[str], output: str) -> list[str]:
    """Lines of ``shown`` not found in ``output`` in order (see the module docstring for ``...``)."""
    real = [_norm(s) for s in output.splitlines()]
    pos = 0
    missing: list[str] = []
    for raw in shown:
        want = _norm(raw)
        if not want or want == ELLIPSIS:
            continue
        prefix = want.endswith(ELLIPSIS)
        target = want[: -len(ELLIPSIS)].rstrip() if prefix else want
        for k in range(pos, len(real)):
            if _same(target, real[k], prefix):
                pos = k + 1
                break
        else:
            missing.append(raw)
    return missing


def default_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment examples run in: this Python's scripts first on PATH (so ``bridgepack`` is the one
    under test), a fixed terminal width (tables wrap the same everywhere), an English locale."""
    env = dict(os.environ)
    for key in ("LC_ALL", "LC_MESSAGES", "LANGUAGE"):
        env.pop(key, None)
    env["LANG"] = "C.UTF-8"
    env["COLUMNS"] = "120"
    env["NO_COLOR"] = "1"
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    if extra:
        env.update(extra)
    return env


def _warm_text(cmd: Command) -> str:
    """A python block's command for the warm server (``bridgepack-py``, :mod:`_support.warm_bridgepack`)."""
    cold = f"python - <<'{_PY_END}'"
    return "bridgepack-py" + cmd.text[len("python") :] if cmd.text.startswith(cold) else cmd.text


def _run_bash(argv: list[str], cwd: Path, env: Mapping[str, str], timeout: float) -> tuple[int, str]:
    """One command line: its exit status and output (stdout and stderr together). It runs in a session of
    its own, so a timeout kills all of it -- background jobs and the warm clients (whose commands the warm
    server then ends) -- instead of leaving them to hold the output pipe open."""
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:  # something left the session and holds the pipe: stop reading
            proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        return -1, f"timed out after {timeout:g} s"
    return proc.returncode, out.decode("utf-8", "replace")


def run(
    cmds: Sequence[Command],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    warm: bool = True,
) -> list[Result]:
    """Run the commands in order in ``cwd``; each result lists how it broke the page's promises. With
    ``warm`` (the default) ``bridgepack`` and the python blocks run in forks of this process's warm server
    (:mod:`_support.warm_bridgepack`), each still a process of its own, through ``bash`` as written."""
    env = dict(env) if env is not None else default_env()
    server = warm_bridgepack.shared() if warm else None
    if server is not None:
        env = server.environ(env)
    results: list[Result] = []
    for cmd in cmds:
        text = _warm_text(cmd) if server is not None else cmd.text
        parse_only = bool(cmd.needs or cmd.pinned)
        argv = ["bash", "-n", "-c", text] if parse_only else ["bash", "-c", text]
        if server is not None:
            server.check()  # a server that died is reported here, not as each command's failure
        returncode, output = _run_bash(argv, cwd, env, timeout)
        result = Result(cmd, returncode, output, syntax_only=parse_only)
        expected = 0 if parse_only else cmd.exit_code
        if returncode != expected:
            result.problems.append(f"{cmd.where}: exit {returncode}, the page says {expected}: {cmd.text}")
        if not parse_only:
            for line in missing_lines(cmd.output, output):
                result.problems.append(f"{cmd.where}: shown output line not printed: {line!r}")
        results.append(result)
    return results


def check_against(cmds: Sequence[Command], results: Sequence[Result]) -> list[str]:
    """Hold a second page that runs the same commands (a translation) to its own promises, against the
    results of running the first: same words in the same order, each exit code, each shown line."""
    problems: list[str] = []
    if [c.words() for c in cmds] != [r.command.words() for r in results]:
        problems.append(f"{cmds[0].source if cmds else '?'}: its commands differ from the page it translates")
        return problems
    for cmd, res in zip(cmds, results, strict=True):
        expected = 0 if cmd.needs else cmd.exit_code
        stated = 0 if res.command.needs else res.command.exit_code
        if expected != stated or cmd.needs != res.command.needs:
            problems.append(
                f"{cmd.where}: states exit {expected} / needs {cmd.needs}, the original says "
                f"exit {stated} / needs {res.command.needs}"
            )
        if not cmd.needs:
            for line in missing_lines(cmd.output, res.output):
                problems.append(f"{cmd.where}: shown output line not printed: {line!r}")
    return problems
