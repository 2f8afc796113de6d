"""Options and output helpers shared by every command, so all commands behave alike.

* ``--format text|json`` is always the output format (:data:`FormatOption`); JSON goes to stdout,
  carries ``"schema_version"`` and never mixes with progress text (:func:`emit_json`).
* Text is a table only on a terminal (:func:`stdout_is_terminal`); through a pipe or into a log it is plain,
  stable text that is never wrapped or cut, whatever ``COLUMNS`` says: one record per block, ``key: value``
  lines (:func:`print_blocks`), so an agent or a CI job copies whole keys.
* Progress and logs go to stderr (:data:`err_console`); ``--quiet`` silences them (:data:`QuietOption`), and
  only them: a command's report, its warnings and its errors print all the same. Every command takes it.
* Every numeric option is a :func:`number_option`: its range is in --help and checked at parse time.
* A library error names library parameters; :func:`flag` is the flag each one is on the command line.
"""

from __future__ import annotations

import enum
import importlib
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import typer

from bridgepack._console import literal_console
from bridgepack._ranges import Range
from bridgepack.results import JsonResult


def _click_exception_type() -> type[Exception]:
    """Click's usage-error base: typer >= 0.26 vendors click as ``typer._click``, older typer uses click."""
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            exc_type: type[Exception] = importlib.import_module(module).ClickException
            return exc_type
        except ImportError:
            continue
    raise ImportError("neither typer._click nor click is importable")  # pragma: no cover


ClickException = _click_exception_type()

#: stdout and stderr; user text in them is printed literally (bridgepack._console), styles come as Text.
#: Neither
#: wraps a line at the terminal's width: a path or a key cut in two is a wrong path or key for a reader.
out_console = literal_console(soft_wrap=True)
err_console = literal_console(stderr=True, soft_wrap=True)


@dataclass
class _State:
    debug: bool = False


state = _State()


class OutputFormat(str, enum.Enum):
    """The output format of a command's result."""

    text = "text"
    json = "json"


FormatOption = typer.Option(OutputFormat.text, "--format", help="Output format: text (tables) or json.")
QuietOption = typer.Option(
    False, "--quiet", "-q", help="No progress bars or log lines on stderr (the report still prints)."
)


def stdout_is_terminal() -> bool:
    """Whether stdout is an interactive terminal. The file descriptor decides, not ``FORCE_COLOR`` or
    ``COLUMNS``: a table folded to the width a CI job pretends to have would cut keys in two."""
    try:
        return os.isatty(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # replaced by a test runner, closed, or not a real file
        return False


def print_lines(lines: Iterable[str]) -> None:
    """Plain lines to stdout, as they are (no markup, no wrapping, no styles)."""
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    sys.stdout.flush()


def print_blocks(blocks: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> None:
    """Records as plain text: per record its heading line, then one ``key: value`` line per field, a blank
    line between records::

        pack size 1024 (recommended)
        packs: 44
        efficiency: 98.75%
    """
    lines: list[str] = []
    for n, (heading, fields) in enumerate(blocks):
        lines += ([""] if n else []) + [heading] + [f"{key}: {value}" for key, value in fields]
    print_lines(lines)


def emit_json(result: JsonResult) -> None:
    """Write ``result.to_dict()`` to stdout as one JSON document, as it is: the library owns its shape and
    its ``schema_version`` (:mod:`bridgepack.results`), the CLI only prints it."""
    doc = result.to_dict()
    sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode())
    sys.stdout.write("\n")
    sys.stdout.flush()


#: Library parameters whose flag is not ``--`` + the name in kebab case.
_FLAGS = {
    "cost_model": "--model",
    "out_dir": "--out",
    "profile": "--tolerance",
    "runs": "--run",
    "count": "--dump-batches",
    "variant": "--collate-variant",
    "sequences": "--decode",
    "rule_id": "--explain",
}


def flag(parameter: str) -> str:
    """The command-line flag of a library parameter: ``pack_size`` -> ``--pack-size``."""
    return _FLAGS.get(parameter) or "--" + parameter.replace("_", "-")


def number_option(default: Any, *decls: str, help: str, range: Range, **kwargs: Any) -> Any:
    """A numeric ``typer.Option`` whose range is shown in --help and checked before the command runs.

    Out of range -- 0 or negative sizes, 2**64, nan, inf -- is a one-line usage error (exit 2) naming the
    option, raised while the options are parsed: before any other check, file or computation.
    """
    name = next((d for d in decls if d.startswith("--")), decls[0])

    def check(value: Any) -> Any:
        if value is None:
            return None
        for item in value if isinstance(value, (list, tuple)) else (value,):
            range.check(name, item)
        return value

    return typer.Option(default, *decls, help=f"{help} [{range.text()}]", callback=check, **kwargs)
