"""A path that exists but is the wrong kind -- a named pipe, a folder for a file, a file for a folder -- is
one line, exit 2, in every command, before anything opens it (#43 items 10 and 13).

Before: a FIFO given to ``pack`` (``mkfifo f.jsonl; cat in.jsonl > f.jsonl &``) was read by the input hash
and again by the scanner and reported as empty or malformed (or the command hung with no writer);
``--tokenizer tokenizer.json`` said "tokenizer directory does not exist". The parameters are found in the
app (every ``Path`` parameter, and text parameters whose help names a file or a folder); each is declared
in :data:`bridgepack.cli._paths.PATH_PARAMETERS` with the kind it must be.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

import bridgepack
from bridgepack._io import DIRECTORY, FILE, TOKENIZER_DIRECTORY
from bridgepack.cli import app, main
from bridgepack.cli._paths import PATH_PARAMETERS
from bridgepack.data.packed import PackedSource
from bridgepack.data.samples import INPUT_FORMATS
from bridgepack.data.samples.text import load_tokenizer
from bridgepack.errors import InputError

FIFO = "a named pipe (FIFO)"
#: Text parameters whose help says they name a path.
_NAMES_A_PATH = re.compile(r"\b(file|files|folder|dir|directory|glob)\b|^Packed", re.IGNORECASE)


@functools.cache
def _commands() -> tuple[tuple[str, Any], ...]:
    """Every leaf command of the app as click builds it (built once: ~50 ms, and ~90 tests read it)."""

    def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            yield " ".join(path), command
        for name, sub in (subcommands or {}).items():
            yield from walk(sub, (*path, name))

    return tuple(walk(typer.main.get_command(app), ()))


#: Text parameters whose help misleads the rule: ``--engine`` names "a directory of shards" it writes;
#: ``diff``'s second side is "of the same kind" as the first.
_HELP_MISLEADS = {("pack", "engine"): False, ("diff", "b"): True}


def _is_path(command: str, param: Any) -> bool:
    if (command, param.name) in _HELP_MISLEADS:
        return _HELP_MISLEADS[(command, param.name)]
    annotation = str(getattr(getattr(param, "type_descriptor", None), "annotation", ""))
    if "Path" in annotation:
        return True
    return annotation in ("<class 'str'>", "list[str]") and bool(_NAMES_A_PATH.search(param.help or ""))


def test_every_path_parameter_of_the_app_is_declared() -> None:
    found = {(name, p.name) for name, command in _commands() for p in command.params if _is_path(name, p)}
    assert found == set(PATH_PARAMETERS)


@contextlib.contextmanager
def _watched_fifo(path: Path) -> Iterator[list[bool]]:
    """A named pipe at ``path``; a thread answers a reader that opens it with end-of-file (so a command
    that opens it ends instead of hanging) and records that it was opened."""
    os.mkfifo(path)
    opened: list[bool] = []
    done = threading.Event()

    def answer() -> None:
        while not done.wait(0.05):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # no reader yet
                    continue
                return
            opened.append(True)
            os.close(fd)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield opened
    finally:
        done.set()
        thread.join()


def _argv(command: str, name: str, bad: Path, good: dict[str, Path]) -> list[str]:
    """A command line with ``bad`` for parameter ``name`` and a valid value for every other required one."""
    [(_, click_command)] = [(c, cmd) for c, cmd in _commands() if c == command]
    argv = command.split()
    for param in click_command.params:
        if param.name != name and not param.required:
            continue
        if param.name == name:
            value = str(bad)
        elif (command, param.name) in PATH_PARAMETERS:
            kind = PATH_PARAMETERS[(command, param.name)][0]
            value = str(good["dir" if kind == DIRECTORY else "file"])
        else:
            value = "8" if "int" in str(param.type_descriptor.annotation) else "x"
        argv += [value] if param.param_type_name == "argument" else [param.opts[0], value]
    return argv


def _expected(command: str, name: str, found: str) -> str:
    kind, what = PATH_PARAMETERS[(command, name)]
    return f"is {found}, expected {what or kind}"


def _goods(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "good").mkdir()
    (tmp_path / "good.jsonl").write_text('{"input_ids": [5, 2]}\n')
    return {"dir": tmp_path / "good", "file": tmp_path / "good.jsonl"}


#: Every path parameter given a named pipe; each that must be a file or a folder also given the other.
CASES = [(*key, "pipe") for key in sorted(PATH_PARAMETERS)] + [
    (*key, "other kind") for key, (kind, _) in sorted(PATH_PARAMETERS.items()) if kind in (FILE, DIRECTORY)
]


@pytest.mark.parametrize(("command", "name", "given"), CASES)
def test_a_path_of_the_wrong_kind_is_refused_before_it_is_opened(
    command: str,
    name: str,
    given: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    goods = _goods(tmp_path)
    with contextlib.ExitStack() as stack:
        if given == "pipe":
            bad, found = tmp_path / "pipe.jsonl", FIFO
            opened = stack.enter_context(_watched_fifo(bad))
        elif PATH_PARAMETERS[(command, name)][0] == FILE:
            bad, found, opened = tmp_path / "a-folder.yaml", DIRECTORY, []
            bad.mkdir()
        else:
            bad, found, opened = tmp_path / "a-file", FILE, []
            bad.write_text("keep")
        code = main(_argv(command, name, bad, goods))
    err = capsys.readouterr().err.strip()
    assert (code, err) == (2, f"error: {bad}: {_expected(command, name, found)}")
    assert not opened  # a pipe never opened, a file never written
    assert given == "pipe" or bad.is_dir() or bad.read_text() == "keep"


#: A name of every file input format (``INPUT_FORMATS``): the kind is asked before the name picks a reader.
INPUT_NAMES = [f"pipe{f.suffixes[0]}" for f in INPUT_FORMATS if f.suffixes]


@pytest.mark.parametrize("name", INPUT_NAMES)
@pytest.mark.parametrize("command", ["pack", "plan"])
def test_an_input_of_every_format_given_as_a_named_pipe_is_never_opened(
    command: str,
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    with _watched_fifo(tmp_path / name) as opened:
        code = main(_argv(command, "inputs", tmp_path / name, _goods(tmp_path)))
    err = capsys.readouterr().err.strip()
    assert (code, err) == (2, f"error: {tmp_path / name}: {_expected(command, 'inputs', FIFO)}")
    assert not opened


def test_the_library_refuses_a_named_pipe_and_a_tokenizer_file(tmp_path: Path) -> None:
    """``bridgepack.pack`` and the readers say the same as the CLI, without opening the pipe."""
    pipe = tmp_path / "in.jsonl"
    with _watched_fifo(pipe) as opened:
        with pytest.raises(InputError, match=re.escape(f"{pipe}: is {FIFO}, expected a file or a directory")):
            bridgepack.pack(pipe, tmp_path / "out", 64)
        folder = tmp_path / "packed"
        folder.mkdir()
        os.symlink(pipe, folder / "training_64.idx.parquet")
        with pytest.raises(InputError, match=re.escape(f"is {FIFO}, expected a file")):
            PackedSource(folder)
    assert not opened and not (tmp_path / "out").exists()
    tokenizer_file = tmp_path / "tokenizer.json"
    tokenizer_file.write_text("{}")
    with pytest.raises(InputError) as refused:
        load_tokenizer(tokenizer_file)
    assert str(refused.value) == f"{tokenizer_file}: is a file, expected {TOKENIZER_DIRECTORY}"
