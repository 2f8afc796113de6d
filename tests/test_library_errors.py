"""Library errors name the library's parameters, never the command line's flags.

A Python user who calls ``bridgepack.compare_curves(..., profile="x")`` must read ``profile``, not
``--tolerance``; the CLI renders the same error with its flag (:func:`bridgepack.errors.param`,
``bridgepack.cli._common.flag``). The walk reads every error built outside ``bridgepack.cli`` and refuses a
``--flag`` spelled in its message; Megatron-LM's own flags (``translate``'s subject) are not bridgepack's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import bridgepack
from bridgepack.cli._common import flag
from bridgepack.errors import UsageError, param

SRC = Path(bridgepack.__file__).parent
#: A bridgepack flag inside a message: ``--name`` after a space, quote or parenthesis.
_FLAG = re.compile(r"(?:^|[\s(\"'])--[a-z][a-z-]+")


#: bridgepack's error classes: a message is whatever one of them is built with, raised or returned.
_ERRORS = frozenset({"BridgepackError", "UsageError", "InputError", "DataError"})


def _message_strings(node: ast.Call) -> list[str]:
    name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
    if name not in _ERRORS:
        return []
    return [
        part.value
        for arg in node.args
        for part in ast.walk(arg)
        if isinstance(part, ast.Constant) and isinstance(part.value, str)
    ]


def flags_in_library_errors(src: Path = SRC) -> list[str]:
    found = []
    for path in sorted(src.rglob("*.py")):
        relative = path.relative_to(src)
        if relative.parts[0] in ("cli", "translate"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                found += [
                    f"{relative}:{node.lineno}: {text!r}"
                    for text in _message_strings(node)
                    if _FLAG.search(text)
                ]
    return found


def test_no_library_error_spells_a_flag() -> None:
    found = flags_in_library_errors()
    assert not found, "library errors that name a CLI flag (use bridgepack.errors.param):\n" + "\n".join(
        found
    )


def test_the_walk_sees_a_flag(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text('def f():\n    raise UsageError(f"--pack-size must be > 0, got {1}")\n')
    assert flags_in_library_errors(tmp_path) == ["m.py:2: '--pack-size must be > 0, got '"]


@pytest.mark.parametrize(
    ("call", "library", "cli"),
    [
        (
            lambda: bridgepack.compare_curves([1.0], [1.0], profile="x"),
            "profile: expected",
            "--tolerance: expected",
        ),
    ],
)
def test_one_error_two_spellings(call, library: str, cli: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError) as caught:
        call()
    assert str(caught.value).startswith(library)
    assert caught.value.render(flag).startswith(cli)


def test_param_renders_as_the_flag() -> None:
    error = UsageError(f"{param('runs')} 'a': no such run")
    assert (str(error), error.render(flag)) == ("runs 'a': no such run", "--run 'a': no such run")
