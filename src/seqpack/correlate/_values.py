"""How a value is spelled on a command line and read back: ``true``/``false``, ``null``, numbers."""

from __future__ import annotations

from typing import Any


def format_value(value: Any) -> str:
    """Spell a value as both launchers read it (Hydra-style overrides and MLM argparse flags)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def parse_value(text: str) -> Any:
    """Read a command-line value back: booleans, ``null``, integers, floats, else the text itself."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "none"):
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            continue
    return text
