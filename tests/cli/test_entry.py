"""The CLI entry point: version, help, and the exit-code mapping of the error hierarchy."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bridgepack import __version__
from bridgepack.cli import main


def test_version_prints_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"bridgepack {__version__}"


def test_unknown_command_is_usage_error() -> None:
    assert main(["no-such-command"]) == 2


def test_module_entry_runs() -> None:
    result = subprocess.run([sys.executable, "-m", "bridgepack", "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.startswith("bridgepack ")


def test_commands_are_registered_one_way() -> None:
    """Every command module exposes ``COMMAND`` (a command's function or a group's Typer app) and registers
    nothing itself: ``bridgepack.cli._commands`` adds each under its module's name."""
    import importlib

    import typer

    from bridgepack.cli._commands import COMMAND_MODULES

    for name in COMMAND_MODULES:
        module = importlib.import_module(f"bridgepack.cli.{name}")
        assert callable(module.COMMAND) or isinstance(module.COMMAND, typer.Typer), name
        assert not hasattr(module, "register"), f"bridgepack.cli.{name} registers itself"
