"""The one error hierarchy of bridgepack.

Every failure caused by user input is a :class:`BridgepackError`. The CLI maps the three kinds to the
project-wide exit codes in one place (``bridgepack.cli``), so library code never calls ``sys.exit``:

* :class:`UsageError` -- wrong flags or contradictory options (exit 2);
* :class:`InputError` -- input that cannot be read at all: missing file, not Parquet, bad YAML (exit 2);
* :class:`DataError` -- input that was read but is invalid: a bad row, a broken invariant (exit 1).

Messages are one line and name the file, the line/row/field, what was expected and what was found,
e.g. ``data.jsonl:17: field 'input_ids': expected a list of non-negative integers, found -3``.

A message that names a parameter marks it with :func:`param`: the library's own text names the
parameter (``pack_size must be a positive integer``), the CLI renders the same error with its flag
(``--pack-size must be a positive integer``, :meth:`BridgepackError.render`).
"""

from __future__ import annotations

import os
import re
import reprlib
from collections.abc import Callable

_NEWLINES = re.compile(r"\s*[\r\n]+\s*")
#: Brackets a parameter name inside a message: a private-use character, not whitespace (a message is
#: stripped) and never in a message otherwise.
_PARAM_MARK = "\ue000"
_PARAM = re.compile(f"{_PARAM_MARK}([A-Za-z_][A-Za-z0-9_]*){_PARAM_MARK}")


def param(name: str) -> str:
    """A library parameter named in an error message: ``str(error)`` shows ``name``, the CLI its flag."""
    return f"{_PARAM_MARK}{name}{_PARAM_MARK}"


class BridgepackError(Exception):
    """Base of every error bridgepack raises for bad input; ``exit_code`` is what the CLI returns.

    The message is made one line here, once for all raisers: text quoted from a library (an Arrow or
    YAML error spans several lines) would otherwise break the one-line contract.
    """

    exit_code: int = 1

    def __init__(self, message: str = "", *args: object) -> None:
        super().__init__(_NEWLINES.sub(" ", str(message)).strip(), *args)

    def __str__(self) -> str:
        return self.render(lambda name: name)

    def render(self, name_of: Callable[[str], str]) -> str:
        """The message with each :func:`param` it names spelled by ``name_of`` (the CLI: its flag)."""
        return _PARAM.sub(lambda m: name_of(m.group(1)), str(self.args[0]) if self.args else "")


class UsageError(BridgepackError):
    """Wrong usage: invalid option values or a combination of options that cannot work."""

    exit_code = 2


class InputError(BridgepackError):
    """Input that cannot be read: missing, unreadable, or not in any format bridgepack knows."""

    exit_code = 2


class DataError(BridgepackError):
    """Input that was read but is invalid (a malformed row, a broken invariant, a mismatch)."""

    exit_code = 1


def where(
    path: str | os.PathLike[str], line: int | None = None, *, row: int | None = None, field: str | None = None
) -> str:
    """Format the location prefix of a message: ``file:line``, ``file row N`` and ``field 'x'``.

    ``line`` is 1-based (text files); ``row`` is 0-based (Parquet rows), as tools print them.
    """
    text = os.fspath(path)
    if line is not None:
        text += f":{line}"
    if row is not None:
        text += f" row {row}"
    if field is not None:
        text += f": field '{field}'"
    return text


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel = 2
_SHOWN.maxstring = 40
_SHOWN.maxother = 40
_SHOWN.maxlist = _SHOWN.maxdict = _SHOWN.maxtuple = 4


def shown(value: object) -> str:
    """``repr`` of a value read from user input, for a message: one line, bounded in depth and length.

    A plain ``repr`` of a 1,000-level nested list recurses past Python's limit and of a 1 GB string makes
    a 1 GB message; this one prints ``[[[...]]]`` and ``'aaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaa'``.
    """
    return _SHOWN.repr(value)
