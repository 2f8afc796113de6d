"""``bridgepack._typed``: one way to check a value against its field's declared type, for the pack options and
the doctor's config view alike."""

from __future__ import annotations

import doctest
import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bridgepack._typed as typed
from bridgepack._typed import Mismatch, conform, conform_fields, expected
from bridgepack.errors import UsageError


class Colour(enum.Enum):
    red = "red"
    blue = "blue"


def test_worked_examples() -> None:
    assert doctest.testmod(typed, optionflags=doctest.IGNORE_EXCEPTION_DETAIL).failed == 0


@given(st.integers())
def test_an_integer_is_an_integer_and_a_number(value: int) -> None:
    assert conform(value, int) is value
    assert conform(value, int | None) is value
    converted = conform(value, float)
    assert type(converted) is float and converted == float(value)


@given(st.one_of(st.booleans(), st.floats(), st.text(), st.binary(), st.none(), st.lists(st.integers())))
def test_nothing_else_is_an_integer(value: Any) -> None:
    with pytest.raises(Mismatch, match=r"^an integer$"):
        conform(value, int)


@given(st.one_of(st.integers(), st.floats()))
def test_numbers_are_text_only_where_asked(value: float) -> None:
    with pytest.raises(Mismatch):
        conform(value, str)
    assert conform(value, str | None, numbers_as_text=True) == str(value)


@pytest.mark.parametrize(
    ("value", "hint", "fitted"),
    [
        ("tok", Path | None, Path("tok")),
        (Path("tok"), Path, Path("tok")),
        ("blue", Colour, Colour.blue),
        (Colour.red, Colour | None, Colour.red),
        (["a", Path("b")], tuple[Path, ...], (Path("a"), Path("b"))),
        ("ray", Literal["local", "ray"], "ray"),
        ({"k": 1}, dict[str, Any], {"k": 1}),
        (None, int | None, None),
        (7, str | int, 7),  # an exact type first: not "7"
        (object, Any, object),
    ],
)
def test_conversions_are_what_a_parser_does(value: Any, hint: Any, fitted: Any) -> None:
    assert conform(value, hint, numbers_as_text=True) == fitted


@pytest.mark.parametrize(
    ("value", "hint", "words"),
    [
        (3, Path, "a path"),
        ("green", Colour, "one of red, blue"),
        ([3], tuple[Path, ...], "a list of paths"),
        ("spark", Literal["local", "ray"], "one of local, ray"),
        (1, bool, "True or False"),
        (None, bool, "True or False"),
        ("3", float | None, "a number"),
        (2.5, int | str, "an integer or a string"),
        ([1], dict[str, Any], "a dict"),
        (1, Colour | None, "one of red, blue"),
    ],
)
def test_a_mismatch_says_what_would_fit(value: Any, hint: Any, words: str) -> None:
    with pytest.raises(Mismatch) as caught:
        conform(value, hint)
    assert caught.value.expected == words == expected(hint)


@dataclass(frozen=True)
class _Settings:
    path: Path | None = None
    colour: Colour = Colour.red
    count: int = 1

    def __post_init__(self) -> None:
        conform_fields(self)


def test_fields_are_converted_in_place_and_a_wrong_one_is_named() -> None:
    made = _Settings("a/b", "blue")  # type: ignore[arg-type]
    assert (made.path, made.colour, made.count) == (Path("a/b"), Colour.blue, 1)
    with pytest.raises(UsageError) as caught:
        _Settings(count=True)
    assert str(caught.value) == "count must be an integer, got True"
    assert caught.value.render(lambda name: f"--{name}") == "--count must be an integer, got True"
