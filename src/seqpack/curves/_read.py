"""One entry point, :func:`read_curves`: detect the format of an input (or take the forced one) and read it.

Detection, cheapest first: a Hugging Face Trainer run (``trainer_state.json``, or a directory holding one
directly or in a ``checkpoint-N``) is ``hf``; another directory or an ``events.out.tfevents*`` name is
TensorBoard; ``.csv`` is CSV; ``.jsonl`` is JSONL; a file starting with ``{`` is golden JSON when it parses
as one object (``hf`` when it has a ``log_history``), JSONL otherwise; anything else is a text log
(Megatron-LM, Bridge or NeMo, told apart by the lines themselves).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seqpack._io import unreadable
from seqpack.curves._hf import is_trainer_run, read_trainer_state
from seqpack.curves._logs import read_log
from seqpack.curves._series import FORMATS, Curves
from seqpack.curves._tables import read_csv, read_golden, read_jsonl, read_tensorboard
from seqpack.errors import UsageError, param

_HEAD_BYTES = 4096


def detect_format(path: str | os.PathLike[str]) -> str:
    """Guess the format of ``path`` from its name and first bytes (text logs: ``mlm``, refined on reading)."""
    p = Path(path)
    if is_trainer_run(p):
        return "hf"
    if p.is_dir() or p.name.startswith("events.out.tfevents"):
        return "tensorboard"
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    try:
        with open(p, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError as exc:
        raise unreadable(path, exc) from None
    stripped = head.lstrip()
    if stripped.startswith(b"{"):
        first_line = stripped.split(b"\n", 1)[0].strip()
        # One object per line -> JSONL; a pretty-printed or single-line object of metrics -> golden.
        if first_line.endswith(b"}") and b'"values"' not in first_line:
            return "jsonl"
        if b'"log_history"' in head:  # a renamed trainer_state.json (its keys are sorted: it comes early)
            return "hf"
        return "golden"
    return "mlm"


def read_runs(
    path: str | os.PathLike[str],
    input_format: str | None = None,
    *,
    runs: Sequence[str] = (),
    progress: Any = None,
) -> list[Curves]:
    """Read every run an input holds: one for a log, golden or TensorBoard file; one per run for a W&B
    panel export of several runs (named ``"file (run 'a')"``). ``runs`` keeps the named ones, in that order;
    a name the file does not hold is a usage error listing the runs it does hold.
    """
    if input_format is not None and input_format not in FORMATS:
        expected = ", ".join(FORMATS)
        raise UsageError(f"{param('input_format')}: expected one of {expected}, found {input_format!r}")
    fmt = input_format or detect_format(path)
    if fmt in ("mlm", "bridge", "nemo"):
        return [read_log(path, input_format, progress=progress)]
    if fmt == "golden":
        return [read_golden(path)]
    if fmt == "tensorboard":
        return [read_tensorboard(path)]
    if fmt == "hf":
        return [read_trainer_state(path)]
    by_run = read_csv(path) if fmt == "csv" else read_jsonl(path)
    if not runs or list(by_run) == [None]:
        return list(by_run.values())
    unknown = [r for r in runs if r not in by_run]
    if unknown:
        raise UsageError(f"{param('runs')} {unknown[0]!r}: {os.fspath(path)} {_holds(by_run)}")
    return [by_run[r] for r in runs]


def _holds(by_run: Mapping[str | None, Curves]) -> str:
    names = [repr(r) for r in by_run if r is not None]
    return f"holds {len(names)} run(s): {', '.join(names)}"


def one_run(path: str | os.PathLike[str], found: list[Curves]) -> Curves:
    """The single run of ``found``, or the usage error that lists them (which one was meant is unknown)."""
    if len(found) == 1:
        return found[0]
    names = ", ".join(repr(c.run) for c in found)
    raise UsageError(f"{os.fspath(path)} holds {len(found)} runs ({names}): choose with {param('runs')} NAME")


def read_curves(
    path: str | os.PathLike[str],
    input_format: str | None = None,
    *,
    run: str | None = None,
    progress: Any = None,
) -> Curves:
    """Read any supported input into :class:`~seqpack.curves.Curves`.

    >>> curves = read_curves("train.log")                     # doctest: +SKIP
    >>> curves.metrics["lm loss"].as_dict()                    # doctest: +SKIP
    {10: 9.876543, 20: 9.5}

    ``progress`` (a :func:`seqpack._progress.progress` display) shows the bytes read of a text log. An
    export of several runs needs ``run`` (its name); without it the error lists the runs.
    """
    return one_run(path, read_runs(path, input_format, runs=() if run is None else (run,), progress=progress))
