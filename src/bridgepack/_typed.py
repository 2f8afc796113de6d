"""One way to check a value against the type its field declares: the options ``bridgepack pack`` takes
(:class:`bridgepack.data.pipeline.PackOptions`'s groups) and the fields of the doctor's config view.

A type checker reads the annotations; a Python caller, a YAML file or an override is not bound by them, and a
wrong value used as is fails deep inside (``eos_id=2.5`` truncated, ``workers=1.5`` in a pool size) or, for a
config, means another setting than the user thinks. :func:`conform` reads the annotation *object*
(:func:`typing.get_type_hints`), not its spelling, so ``int | None``, ``Optional[int]`` and a forward
reference are one type.

What is converted is what a command line's parser converts, nothing more::

    hint                 accepts                                 gives
    int                  an int (True is no integer)             it
    float                an int or a float                       a float
    bool / str           a bool / a str                          it
    Path                 a str or an os.PathLike                 a Path
    an Enum              a member, the value of one, or what     the member ("split" -> TooLong.split)
                         its ``_missing_`` takes
    Literal[a, b]        a or b                                  it
    tuple[X, ...]        a tuple or a list, each item an X       a tuple
    X | None             None, or an X                           as above
    any other class      an instance of it                       it

``numbers_as_text`` also takes a number where text is declared (a YAML ``hf_model_id: 7`` is read as an
int); ``"3"`` is never a number.
"""

from __future__ import annotations

import enum
import os
import types
import typing
from dataclasses import fields
from pathlib import PurePath
from typing import Any

from bridgepack.errors import UsageError, param, shown


class Mismatch(ValueError):
    """A value that does not fit its declared type; ``expected`` says what would, in words."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


def _union_args(hint: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return typing.get_args(hint)
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def conform(value: Any, hint: Any, *, numbers_as_text: bool = False) -> Any:
    """``value`` as the field declared ``hint`` holds it (see the module's table), else :class:`Mismatch`.

    >>> from pathlib import Path
    >>> conform("data/tok", Path | None), conform(3, float), conform(None, int | None)
    (PosixPath('data/tok'), 3.0, None)
    >>> conform(True, int)
    Traceback (most recent call last):
    ...
    Mismatch: an integer
    """
    if hint is Any:
        return value
    options = _union_args(hint)
    if options is not None:
        if value is None and type(None) in options:
            return None
        kinds = [option for option in options if option is not type(None)]
        exact = [option for option in kinds if isinstance(option, type) and type(value) is option]
        for option in [*exact, *kinds]:  # an exact type first: ``str | int`` keeps 7 an int
            try:
                return conform(value, option, numbers_as_text=numbers_as_text)
            except Mismatch:
                continue
        raise Mismatch(expected(hint))
    return _conform_one(value, hint, numbers_as_text)


def _conform_one(value: Any, hint: Any, numbers_as_text: bool) -> Any:
    """One type of a union (or the whole hint): the value it holds, else :class:`Mismatch`."""
    origin = typing.get_origin(hint)
    if origin is tuple and isinstance(value, (tuple, list)):
        args = typing.get_args(hint)
        item = args[0] if len(args) == 2 and args[1] is Ellipsis else Any
        try:
            return tuple(conform(v, item, numbers_as_text=numbers_as_text) for v in value)
        except Mismatch:
            raise Mismatch(expected(hint)) from None
    if origin is typing.Literal:
        fits = value in typing.get_args(hint)
    elif origin is not None:  # dict[str, Any], list[str]: the container, not its items
        fits = isinstance(value, origin)
    elif hint is type(None):
        fits = value is None
    elif hint is int:
        fits = isinstance(value, int) and not isinstance(value, bool)
    elif hint is float and _number(value):
        return float(value)
    elif hint is str and numbers_as_text and _number(value):
        return str(value)
    elif isinstance(hint, type) and issubclass(hint, PurePath) and isinstance(value, (str, os.PathLike)):
        return hint(value)
    elif isinstance(hint, type) and issubclass(hint, enum.Enum) and not isinstance(value, hint):
        try:  # a value, or what the enum's ``_missing_`` takes (a Layout by its name)
            return hint(value)
        except ValueError:
            raise Mismatch(expected(hint)) from None
    else:  # bool, str, any other class
        fits = isinstance(hint, type) and isinstance(value, hint)
    if not fits:
        raise Mismatch(expected(hint))
    return value


_WORDS: dict[Any, str] = {int: "an integer", float: "a number", bool: "True or False", str: "a string"}


def expected(hint: Any) -> str:
    """What ``hint`` takes, in words: ``an integer``, ``a path``, ``one of reject, truncate, split``; a
    union names its kinds but not None (the default a caller leaves out, never a value to suggest).

    >>> from pathlib import Path
    >>> expected(int | None), expected(tuple[Path, ...])
    ('an integer', 'a list of paths')
    """
    options = _union_args(hint)
    if options is not None:
        return " or ".join(expected(option) for option in options if option is not type(None))
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in typing.get_args(hint))
    if origin is tuple:
        args = typing.get_args(hint)
        item = expected(args[0]) if args else "values"
        return f"a list of {item.removeprefix('an ').removeprefix('a ')}s"
    if hint in _WORDS:
        return _WORDS[hint]
    if hint is type(None):
        return "None"
    if isinstance(hint, type) and issubclass(hint, PurePath):
        return "a path"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(str(getattr(member, "shown", member.value)) for member in hint)
    return f"a {getattr(origin or hint, '__name__', str(hint))}"


_FIELD_TYPES: dict[type, dict[str, Any]] = {}


def field_types(cls: type) -> dict[str, Any]:
    """The declared type of each field of the dataclass ``cls``, resolved once."""
    found = _FIELD_TYPES.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _FIELD_TYPES[cls] = {f.name: hints[f.name] for f in fields(cls)}
    return found


def conform_fields(instance: Any) -> None:
    """Check every field of the dataclass ``instance`` against its declared type and store the converted
    value (a frozen one too: call it from ``__post_init__``); a :class:`UsageError` names the first field
    that does not fit, as ``workers must be an integer, got 1.5`` (the CLI: ``--workers``)."""
    for name, hint in field_types(type(instance)).items():
        value = getattr(instance, name)
        try:
            fitted = conform(value, hint)
        except Mismatch as mismatch:
            raise UsageError(f"{param(name)} must be {mismatch.expected}, got {shown(value)}") from None
        if fitted is not value:
            object.__setattr__(instance, name, fitted)
