"""What every command does alike at the edges (issue #32, defects 5-7), swept over the commands of the app.

- a reader that goes away (``bridgepack plan ... | head -1``) ends the command quietly with 141 (128 +
  SIGPIPE),
  never 1, which means a finding;
- a usage error is one line on stderr, the ``--help`` hint on it, not click's four (``Usage:``, ``Try``, a
  blank, ``Error:``); ``--debug`` works after the command name too;
- ``-q`` is taken by every command and drops progress and log lines only: the report prints all the same;
- ``--help`` through a pipe is plain text with every option name whole, the same at any ``COLUMNS`` (Rich's
  panels, drawn to ``COLUMNS``, cut ``--max-seq-length`` to ``--max-seq-leng…`` at 80): panels on a terminal.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
import typer

from bridgepack.cli import app, main
from bridgepack.data.samples import example_dataset_path
from bridgepack.errors import InputError

#: The shipped samples: what ``plan`` reads (a packed set given to it is refused).
SAMPLES = example_dataset_path()

#: 128 + SIGPIPE, what a shell reports for a tool whose reader went away.
BROKEN_PIPE = 141


def _paths() -> list[tuple[tuple[str, ...], Any]]:
    """Every command of the app with its click command, groups included (``curves``, ``curves compare``)."""
    found: list[tuple[tuple[str, ...], Any]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        if path:
            found.append((path, command))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


PATHS = [pytest.param(path, id=" ".join(path)) for path, _ in _paths()]
#: Commands whose unknown options are their input (``translate mlm-to-bridge -- --seq-length 4096``).
STRICT = [
    pytest.param(path, id=" ".join(path))
    for path, cmd in _paths()
    if not cmd.context_settings.get("ignore_unknown_options")
]
ALL = [pytest.param(path, cmd, id=" ".join(path)) for path, cmd in _paths()]
LEAVES = [
    pytest.param(path, cmd, id=" ".join(path)) for path, cmd in _paths() if not hasattr(cmd, "commands")
]


@contextmanager
def closed_stdout() -> Iterator[None]:
    """Standard output a pipe whose reader is gone, as ``| head -1`` leaves it once head has its line (set
    inside the test: pytest's capture takes sys.stdout over when the test starts)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    stream = os.fdopen(write_end, "w", buffering=1)  # a line is written when printed, as to a terminal
    saved, sys.stdout = sys.stdout, stream
    try:
        yield
    finally:
        sys.stdout = saved
        with suppress(BrokenPipeError):
            stream.close()


def _option_names(command: Any) -> list[str]:
    """Every name of every visible option of ``command`` (``-q``, ``--quiet``, ``--no-fix`` ...), the help
    option (click adds it to each run's context) included."""
    return ["-h", "--help"] + [
        name
        for param in command.params
        if param.param_type_name == "option" and not getattr(param, "hidden", False)
        for name in (*param.opts, *param.secondary_opts)
    ]


@pytest.mark.parametrize(
    ("path", "command"), [pytest.param((), typer.main.get_command(app), id="bridgepack"), *ALL]
)
def test_piped_help_names_every_option_whole(
    path: tuple[str, ...], command: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = []
    for columns in ("40", "80"):
        monkeypatch.setenv("COLUMNS", columns)
        assert main([*path, "--help"]) == 0
        shown.append(capsys.readouterr().out)
    assert shown[0] == shown[1], "piped --help depends on COLUMNS"
    names = _option_names(command)
    cut = [n for n in names if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", shown[0])]
    assert not cut, f"bridgepack {' '.join(path)} --help: not shown whole: {cut}\n{shown[0]}"
    assert "╭" not in shown[0] and "…" not in shown[0]


def test_a_terminal_gets_the_help_panels(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In one process too: the command a run parses with is built once per kind of stdout, not once."""
    import bridgepack.cli

    assert main(["plan", "--help"]) == 0
    assert "╭" not in capsys.readouterr().out
    monkeypatch.setattr(bridgepack.cli, "stdout_is_terminal", lambda: True)
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["plan", "--help"]) == 0
    assert "╭─ Options" in capsys.readouterr().out
    monkeypatch.undo()
    assert main(["plan", "--help"]) == 0
    assert "╭" not in capsys.readouterr().out


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("example") / "ex"
    assert main(["pack", "--example", "--out", str(out), "--pack-size", "1024", "-q"]) == 0
    return out


def test_the_sweep_covers_every_command() -> None:
    assert len(PATHS) >= 20 and len(LEAVES) >= 17 and len(PATHS) - len(STRICT) == 1


@pytest.mark.parametrize("path", PATHS)
def test_help_to_a_closed_pipe_ends_with_141(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with closed_stdout():
        assert main([*path, "--help"]) == BROKEN_PIPE
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "{ex}"],
        ["inspect", "{ex}", "--format", "json"],
        ["plan", "{samples}", "--pack-sizes", "1024,2048"],  # plan reads samples (a packed set is refused)
        ["fingerprint", "{ex}/training_1024.idx.parquet"],
    ],
    ids=["inspect", "inspect-json", "plan", "fingerprint"],
)
def test_a_report_to_a_closed_pipe_ends_with_141(args: list[str], example: Path) -> None:
    """The console script, as a shell runs it (a process of its own: rich keeps a console that met a closed
    pipe quiet, with what it could not write, for good), buffered output flushed at exit included."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "wb") as stdout:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "bridgepack",
                *(a.format(ex=example, samples=SAMPLES) for a in args),
            ],
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    assert (result.returncode, result.stderr) == (BROKEN_PIPE, b"")


@pytest.mark.parametrize("path", STRICT)
def test_a_usage_error_is_one_line_with_the_help_hint(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*path, "--no-such-option"]) == 2
    err = capsys.readouterr().err
    hint = f"(see 'bridgepack {' '.join(path)} --help')"
    assert err.count("\n") == 1 and err.startswith("error: ") and err.rstrip().endswith(hint), err
    assert "--no-such-option" in err


def test_an_unknown_command_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-command"]) == 2
    assert capsys.readouterr().err == "error: No such command 'no-such-command'. (see 'bridgepack --help')\n"


@pytest.mark.parametrize(
    "args",
    [
        ["--debug", "inspect", "missing.parquet"],
        ["inspect", "--debug", "missing.parquet"],
        ["inspect", "missing.parquet", "--debug"],
    ],
    ids=["before", "after-command", "last"],
)
def test_debug_is_taken_before_and_after_the_command(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``--debug`` the error is raised, traceback and all, wherever the flag stands."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"missing\.parquet"):
        main(args)


def test_debug_after_a_group_reaches_its_subcommand(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        main(["curves", "--debug", "compare", str(tmp_path / "a.log"), str(tmp_path / "b.log")])


@pytest.mark.parametrize(("path", "command"), LEAVES)
def test_every_command_takes_quiet(path: tuple[str, ...], command: Any) -> None:
    opts = {opt for p in command.params for opt in p.opts}
    assert {"--quiet", "-q"} <= opts, f"bridgepack {' '.join(path)} has no -q"


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "{ex}"],
        ["fingerprint", "{ex}/training_1024.idx.parquet"],
        ["diff", "{ex}/training_1024.idx.parquet", "{ex}/training_1024.idx.parquet"],
        ["plan", "{samples}", "--pack-sizes", "1024,2048"],  # plan reads samples (a packed set is refused)
        ["doctor", "--seq-length", "4096", "--cp", "3", "--mbs", "1", "--gbs", "8", "--world-size", "8"],
        ["env"],
        ["translate", "mlm-to-bridge", "--", "--seq-length", "4096"],
    ],
    ids=["inspect", "fingerprint", "diff", "plan", "doctor", "env", "translate"],
)
def test_quiet_keeps_the_report(args: list[str], example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.format(ex=example, samples=SAMPLES) for a in args]
    cut = argv.index("--") if "--" in argv else len(argv)
    loud = main(argv)
    report = capsys.readouterr().out
    quiet = main([*argv[:cut], "-q", *argv[cut:]])
    assert quiet == loud
    assert capsys.readouterr().out.splitlines() == report.splitlines()
    assert report.strip()


def test_quiet_pack_still_prints_its_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "--example", "--out", str(tmp_path / "q"), "--pack-size", "1024", "-q"]) == 0
    out = capsys.readouterr().out
    assert "Train on it with these Megatron-Bridge overrides:" in out and "packs" in out


def test_clean_with_nothing_to_clean_does_not_ask_for_yes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["clean", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "nothing to clean\n"
    assert "--yes" not in captured.err
