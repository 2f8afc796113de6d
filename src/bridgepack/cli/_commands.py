"""The table of commands: each command module exposes ``COMMAND`` (the function of a command, or the Typer
app of a command group); this file lists them in order and registers them, one way for all.

A command's module imports what the command needs (numba kernels, the text stack, the doctor's rule
tables ...), ~1 s in all. A run that names its command imports that module alone, ``--version`` none
(:func:`commands_for`); ``bridgepack --help``, a mistyped command and the tests' ``bridgepack.cli.app`` get
every command.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Sequence

import typer

# One line per command module (``bridgepack.cli.<name>``), in the order ``bridgepack --help`` shows them. Each
# module's ``COMMAND`` is the command of its own name (``curves``, ``correlate``, ``translate``: groups).
COMMAND_MODULES: tuple[str, ...] = (
    "pack",
    "inspect",
    "plan",
    "doctor",
    "translate",
    "curves",
    "correlate",
    "train",
    "diff",
    "fingerprint",
    "env",
    "verify",
    "clean",
    "demo",
)


def register(app: typer.Typer, names: Sequence[str] = COMMAND_MODULES) -> None:
    """Import the command modules ``names`` and add each one's ``COMMAND`` to ``app`` under its name."""
    for name in names:
        command = importlib.import_module(f"bridgepack.cli.{name}").COMMAND
        if isinstance(command, typer.Typer):
            app.add_typer(command, name=name)
        else:
            app.command(name)(command)


def commands_for(args: Sequence[str]) -> tuple[str, ...]:
    """The command modules a run of ``args`` imports: the one it names; none when its root options ask for
    the version and not for help (``--version`` is eager: it prints before any command is looked at, and the
    commands' imports would be 0.9 s of its 1 s); else every one (root help, no command, an unknown one:
    click suggests the nearest command by name)."""
    root = set(itertools.takewhile(lambda arg: arg.startswith("-"), args))
    if "--version" in root and not root & {"-h", "--help"}:
        return ()
    command = next((arg for arg in args if not arg.startswith("-")), None)
    return (command,) if command in COMMAND_MODULES else COMMAND_MODULES
