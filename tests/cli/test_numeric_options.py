"""Every numeric option of every command: its range is in --help, and a value outside it is refused.

The options are discovered from the Typer app, so a command added later is swept too.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Any

import pytest
import typer

from bridgepack.cli import app, main

BAD_VALUES = ["0", "-1", str(2**64), "nan", "inf"]


def _number_type(param: Any) -> str | None:
    """``"int"``, ``"float"`` or None for a click/typer parameter."""
    descriptor = getattr(param, "type_descriptor", None)  # typer >= 0.26: typed descriptors
    if descriptor is not None:
        annotation = descriptor.annotation
        if typing.get_origin(annotation) in (typing.Union, types.UnionType):
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        return {int: "int", float: "float"}.get(annotation)
    name = getattr(getattr(param, "type", None), "name", "")  # click types
    return {"integer": "int", "float": "float"}.get(name)


def _numeric_options() -> list[tuple[tuple[str, ...], str, str, str]]:
    """(command path, option, help, int|float) for every numeric option of every command."""
    found = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))
        if getattr(command, "commands", None) is None:
            for param in command.params:
                kind = _number_type(param)
                if getattr(param, "opts", None) and param.opts[0].startswith("-") and kind:
                    long = next(o for o in param.opts if o.startswith("--"))
                    found.append((path, long, param.help or "", kind))

    walk(typer.main.get_command(app), ())
    return found


OPTIONS = [pytest.param(*o, id=f"{' '.join(o[0])} {o[1]}") for o in _numeric_options()]


@pytest.fixture(scope="module")
def command() -> Any:
    return typer.main.get_command(app)


def _run(command: Any, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> int:
    """``bridgepack.cli.main`` (its exit-code mapping), on a command tree built once instead of per call."""
    import bridgepack.cli as cli

    monkeypatch.setattr(cli, "app", lambda **kw: command.main(**kw))
    return main(argv)


def test_options_are_discovered() -> None:
    commands = {p.values[0] for p in OPTIONS}
    assert len(OPTIONS) >= 55 and {("pack",), ("doctor",), ("train",), ("curves", "compare")} <= commands


@pytest.mark.parametrize(("path", "option", "help_text", "kind"), OPTIONS)
def test_range_is_in_help(path: tuple[str, ...], option: str, help_text: str, kind: str) -> None:
    assert re.search(r"\[(\S+<=?x\S*|x>=?\S+)[];]", help_text), f"{' '.join(path)} {option}: {help_text!r}"


@pytest.mark.parametrize(("path", "option", "help_text", "kind"), OPTIONS)
def test_values_outside_the_range_are_a_one_line_usage_error(
    path: tuple[str, ...],
    option: str,
    help_text: str,
    kind: str,
    command: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lo = re.search(r"\[(-?\d+)<", help_text) or re.search(r"\[x>=?(-?\d+)", help_text)
    for value in BAD_VALUES:
        if value == "0" and lo is not None and int(lo.group(1)) == 0 and "0<x" not in help_text:
            continue  # 0 is inside this option's range (a seed, --ulps, --clip-grad's "off")
        code = _run(command, monkeypatch, [*path, f"{option}={value}"])
        err = capsys.readouterr().err
        assert code == 2, f"{' '.join(path)} {option}={value}: exit {code}: {err}"
        assert "Traceback" not in err
        if kind == "float" or value not in ("nan", "inf"):  # an int option's "nan" is the parser's refusal
            (line,) = err.strip().splitlines()
            assert line.startswith(f"error: {option}: expected ") and " found " in line, line
