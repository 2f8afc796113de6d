"""How a value is spelled on a command line: ``true``/``false``, ``null``, numbers as Python prints them."""

from __future__ import annotations

from typing import Any


def format_value(value: Any) -> str:
    """Spell a value as both launchers read it (Hydra-style overrides and MLM argparse flags)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)
