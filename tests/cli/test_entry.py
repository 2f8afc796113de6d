"""The CLI entry point: version, help, and the exit-code mapping of the error hierarchy."""

from __future__ import annotations

import subprocess
import sys

import pytest

from seqpack import __version__
from seqpack.cli import main


def test_version_prints_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"seqpack {__version__}"


def test_unknown_command_is_usage_error() -> None:
    assert main(["no-such-command"]) == 2


def test_module_entry_runs() -> None:
    result = subprocess.run([sys.executable, "-m", "seqpack", "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.startswith("seqpack ")
