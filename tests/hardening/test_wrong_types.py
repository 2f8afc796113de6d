"""Values of the wrong type in golden files and metric tables are refused, never read as something else.

Before: a boolean loss (``true``) was counted as a step not recorded; ``"9.6"`` was read as 9.6 in a
golden file (whose values are JSON numbers, ``"nan"`` its one word); ``step_interval: 0`` laid every value
on one step; negative steps were kept; a metric or a step key given twice kept the last. Each is now exit 1
naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridgepack.cli import main

GOLDEN_BAD = {
    "boolean value": (
        '{"lm loss": {"start_step": 1, "step_interval": 1, "values": [true, 9.5]}}',
        "not a number: True",
    ),
    "string value": (
        '{"lm loss": {"start_step": 1, "step_interval": 1, "values": ["9.6", 9.5]}}',
        "not a number: '9.6'",
    ),
    "negative start": (
        '{"lm loss": {"start_step": -5, "step_interval": 1, "values": [9.6]}}',
        "step -5 is out of range",
    ),
    "zero interval": (
        '{"lm loss": {"start_step": 1, "step_interval": 0, "values": [9.6, 9.5]}}',
        "'step_interval' must be >= 1",
    ),
    "negative interval": (
        '{"lm loss": {"start_step": 9, "step_interval": -1, "values": [9.6]}}',
        "'step_interval' must be >= 1",
    ),
    "negative step key": ('{"lm loss": {"values": {"-3": 9.6}}}', "step -3 is out of range"),
    "metric twice": (
        '{"lm loss": {"values": [9.6]}, "lm loss": {"values": [1.0]}}',
        "key 'lm loss' is given twice",
    ),
    "step key twice": ('{"lm loss": {"values": {"10": 9.6, "10": 9.5}}}', "key '10' is given twice"),
    "same step spelled twice": ('{"lm loss": {"values": {"10": 9.6, "010": 9.5}}}', "a step is given twice"),
    "boolean in a step map": ('{"lm loss": {"values": {"1": false}}}', "not a number: False"),
}
TABLE_BAD = {
    "jsonl boolean loss": (
        "run.jsonl",
        b'{"_step": 1, "lm loss": 9.5}\n{"_step": 2, "lm loss": true}\n',
        "expected a number, found True",
    ),
    "jsonl negative step": (
        "run.jsonl",
        b'{"_step": -1, "lm loss": 9.5}\n',
        "expected an integer step, found -1",
    ),
    "csv negative step": (
        "run.csv",
        b"step,lm loss\n1,9.5\n-2,9.4\n",
        "expected an integer step, found '-2'",
    ),
    "jsonl boolean step": (
        "run.jsonl",
        b'{"_step": true, "lm loss": 9.5}\n',
        "expected an integer step, found True",
    ),
}


@pytest.mark.parametrize(("doc", "message"), GOLDEN_BAD.values(), ids=list(GOLDEN_BAD))
def test_golden_values_of_the_wrong_type(
    doc: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "g.json").write_text(doc)
    assert main(["curves", "show", str(tmp_path / "g.json"), "--input-format", "golden"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'g.json'}") and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize(("name", "data", "message"), TABLE_BAD.values(), ids=list(TABLE_BAD))
def test_table_values_of_the_wrong_type(
    name: str, data: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / name).write_bytes(data)
    assert main(["curves", "show", str(tmp_path / name)]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_golden_nan_spellings_are_still_steps_not_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "g.json").write_text(
        '{"lm loss": {"start_step": 1, "step_interval": 1, "values": [9.6, "nan", NaN]}}'
    )
    assert main(["curves", "show", str(tmp_path / "g.json"), "--input-format", "golden"]) == 0
    assert 'steps marked "nan" (not recorded): lm loss 2' in capsys.readouterr().out
