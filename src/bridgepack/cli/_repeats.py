"""Options given more than once are refused, in every command, before the command runs.

click keeps the last value of an option given twice and converts only that one, so
``bridgepack pack in.jsonl -n 0 -n 8`` packed at 8 and never said that 0 was refused, and
``--strip-whitespace --no-strip-whitespace`` silently meant the second. A command line that says two
things about one setting is a usage error (exit 2) naming both, whatever the command: the check walks the
app's own parameters, so a command added later is covered. Options declared ``multiple`` (``doctor
--stack``, ``curves compare --run``) and counters are meant to repeat and are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bridgepack.errors import UsageError


def _options(command: Any) -> dict[str, Any]:
    """Every option name of ``command`` (``--pack-size``, ``-n``, ``--no-strip-whitespace``) -> its param."""
    names: dict[str, Any] = {}
    for param in getattr(command, "params", []):
        if getattr(param, "param_type_name", "") != "option":
            continue
        for name in (*param.opts, *getattr(param, "secondary_opts", ())):
            names[name] = param
    return names


def _takes_value(param: Any) -> bool:
    return not (getattr(param, "is_flag", False) or getattr(param, "count", False))


def refuse_repeated(root: Any, args: Sequence[str]) -> None:
    """Raise :class:`UsageError` when ``args`` give one option (by any of its names) twice."""
    command = root
    options = _options(command)
    seen: dict[int, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            return
        subcommands = getattr(command, "commands", None)
        if subcommands and not arg.startswith("-") and arg in subcommands:
            command = subcommands[arg]
            options, seen = _options(command), {}
            continue
        if not arg.startswith("-") or arg == "-":
            continue
        name, has_value = (
            (arg.split("=", 1)[0], True) if arg.startswith("--") and "=" in arg else (arg, False)
        )
        param = options.get(name)
        if param is None and not arg.startswith("--") and len(arg) > 2:  # -j4: a short option and its value
            name, has_value = arg[:2], True
            param = options.get(name)
        if param is None:
            continue  # click reports an unknown option itself
        given = arg
        if _takes_value(param) and not has_value and i < len(args):
            given = f"{arg} {args[i]}"
            i += 1
        if getattr(param, "multiple", False) or getattr(param, "count", False):
            continue
        key = id(param)
        if key in seen:
            flag = next((o for o in param.opts if o.startswith("--")), name)
            raise UsageError(f"{flag} is given twice ({seen[key]}, then {given}); give it once")
        seen[key] = given
