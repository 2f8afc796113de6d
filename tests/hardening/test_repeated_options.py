"""Options given twice, or contradicting each other, are refused in every command; typed versions are PEP 440.

Before: click kept the last value of a repeated option and converted only that one, so
``bridgepack pack in.jsonl -n 0 -n 8`` packed at 8 without a word about the 0, and
``--strip-whitespace --no-strip-whitespace`` meant the second. The sweep is generated from the Typer app:
every option of every command, given twice (by its long and its short name, or as a flag and its
negation), is one line, exit 2, naming both, before anything is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer

from bridgepack.cli import app, main

#: Options meant to be repeated are declared ``multiple``; these are the ones found (the sweep skips them).
REPEATABLE = {"doctor --stack", "doctor --allow", "correlate run --metric"}


def _options() -> list[tuple[tuple[str, ...], Any]]:
    found: list[tuple[tuple[str, ...], Any]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))
        if getattr(command, "commands", None) is None:
            for param in command.params:
                if param.param_type_name == "option" and param.opts[0] not in ("--help", "-h"):
                    found.append((path, param))

    walk(typer.main.get_command(app), ())
    return found


def _twice(param: Any) -> tuple[list[str], str, str]:
    """Two occurrences of ``param``: ``(argv, first, second)`` by different names where it has them."""
    names = [*param.opts, *param.secondary_opts]
    first, second = names[0], names[-1] if len(names) > 1 else names[0]
    if param.is_flag:
        return [first, second], first, second
    return [first, "1", second, "2"], f"{first} 1", f"{second} 2"


OPTIONS = [
    pytest.param(path, param, id=f"{' '.join(path)} {param.opts[0]}")
    for path, param in _options()
    if not param.multiple
]


def test_the_sweep_covers_every_command() -> None:
    commands = {p.values[0] for p in OPTIONS}
    assert len(OPTIONS) >= 150 and len(commands) >= 17
    multiple = {f"{' '.join(path)} {p.opts[0]}" for path, p in _options() if p.multiple}
    assert multiple - {m for m in multiple if m.startswith("curves")} == REPEATABLE


@pytest.mark.parametrize(("path", "param"), OPTIONS)
def test_an_option_given_twice_is_refused(
    path: tuple[str, ...],
    param: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing may be written: the refusal comes before the command runs
    argv, first, second = _twice(param)
    code = main([*path, *argv])
    err = capsys.readouterr().err
    long = next((o for o in param.opts if o.startswith("--")), param.opts[0])
    assert code == 2, err
    assert err == f"error: {long} is given twice ({first}, then {second}); give it once\n"
    assert list(tmp_path.iterdir()) == []


def test_a_repeated_option_no_longer_hides_a_refused_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.jsonl").write_text('{"input_ids": [5, 2]}\n')
    argv = ["pack", str(tmp_path / "a.jsonl"), "--out", str(tmp_path / "o"), "-n", "0", "--pack-size=8"]
    assert main(argv) == 2
    assert (
        capsys.readouterr().err
        == "error: --pack-size is given twice (-n 0, then --pack-size=8); give it once\n"
    )
    assert not (tmp_path / "o").exists()


def test_repeatable_options_still_repeat(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "doctor",
        "--stack",
        "megatron-bridge==0.6.2",
        "--stack",
        "megatron-core==0.19.2",
        "--format",
        "json",
    ]
    assert main(argv) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    "version",
    [
        "0.6.2garbage",
        "0.6..2",
        "latest",
        "1.0+",
        "",
        "0.6.2 0.6.3",
        "1.0.0~rc1",
        "1.0+cu12+x",
        ".6",
        "0.6.",
        "٣.٠",
    ],
)
def test_a_malformed_version_is_refused(version: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--stack", f"megatron-bridge=={version}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --stack ") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "version", ["0.6.2", "2.6.0+cu124", "0.16.1rc2+cu12", "1.0-rc1", "1.0.post2", "1!2.0.dev3"]
)
def test_pep440_versions_are_read(version: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--stack", f"megatron-bridge=={version}", "--format", "json"]) == 0
    capsys.readouterr()


def test_a_component_given_twice_in_a_stack_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--stack", "megatron-bridge==0.6.2,megatron_bridge==0.5.0"]) == 2
    assert capsys.readouterr().err == (
        "error: --stack gives megatron-bridge twice (megatron-bridge==0.6.2, then megatron_bridge==0.5.0); "
        "give it once\n"
    )
