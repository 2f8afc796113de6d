"""The documentation pages (README.md, docs/*.md) as the tests read them, and the commands unit tests pin.

The docs test (``tests/docs/test_pages.py``) runs every page as a script. A page's command that a unit test
already runs word for word carries ``# pinned: tests/<area>/test_<x>.py``: the docs test only parses it
(and checks its options against bridgepack's parser), and the unit test named there runs it in its own
process -- with the inputs the page's earlier commands would have made -- and holds it to the page's
promises, its exit code and every line it shows::

    PAGE_COMMANDS = doc_pages.pinned_by(__file__)

    @pytest.mark.parametrize("cmd", PAGE_COMMANDS, ids=doc_pages.command_id)
    def test_the_pages_command(cmd, capsys, ...):
        ...  # prepare the files the command reads, in a directory of the test's own
        code, out, err = doc_pages.run_in_process(cmd, capsys)
        assert doc_pages.broken_promises(cmd, code, out + err) == []
"""

from __future__ import annotations

import contextlib
import functools
import io
import subprocess
import traceback
from pathlib import Path

import pytest

from _support import fenced_blocks

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The fence language of shown output and ``$ cmd`` transcripts on the pages.
OUTPUT_LANGS = ("text",)


def all_pages() -> tuple[str, ...]:
    """Every page of the docs, repository-relative: README.md, then docs/*.md by name."""
    return ("README.md", *sorted(str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "docs").glob("*.md")))


def page_text(page: str) -> str:
    return (REPO_ROOT / page).read_text(encoding="utf-8")


def commands_of(markdown: str, source: str) -> list[fenced_blocks.Command]:
    """The commands of a page's text, as the docs test runs them (bash, python and ``$ cmd`` transcripts)."""
    return fenced_blocks.commands(markdown, source, output_langs=OUTPUT_LANGS, python=True, prompts=True)


@functools.cache
def page_commands(page: str) -> tuple[fenced_blocks.Command, ...]:
    """A page's commands (:func:`commands_of` its file)."""
    return tuple(commands_of(page_text(page), page))


def pinned_by(test_file: str) -> list[fenced_blocks.Command]:
    """The commands of every page marked ``# pinned: FILE`` for ``test_file`` (a test module's
    ``__file__``), in page order."""
    name = Path(test_file).resolve().relative_to(REPO_ROOT).as_posix()
    return [c for page in all_pages() for c in page_commands(page) if c.pinned == name]


def command_id(cmd: fenced_blocks.Command) -> str:
    return cmd.where


def run_in_process(cmd: fenced_blocks.Command, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """A pinned command run in this process (in the working directory the test chose): a ``bridgepack``
    command by ``bridgepack.cli.main``, a ``python`` block as ``__main__``. Its exit code, standard output
    and standard error."""
    capsys.readouterr()
    code = _run_here(cmd)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_captured(cmd: fenced_blocks.Command) -> tuple[int, str, str]:
    """:func:`run_in_process` for a fixture made once per module (where no ``capsys`` is): the command's
    standard output and error are what it writes to ``sys.stdout`` / ``sys.stderr`` while it runs."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = _run_here(cmd)
    return code, out.getvalue(), err.getvalue()


def _run_here(cmd: fenced_blocks.Command) -> int:
    """Run ``cmd`` in this process, as its page's reader runs it in a shell; its exit code."""
    source = cmd.python_source
    if source is None:
        from bridgepack.cli import main

        return main(_bridgepack_args(cmd))
    try:  # as `python -` runs it: its own globals, an uncaught exception's trace on stderr and exit 1
        exec(compile(source, cmd.where, "exec"), {"__name__": "__main__"})
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except Exception:
        traceback.print_exc()
        return 1
    return 0


def _bridgepack_args(cmd: fenced_blocks.Command) -> list[str]:
    """The command's arguments as bash passes them (quotes, variables and globs expanded by bash itself, in
    the working directory)."""
    words = cmd.words()
    assert words[0] == "bridgepack", f"{cmd.where}: a pinned command runs bridgepack or is a python block"
    args = cmd.text.strip()[len("bridgepack") :]
    each_word = (
        f"for word in {args}\ndo printf '%s\\0' \"$word\"; done"  # a line of its own: the comment ends
    )
    expanded = subprocess.run(["bash", "-c", each_word], capture_output=True, check=True)
    return expanded.stdout.decode().split("\0")[:-1]


def broken_promises(cmd: fenced_blocks.Command, code: int, output: str) -> list[str]:
    """How a run of a pinned command broke what its page says: the exit code, each shown line."""
    problems = [] if code == cmd.exit_code else [f"{cmd.where}: exit {code}, the page says {cmd.exit_code}"]
    return problems + [
        f"{cmd.where}: shown output line not printed: {line!r}"
        for line in fenced_blocks.missing_lines(cmd.output, output)
    ]
