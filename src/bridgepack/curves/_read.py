"""One entry point, :func:`read_curves`, over one table of the formats ``bridgepack curves`` reads
(:data:`CURVE_FORMATS`): each entry names the files it is chosen by (suffix, name, directory) or how its
first bytes look, and its reader; an OS error of any reader is worded here once.

Detection, cheapest first: by path in table order (a Hugging Face Trainer run -- ``trainer_state.json`` or
a directory holding one -- is ``hf``; another directory or an ``events.out.tfevents*`` name is
TensorBoard; ``.csv`` is CSV; ``.jsonl`` is JSONL), then by the first bytes (one JSON object a line is
JSONL; a JSON object with a ``log_history`` is ``hf``, another golden JSON), then a text file is a training
log, read as the line format its text names (:mod:`._log_lines`). A file that is none of these (binary) is
refused naming the formats; a format forced by name must be one of the table's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridgepack._io import unreadable
from bridgepack.curves._log_lines import LOG_LINES, detect_line, log_line
from bridgepack.curves._logs import read_log
from bridgepack.curves._series import Curves
from bridgepack.curves._tables import read_csv, read_golden, read_jsonl, read_tensorboard
from bridgepack.curves._trainer_state import is_trainer_run, read_trainer_state
from bridgepack.errors import InputError, UsageError, param

_HEAD_BYTES = 4096

#: ``(path, the format the user forced or None, progress) -> runs by name`` (``None``: the file's one run).
Reader = Callable[[str, "str | None", Any], Mapping["str | None", Curves]]


@dataclass(frozen=True)
class CurvesFormat:
    """One input format of ``bridgepack curves``: how a path or its first bytes are told to be of it, and its
    reader."""

    name: str  #: ``--input-format``
    read: Reader
    #: older names ``--input-format`` still takes (``hf``, the Trainer state's name before 0.3)
    aliases: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    path_is: Callable[[Path], bool] | None = None  #: chosen by the path alone (a directory, a name)
    head_is: Callable[[bytes], bool] | None = None  #: chosen by the first 4 KiB of a file


def _one_run(read: Callable[[str], Curves]) -> Reader:
    """A reader of a format that holds one run, as the table calls readers."""
    return lambda path, _forced, _progress: {None: read(path)}


def _runs(read: Callable[[str], Mapping[str | None, Curves]]) -> Reader:
    """A reader of a format that may hold several runs (a W&B panel export), as the table calls readers."""
    return lambda path, _forced, _progress: read(path)


def _log(path: str, forced: str | None, progress: Any) -> Mapping[str | None, Curves]:
    return {None: read_log(path, forced, progress=progress)}


def _json_object(head: bytes) -> bool:
    return head.lstrip().startswith(b"{")


def _object_per_line(head: bytes) -> bool:
    """JSONL: the first line is a whole object (a golden file's one-line object holds ``"values"``)."""
    first_line = head.lstrip().split(b"\n", 1)[0].strip()
    return _json_object(head) and first_line.endswith(b"}") and b'"values"' not in first_line


def _trainer_state(head: bytes) -> bool:
    """A renamed ``trainer_state.json`` (its keys are sorted: ``log_history`` comes early)."""
    return _json_object(head) and b'"log_history"' in head


#: Every format ``bridgepack curves`` reads, in the order a path and then a file's first bytes are matched.
CURVE_FORMATS: tuple[CurvesFormat, ...] = (
    CurvesFormat(
        "trainer-state",
        _one_run(read_trainer_state),
        aliases=("hf",),
        path_is=is_trainer_run,
        head_is=_trainer_state,
    ),
    CurvesFormat(
        "tensorboard",
        _one_run(read_tensorboard),
        path_is=lambda p: p.is_dir() or p.name.startswith("events.out.tfevents"),
    ),
    CurvesFormat("csv", _runs(read_csv), suffixes=(".csv",)),
    CurvesFormat("jsonl", _runs(read_jsonl), suffixes=(".jsonl", ".ndjson"), head_is=_object_per_line),
    CurvesFormat("golden", _one_run(read_golden), head_is=_json_object),
    *(CurvesFormat(line.name, _log) for line in LOG_LINES),  # a text file: a training log
)
FORMATS: tuple[str, ...] = tuple(f.name for f in CURVE_FORMATS)
_BY_NAME = {name: f for f in CURVE_FORMATS for name in (f.name, *f.aliases)}


def _format(name: str) -> CurvesFormat | None:
    """The format called ``name`` (a line format of :data:`~._log_lines.LOG_LINES` as it is now)."""
    return _BY_NAME.get(name) or (CurvesFormat(name, _log) if log_line(name) is not None else None)


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of ``path`` by its name, else its first bytes (a text log: the line format its first
    block names); an :class:`InputError` for a file that is none (binary)."""
    p = Path(path)
    for fmt in CURVE_FORMATS:
        if (fmt.path_is is not None and fmt.path_is(p)) or (
            fmt.suffixes and p.suffix.lower() in fmt.suffixes
        ):
            return fmt.name
    try:
        with open(p, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError as exc:
        raise unreadable(path, exc) from None
    found = next((f for f in CURVE_FORMATS if f.head_is is not None and f.head_is(head)), None)
    if found is not None:
        return found.name
    if b"\0" in head:
        raise InputError(
            f"{os.fspath(path)}: binary, and of no format bridgepack curves detects ({', '.join(FORMATS)}); "
            f"force one with {param('input_format')}"
        )
    return detect_line(head).name


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
    fmt = _format(input_format or detect_format(path))
    if fmt is None:
        expected = ", ".join(FORMATS)
        raise UsageError(f"{param('input_format')}: expected one of {expected}, found {input_format!r}")
    try:
        by_run = fmt.read(os.fspath(path), input_format, progress)
    except OSError as exc:  # every reader's, in one set of words
        raise unreadable(path, exc) from None
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
    """Read any supported input into :class:`~bridgepack.curves.Curves`.

    >>> curves = read_curves("train.log")                     # doctest: +SKIP
    >>> curves.metrics["lm loss"].as_dict()                    # doctest: +SKIP
    {10: 9.876543, 20: 9.5}

    ``progress`` (a :func:`bridgepack._progress.progress` display) shows the bytes read of a text log. An
    export of several runs needs ``run`` (its name); without it the error lists the runs.
    """
    return one_run(path, read_runs(path, input_format, runs=() if run is None else (run,), progress=progress))
