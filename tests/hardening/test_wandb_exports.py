"""W&B exports (CSV and JSONL, one run or a panel of several): a step given twice, and column names that
only resemble a metric, never give a silent result (#29).

Before: two rows of one step kept the later value without a word, and two columns that both read as the
loss (``loss`` and ``train/loss``) kept whichever came last. Now each is one line, exit 1, the same from
every command that reads metric files (found in the Typer app: the commands with ``--input-format``).
Names that only resemble the loss (``train/loss_scale``, ``lm loss__MIN``, ``loss (smoothed)``) are never
read as it. The variants are generated: format x run layout x where the damage stands x its kind.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import typer

from bridgepack.cli import app, main

STEPS = [10, 20, 30, 40, 50]
LOSSES = [9.5, 9.1, 8.7, 8.2, 7.9]
#: Columns that look like the loss and are not: W&B's min/max band, a loss scale, smoothed copies.
LOOKALIKES = [
    "train/loss_scale",
    "loss_scale",
    "loss scale",
    "lm loss__MIN",
    "lm loss__MAX",
    "loss (smoothed)",
    "train/loss (smoothed)",
    "lm loss_smoothed",
    "train/loss_step",
    "lm loss validation",
    "eval/loss",
    "val_loss",
    "Loss",
]
#: Spellings that all mean the loss: two of them in one file are one metric given twice.
LOSS_SPELLINGS = ["lm loss", "lm-loss", "loss", "train/loss", "reduced_train_loss"]


def readers(path: Path, tmp_path: Path, run: str | None) -> dict[str, list[str]]:
    """Every command that reads a metric file, on ``path`` (``run``: the panel's run to read)."""
    pick = ["--run", run] if run else []
    return {
        "curves show": ["curves", "show", str(path), *pick],
        "curves compare": ["curves", "compare", str(path), str(path), *pick],
        "curves export": ["curves", "export", str(path), "--golden", str(tmp_path / "g.json"), "--overwrite",
                          *pick],
    }  # fmt: skip


def test_every_reader_of_metric_files_is_swept(tmp_path: Path) -> None:
    found = set()

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))
        if getattr(command, "commands", None) is None and any(
            p.name == "input_format" for p in command.params
        ):
            found.add(" ".join(path))

    walk(typer.main.get_command(app), ())
    assert found == set(readers(tmp_path / "x.csv", tmp_path, None))


def write_table(path: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` as CSV (blank cells for absent keys) or JSONL, by ``path``'s suffix."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    if path.suffix == ".csv":
        lines = [",".join(f'"{c}"' if "," in c else c for c in columns)]
        lines += [",".join(str(row.get(c, "")) for c in columns) for row in rows]
        path.write_text("\n".join(lines) + "\n")
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def rows_of(metric_columns: dict[str, list[float]]) -> list[dict[str, Any]]:
    return [
        {"Step": step, **{name: values[k] for name, values in metric_columns.items()}}
        for k, step in enumerate(STEPS)
    ]


def one_line_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    err = capsys.readouterr().err
    assert err.count("\n") <= 1, err
    return code, err.strip()


def _panel(name: str, run: str | None) -> str:
    return f"{run} - {name}" if run else name


DUPLICATES = list(
    itertools.product(
        [".csv", ".jsonl"],
        [None, "run-a"],  # one run, or a panel of two (run-a, run-b)
        [0, 2, 4],  # the row repeated: first, middle, last
        ["same value", "other value"],
    )
)


@pytest.mark.parametrize(("suffix", "run", "row", "kind"), DUPLICATES)
def test_a_step_given_twice_is_one_error_from_every_reader(
    suffix: str, run: str | None, row: int, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    columns = {_panel("lm loss", run): LOSSES}
    if run:
        columns[_panel("lm loss", "run-b")] = [v + 0.01 for v in LOSSES]
    rows = rows_of(columns)
    again = dict(rows[row])
    if kind == "other value":
        again = {key: value if key == "Step" else value - 1.0 for key, value in again.items()}
    rows.insert(row + 1, again)
    path = write_table(tmp_path / f"wandb{suffix}", rows)
    line = row + 2 if suffix == ".csv" else row + 1  # the first of the two rows, as the file counts lines
    answers = {name: one_line_error(args, capsys) for name, args in readers(path, tmp_path, run).items()}
    codes = {code for code, _ in answers.values()}
    messages = {message for _, message in answers.values()}
    assert codes == {1} and len(messages) == 1, answers
    (message,) = messages
    assert message.startswith(f"error: {path}:{line + 1}: field ")
    assert f"step {STEPS[row]} is given twice (also at line {line})" in message


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_rows_of_one_step_that_fill_different_columns_are_one_step(
    suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A W&B history row per ``log`` call: the loss in one row, the learning rate in the next."""
    rows: list[dict[str, Any]] = []
    for step, loss in zip(STEPS, LOSSES, strict=True):
        rows += [{"Step": step, "lm loss": loss}, {"Step": step, "learning rate": 1e-4}]
    path = write_table(tmp_path / f"wandb{suffix}", rows)
    assert main(["curves", "show", str(path), "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)["runs"][0]
    assert shown["metrics"] == {"lm loss": 5, "learning-rate": 5} and shown["restarts"] == 0


@pytest.mark.parametrize(
    ("suffix", "run", "lookalike"), list(itertools.product([".csv", ".jsonl"], [None, "run-a"], LOOKALIKES))
)
def test_a_column_that_only_resembles_the_loss_is_never_read_as_it(
    suffix: str, run: str | None, lookalike: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alone = write_table(tmp_path / f"alone{suffix}", rows_of({_panel(lookalike, run): [1.0] * 5}))
    code, message = one_line_error(readers(alone, tmp_path, run)["curves export"], capsys)
    assert code in (1, 2) and ("no 'lm loss'" in message or "no numeric metric" in message), message
    if main(["curves", "show", str(alone), "--format", "json", *(["--run", run] if run else [])]) == 0:
        assert "lm loss" not in json.loads(capsys.readouterr().out)["runs"][0]["metrics"]
    for order in ("before", "after"):  # beside the real loss, in either column order
        columns = {_panel("lm loss", run): LOSSES, _panel(lookalike, run): [1.0] * 5}
        if order == "after":
            columns = dict(reversed(columns.items()))
        both = write_table(tmp_path / f"both{suffix}", rows_of(columns))
        assert main(readers(both, tmp_path, run)["curves export"]) == 0, capsys.readouterr().err
        golden = json.loads((tmp_path / "g.json").read_text())["lm loss"]["values"]
        assert {int(k): v for k, v in golden.items()} == dict(zip(STEPS, LOSSES, strict=True))


@pytest.mark.parametrize(
    ("suffix", "run", "pair"),
    list(itertools.product([".csv", ".jsonl"], [None, "run-a"], itertools.combinations(LOSS_SPELLINGS, 2))),
)
def test_two_columns_that_both_read_as_the_loss_are_refused(
    suffix: str,
    run: str | None,
    pair: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    columns = {_panel(pair[0], run): LOSSES, _panel(pair[1], run): [v + 1 for v in LOSSES]}
    path = write_table(tmp_path / f"wandb{suffix}", rows_of(columns))
    answers = {name: one_line_error(args, capsys) for name, args in readers(path, tmp_path, run).items()}
    assert {code for code, _ in answers.values()} == {1}, answers
    assert {message for _, message in answers.values()} == {
        f"error: {path}: columns '{pair[0]}' and '{pair[1]}' both read as 'lm loss'; keep one of them"
    }


def test_two_golden_metrics_that_both_read_as_the_loss_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "golden.json"
    path.write_text(json.dumps({"lm loss": {"values": {"1": 9.5}}, "lm-loss": {"values": {"1": 9.0}}}))
    code, message = one_line_error(["curves", "show", str(path)], capsys)
    assert (code, message) == (
        1,
        f"error: {path}: metrics 'lm loss' and 'lm-loss' both read as 'lm loss'; keep one of them",
    )
