"""The table of commands: each command module exposes ``register(app)``; this file lists them in order."""

from __future__ import annotations

import importlib

import typer

# One line per command module (``seqpack.cli.<name>``), in the order ``seqpack --help`` shows them.
COMMAND_MODULES: list[str] = [
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
]


def register_all(app: typer.Typer) -> None:
    """Import every command module and let it add its command(s) to ``app``."""
    for name in COMMAND_MODULES:
        importlib.import_module(f"seqpack.cli.{name}").register(app)
