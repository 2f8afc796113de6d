"""User text is printed as it is: never read as rich markup or emoji codes, in text and JSON, on a terminal
and off it.

Before the fix ``error: b.jsonl:100: malformed JSON`` printed as ``error: b.jsonl💯 malformed JSON``, a
file named ``:smile:.log`` as a face, and the Bridge overrides ``pack`` prints for copying named
``💯o/training_8.idx.parquet`` for an ``--out`` of ``:100:o``; ``inspect`` of a folder named ``[red]o``
read the name as a glob character class and found no files. The sweep takes every command of the Typer
app and hands it a path made of markup and emoji codes where the command reads a file.
"""

from __future__ import annotations

import os
import pathlib
import pty
import re
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import orjson
import pytest
import typer

from _support.pack_inputs import write_jsonl
from bridgepack.cli import app, main

#: A file name rich would have changed every part of: an emoji code after a line number, style tags, a
#: closing tag (no slash: it is a file name), a bracketed word.
HOSTILE = "b.jsonl:100:[red]x[bold]:smile:[[x]] :1234: [link]"
#: Parameters that name an output, not an input: no command reads them first.
OUTPUTS = {"out", "plot", "html_out", "keep", "scratch_dir"}
#: Flags without which a command reads nothing.
NEEDS = {("verify",): ["--bridge"]}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _is_path(param: Any) -> bool:
    descriptor = getattr(param, "type_descriptor", None)  # typer >= 0.26
    if descriptor is not None:
        annotation = descriptor.annotation
        if typing.get_origin(annotation) in (typing.Union, types.UnionType):
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        if typing.get_origin(annotation) is list:
            annotation = typing.get_args(annotation)[0]
        return annotation is pathlib.Path
    return getattr(getattr(param, "type", None), "name", "") == "path"


def _argv(path: tuple[str, ...], params: list[Any], hostile: str, out: str) -> list[str] | None:
    """A command line that hands ``hostile`` to the command's first input (its required arguments, else
    its first path argument or option that is not an output); None when it reads no file."""
    argv = [*path, *NEEDS.get(path, [])]
    given = False
    for param in params:
        name = param.name
        if param.param_type_name == "argument" and (param.required or _is_path(param)):
            argv.append(hostile)
            given = True
        elif param.required and param.param_type_name == "option":
            long = next(o for o in param.opts if o.startswith("--"))
            argv += [long, out if name in OUTPUTS else ("8" if not _is_path(param) else hostile)]
    if not given:
        first = next((p for p in params if _is_path(p) and p.name not in OUTPUTS and p.opts), None)
        if first is None:
            return None
        argv += [next(o for o in first.opts if o.startswith("--")), hostile]
    return argv


def _commands() -> list[tuple[tuple[str, ...], list[Any]]]:
    found: list[tuple[tuple[str, ...], list[Any]]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))
        if getattr(command, "commands", None) is None:
            found.append((path, list(command.params)))

    walk(typer.main.get_command(app), ())
    return found


COMMANDS = [pytest.param(path, params, id=" ".join(path)) for path, params in _commands()]


def test_every_command_is_swept() -> None:
    names = {" ".join(p.values[0]) for p in COMMANDS}
    assert {
        "pack",
        "inspect",
        "plan",
        "doctor",
        "train",
        "diff",
        "curves show",
        "translate mlm-to-bridge",
    } <= names
    readers = [c for c in _commands() if _argv(c[0], c[1], "x", "o") is not None]
    assert len(readers) >= len(COMMANDS) - 1  # only `env` reads no file


@pytest.mark.parametrize(("path", "params"), COMMANDS)
def test_a_path_of_markup_and_emoji_codes_is_printed_as_it_is(
    path: tuple[str, ...],
    params: list[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = _argv(path, params, HOSTILE, "out")
    if argv is None:
        pytest.skip("reads no file")
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert HOSTILE in captured.err, captured.err
    assert "💯" not in captured.err + captured.out and "😄" not in captured.err + captured.out


def _pack_into(out: str, tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> str:
    write_jsonl(tmp_path / f"{HOSTILE}.jsonl", [{"input_ids": [5, 6, 2]}, {"input_ids": [7, 2]}])
    code = main(["pack", f"{HOSTILE}.jsonl", "--out", out, "-n", "8", "--format", fmt, "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_pack_output_and_overrides_name_the_folder_as_given(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    out = ":100:[red]o[/red]"
    stdout = _pack_into(out, tmp_path, fmt, capsys)
    if fmt == "json":
        doc = orjson.loads(stdout)
        assert doc["packed_path"] == f"{out}/training_8.idx.parquet"
    else:
        assert f"dataset.offline_packing_specs.packed_train_data_path={out}/training_8.idx.parquet" in stdout
        assert f"packed:   {out}/training_8.idx.parquet" in stdout
    code = main(["inspect", out, "--format", fmt])  # a folder named like a glob class is still the folder
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert out in captured.out and "💯" not in captured.out


def test_bad_line_in_a_file_named_with_markup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    name = f"{HOSTILE}.jsonl"
    Path(name).write_bytes(b'{"input_ids": [5, 2]}\n' * 99 + b'{"input_ids": [5,\n')
    assert main(["pack", name, "--out", "o", "-n", "8", "-q"]) == 1
    assert capsys.readouterr().err == f"error: {name}:100: malformed JSON (unexpected end of data)\n"


def _on_a_terminal(argv: list[str], cwd: Path) -> str:
    """Run ``bridgepack argv`` with stdout and stderr on one pseudo-terminal; what it showed, colours
    removed."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "400", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bridgepack", *argv], cwd=cwd, stdout=follower, stderr=follower, env=env
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(leader)
    return ANSI.sub("", b"".join(chunks).decode(errors="replace")).replace("\r", "")


def test_on_a_terminal_too(tmp_path: Path) -> None:
    name = f"{HOSTILE}.jsonl"
    (tmp_path / name).write_bytes(b'{"input_ids": [5, 2]}\n' * 99 + b'{"input_ids": [5,\n')
    shown = _on_a_terminal(["pack", name, "--out", "o", "-n", "8"], tmp_path)
    assert f"error: {name}:100: malformed JSON (unexpected end of data)" in shown, shown
    write_jsonl(tmp_path / name, [{"input_ids": [5, 6, 2]}, {"input_ids": [7, 2]}])
    shown = _on_a_terminal(["pack", name, "--out", ":1234:[b]o", "-n", "8"], tmp_path)
    assert "packed_train_data_path=:1234:[b]o/training_8.idx.parquet" in shown, shown
