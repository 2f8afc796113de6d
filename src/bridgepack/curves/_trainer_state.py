"""Hugging Face Trainer runs: ``trainer_state.json``'s ``log_history``, from a file, checkpoint or output dir.

The Trainer appends one dict per logging event to ``log_history`` and saves it in every
``checkpoint-N/trainer_state.json`` (and in ``OUT/trainer_state.json`` after ``save_state()``)::

    {"step": 1, "epoch": 0.25, "loss": 4.16, "grad_norm": 0.88, "learning_rate": 0.001}
    {"step": 3, "epoch": 0.75, "eval_loss": 4.17, "eval_runtime": 0.02, ...}
    {"step": 6, "epoch": 1.5, "train_runtime": 2.5, "train_loss": 4.15, ...}      <- end-of-run summary

Every number becomes a metric at its ``step`` under its canonical name (``loss`` -> ``lm loss``,
``eval_loss`` -> ``lm loss validation``: :data:`~bridgepack.curves._names.HF_KEYS`), so the run compares with
a Megatron log. The summary entry is an average over the run, not a step's value, and is left out.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from bridgepack._io import read_bytes
from bridgepack.curves._names import canonical
from bridgepack.curves._series import Curves, find_segments, resolve
from bridgepack.errors import DataError, InputError, shown, where

STATE_FILE = "trainer_state.json"
#: The format a run read from a ``trainer_state.json`` reports (``Curves.format``, JSON ``format``): ``hf``,
#: its name before 0.3, kept so reports read as before; ``--input-format`` calls it ``trainer-state``.
REPORTED_FORMAT = "hf"
#: A key only the Trainer's end-of-run summary entry has.
_SUMMARY_KEY = "train_runtime"
_CHECKPOINT = re.compile(r"checkpoint-(\d+)")


def is_trainer_run(path: Path) -> bool:
    """``path`` is a ``trainer_state.json`` or a directory holding one (see :func:`state_in_dir`)."""
    return path.name == STATE_FILE or (path.is_dir() and state_in_dir(path) is not None)


def state_in_dir(directory: Path) -> Path | None:
    """A directory's own ``trainer_state.json`` (a checkpoint, or an output dir after ``save_state()``),
    else that of its highest ``checkpoint-N`` (the longest history); ``None`` when neither exists."""
    if (directory / STATE_FILE).is_file():
        return directory / STATE_FILE
    checkpoints = [
        (int(m.group(1)), c)
        for c in directory.iterdir()
        if (m := _CHECKPOINT.fullmatch(c.name)) and (c / STATE_FILE).is_file()
    ]
    return max(checkpoints)[1] / STATE_FILE if checkpoints else None


def read_trainer_state(path: str | os.PathLike[str]) -> Curves:
    """Read a Trainer run (``trainer_state.json``, a checkpoint dir or an output dir) into curves."""
    given = os.fspath(path)
    state = state_in_dir(Path(path)) if Path(path).is_dir() else Path(path)
    if state is None:
        raise InputError(f"{given}: no {STATE_FILE} here or in a checkpoint-N directory")
    source = given if Path(given) == state else os.fspath(state)
    try:  # json, not orjson: the Trainer writes a NaN loss as the bare word NaN, which orjson refuses
        doc = json.loads(read_bytes(state))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{source}: not JSON ({exc})") from None
    history = doc.get("log_history") if isinstance(doc, dict) else None
    if not isinstance(history, list):
        raise InputError(f"{where(source, field='log_history')}: expected a list (a Trainer's state file)")
    steps: list[int] = []
    columns: dict[str, tuple[list[int], list[float]]] = {}
    for i, entry in enumerate(history):
        at = where(source, field=f"log_history[{i}]")
        if not isinstance(entry, dict):
            raise DataError(f"{at}: expected an object, found {shown(entry)}")
        step = entry.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise DataError(f"{at}: expected an integer 'step', found {shown(step)}")
        if _SUMMARY_KEY in entry:
            continue
        steps.append(step)
        for key, value in entry.items():
            if key != "step" and _is_number(value):
                its, vals = columns.setdefault(canonical(key), ([], []))
                its.append(step)
                vals.append(float(value))
    if not columns:
        raise InputError(f"{where(source, field='log_history')}: no logged values")
    metrics = {name: resolve(its, vals) for name, (its, vals) in columns.items()}
    notes = [] if source == given else [f"{given}: read {source}"]
    segments = find_segments(np.asarray(steps, dtype=np.int64))
    return Curves(source=given, format=REPORTED_FORMAT, metrics=metrics, segments=segments, notes=notes)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
