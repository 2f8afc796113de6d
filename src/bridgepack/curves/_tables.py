"""Readers of structured metric files: golden-value JSON, CSV, JSONL, TensorBoard event files.

* Golden JSON (Megatron-LM functional tests, bridge-format §11): ``{"lm loss": {"start_step": 1, "end_step":
100,
  "step_interval": 1, "values": {"1": 10.95, ...}}}``. The *string* ``"nan"`` marks a step that was not
  recorded (the first half of a resume test), so it becomes an absent step, never a NaN value.
* CSV / JSONL (e.g. a W&B export): one row per step; the step column is the first of
  :data:`STEP_COLUMNS` present; every other column whose values are numbers is a metric. An empty cell is a
  step without that metric; ``nan``/``inf`` are real values; a word in a numeric column is an error.
  Columns named ``"<run> - <metric>"`` (a W&B panel of several runs) are read as one run each.
* TensorBoard: read through ``tbparse`` (the ``tensorboard`` extra), imported only when needed; every
  record's framing and checksums are checked too (:func:`event_file_damage`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import struct
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from bridgepack._io import read_bytes
from bridgepack.curves._names import canonical, canonical_names
from bridgepack.curves._series import Curves, Series, find_segments, resolve
from bridgepack.errors import DataError, InputError, shown, where

# Step columns of exported tables, in order of preference (``_step`` is W&B's own counter).
STEP_COLUMNS: tuple[str, ...] = ("iteration", "step", "global_step", "trainer/global_step", "Step", "_step")
_NON_NUMBER_WORDS = {"", "none", "null"}
#: Largest step magnitude accepted (steps are stored as int64).
MAX_STEP = 2**62


def _number(raw: Any) -> float | None:
    """A float for numbers and ``nan``/``inf`` spellings; ``None`` for empty; raise ValueError otherwise
    (a boolean too: ``true`` is no loss, and reading it as a step not recorded hid the damage)."""
    if raw is None:
        return None
    if isinstance(raw, bool):
        raise ValueError(shown(raw))
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str):
        text = raw.strip()
        if text.lower() in _NON_NUMBER_WORDS:
            return None
        return float(text)  # float() accepts nan, inf, -Infinity, 1e-3
    raise ValueError(shown(raw))


def read_golden(path: str | os.PathLike[str]) -> Curves:
    """Read Megatron-LM golden-value JSON; ``"nan"`` strings are steps that were not recorded."""
    source = os.fspath(path)
    data = read_bytes(path)
    if not data.strip():
        raise InputError(f"{source}: empty file")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        doc = _python_json(data)  # bare NaN, as Python's json.dump writes a missing step
        if doc is None:
            raise InputError(f"{source}: not JSON ({exc})") from None
    twice = _key_given_twice(data)
    if twice is not None:  # JSON parsers keep the last of two equal keys, silently
        raise DataError(f"{source}: key {shown(twice)} is given twice (a metric or a step)")
    if not isinstance(doc, dict) or not doc:
        raise InputError(
            f"{source}: expected a JSON object of metrics (golden values), found {type(doc).__name__}"
        )
    metrics: dict[str, Series] = {}
    unrecorded_by_metric: list[str] = []
    canonical_names(source, doc, "metrics")
    for name, entry in doc.items():
        if not isinstance(entry, dict) or "values" not in entry:
            raise InputError(
                f"{where(source, field=name)}: expected an object with 'values' (golden-value JSON)"
            )
        values = entry["values"]
        if isinstance(values, list):  # older golden files: a list from start_step every step_interval
            start = _int_key(source, name, entry, "start_step")
            step = _int_key(source, name, entry, "step_interval")
            if step < 1:  # 0 laid every value on one step, a negative one ran the steps backwards
                raise DataError(f"{where(source, field=name)}: 'step_interval' must be >= 1, found {step}")
            items = [(start + k * step, v) for k, v in enumerate(values)]
        elif isinstance(values, dict):
            try:
                items = [(int(k), v) for k, v in values.items()]
            except ValueError:
                raise DataError(f"{where(source, field=name)}: step keys must be integers") from None
        else:
            raise InputError(f"{where(source, field=name)}: 'values' must be an object or a list")
        far = next((step for step, _ in items if not 0 <= step <= MAX_STEP), None)
        if far is not None:
            raise DataError(f"{where(source, field=name)}: step {shown(far)} is out of range [0, 2^62]")
        if len({step for step, _ in items}) != len(items):  # "10" and "010"
            raise DataError(f"{where(source, field=name)}: a step is given twice")
        its: list[int] = []
        vals: list[float] = []
        unrecorded = 0
        for step, raw in items:
            if isinstance(raw, str) and raw.strip().lower() == "nan":
                unrecorded += 1
                continue
            if isinstance(raw, str):  # golden values are JSON numbers; "nan" is the one word they use
                raise DataError(f"{where(source, field=name)}: step {step}: not a number: {shown(raw)}")
            try:
                value = _number(raw)
            except ValueError:
                raise DataError(
                    f"{where(source, field=name)}: step {step}: not a number: {shown(raw)}"
                ) from None
            if value is None:
                unrecorded += 1
                continue
            its.append(step)
            vals.append(value)
        if unrecorded:
            unrecorded_by_metric.append(f"{name} {unrecorded}")
        metrics[canonical(name)] = resolve(its, vals)
    notes = []
    if unrecorded_by_metric:
        notes.append(f'{source}: steps marked "nan" (not recorded): {", ".join(unrecorded_by_metric)}')
    return Curves(source=source, format="golden", metrics=metrics, notes=notes)


def _key_given_twice(data: bytes) -> str | None:
    """The first key that appears twice in one JSON object of ``data`` (``None`` if none does)."""
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        if not found and len(set(keys)) != len(keys):
            found.append(next(k for i, k in enumerate(keys) if k in keys[:i]))
        return dict(items)

    try:
        json.loads(data, object_pairs_hook=pairs, parse_constant=lambda word: word)
    except (ValueError, RecursionError):
        return None
    return found[0] if found else None


def _python_json(data: bytes) -> Any:
    """``data`` as Python's ``json`` reads it, bare ``NaN`` as the string ``"nan"`` (a step not recorded,
    the golden files' own spelling) and ``Infinity`` as a real infinity; None when that fails too."""
    try:
        return json.loads(data, parse_constant=lambda word: "nan" if word == "NaN" else float(word))
    except (ValueError, RecursionError):
        return None


def _int_key(source: str, name: str, entry: dict[str, Any], key: str) -> int:
    """An integer key of a golden entry (``start_step``, ``step_interval``; 1 when absent)."""
    raw = entry.get(key, 1)
    try:
        if isinstance(raw, bool):
            raise TypeError
        return int(raw)
    except (TypeError, ValueError, OverflowError):
        at = where(source, field=name)
        raise DataError(f"{at}: '{key}' must be an integer, found {shown(raw)}") from None


def _run_and_metric(column: str) -> tuple[str | None, str]:
    """W&B panel exports name columns ``"<run> - <metric>"``; a run name may itself hold " - " (the metric
    is what follows the *last* one: W&B metric keys such as ``train/loss`` never do)."""
    if " - " not in column:
        return None, column
    run, metric = column.rsplit(" - ", 1)
    return run, metric


def _repeated_steps(steps: list[int]) -> list[int]:
    """Rows whose step equals the previous row's: the same step again, not a restart (a restart goes
    back, :func:`~bridgepack.curves._series.find_segments`)."""
    return [k for k in range(1, len(steps)) if steps[k] == steps[k - 1]]


def _refuse_a_step_given_twice(
    source: str,
    first_line: int,
    row_word: str,
    rows: list[dict[str, Any]],
    steps: list[int],
    repeats: list[int],
    key: str,
) -> None:
    """A metric with two values at one step (rows of the same step, both filled) is refused, naming both
    rows: the reader kept the later one without a word. Rows of one step that fill different columns (a
    W&B history row per ``log`` call) are one step's values and pass."""
    for k in repeats:
        previous = k - 1
        while previous > 0 and steps[previous - 1] == steps[k] and _blank(rows[previous].get(key)):
            previous -= 1
        if not _blank(rows[k].get(key)) and not _blank(rows[previous].get(key)):
            raise DataError(
                f"{where(source, first_line + k, field=key)}: step {steps[k]} is given twice (also at "
                f"{row_word} {first_line + previous}); keep one row per step"
            )


def _blank(raw: Any) -> bool:
    """A cell that holds no value (empty, ``null``), as :func:`_number` reads it."""
    try:
        return _number(raw) is None
    except ValueError:
        return False


def _table_curves(
    source: str, fmt: str, rows: list[dict[str, Any]], first_line: int, row_word: str = "line"
) -> dict[str | None, Curves]:
    """Turn rows (dicts) into curves, one per run (``None``: columns without a run name).

    ``first_line`` is the file line of ``rows[0]`` for messages. A W&B panel showing two runs exports
    ``Step, a - loss, a - loss__MIN, a - loss__MAX, b - loss, ...``: two runs, each with its own steps
    (a step where a run's cell is blank is a step that run did not record).
    """
    if not rows:
        raise InputError(f"{source}: no rows")
    keys: list[str] = []
    seen: set[str] = set()
    for row in rows:
        for key in row:
            if key not in seen:
                seen.add(key)
                keys.append(key)
    step_key = next((k for k in STEP_COLUMNS if k in seen), None)
    if step_key is None:
        raise InputError(
            f"{source}: no step column (expected one of {', '.join(STEP_COLUMNS)}; "
            f"found {', '.join(keys[:8])})"
        )
    steps: list[int] = []
    for k, row in enumerate(rows):
        try:
            step = _number(row.get(step_key))
        except ValueError:
            step = math.nan
        if step is None or not math.isfinite(step) or step != int(step) or not 0 <= step <= MAX_STEP:
            raise DataError(
                f"{where(source, first_line + k, field=step_key)}: expected an integer step, "
                f"found {shown(row.get(step_key))}"
            )
        steps.append(int(step))
    by_run: dict[str | None, dict[str, Series]] = {}
    metric_keys = [
        key
        for key in keys
        if key != step_key and not key.startswith("_") and not key.endswith(("__MIN", "__MAX"))
    ]
    for run_name in {_run_and_metric(key)[0] for key in metric_keys}:
        canonical_names(source, [m for r, m in map(_run_and_metric, metric_keys) if r == run_name])
    repeats = _repeated_steps(steps)
    for key in metric_keys:
        its: list[int] = []
        vals: list[float] = []
        bad: tuple[int, Any] | None = None
        for k, row in enumerate(rows):
            raw = row.get(key)
            try:
                value = _number(raw)
            except ValueError:
                if bad is None:
                    bad = (k, raw)
                continue
            if value is not None:
                its.append(steps[k])
                vals.append(value)
        if bad is not None:
            if not its:
                continue  # a text column (run name, tags): not a metric
            raise DataError(
                f"{where(source, first_line + bad[0], field=key)}: expected a number, found {shown(bad[1])}"
            )
        if its:
            _refuse_a_step_given_twice(source, first_line, row_word, rows, steps, repeats, key)
            run, name = _run_and_metric(key)
            by_run.setdefault(run, {})[canonical(name)] = resolve(its, vals)
    if not by_run:
        raise InputError(f"{source}: no numeric metric column besides '{step_key}'")
    shared = by_run.pop(None) if len(by_run) > 1 and None in by_run else {}
    for metrics in by_run.values():  # a column without a run name (epoch, lr) belongs to every run
        for name, series in shared.items():
            metrics.setdefault(name, series)
    segments = find_segments(np.asarray(steps, dtype=np.int64))
    several = len(by_run) > 1
    return {
        run: Curves(
            source=f"{source} (run '{run}')" if several else source,
            format=fmt,
            metrics=metrics,
            segments=segments,
            run=run if several else None,
        )
        for run, metrics in by_run.items()
    }


def read_csv(path: str | os.PathLike[str]) -> dict[str | None, Curves]:
    """Read a CSV with a header row (W&B, TensorBoard or hand-made exports): its runs, by name."""
    source = os.fspath(path)
    text = read_bytes(path).decode("utf-8-sig", errors="replace")  # -sig: Excel's byte-order mark
    if not text.strip():
        raise InputError(f"{source}: empty file")
    reader = csv.DictReader(io.StringIO(text))
    rows: list[dict[str, Any]] = []
    try:
        for row in reader:
            if None in row:  # DictReader files the cells past the header under the key None
                raise DataError(f"{where(source, reader.line_num)}: more cells than the header has columns")
            rows.append(dict(row))
    except csv.Error as exc:
        raise InputError(f"{where(source, reader.line_num)}: not CSV ({exc})") from None
    if reader.fieldnames is None:
        raise InputError(f"{source}: no header row")
    return _table_curves(source, "csv", rows, first_line=2)


def read_jsonl(path: str | os.PathLike[str]) -> dict[str | None, Curves]:
    """Read JSON Lines: one object per line (e.g. W&B ``history`` export): its runs, by name."""
    source = os.fspath(path)
    data = read_bytes(path)
    if not data.strip():
        raise InputError(f"{source}: empty file")
    rows: list[dict[str, Any]] = []
    first_line = 0
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise InputError(f"{where(source, number)}: not a JSON object ({exc})") from None
        if not isinstance(row, dict):
            raise InputError(f"{where(source, number)}: expected a JSON object, found {type(row).__name__}")
        if not rows:
            first_line = number
        rows.append(row)
    return _table_curves(source, "jsonl", rows, first_line=first_line)


def read_tensorboard(path: str | os.PathLike[str]) -> Curves:
    """Read scalar tags from a TensorBoard event file or directory via ``tbparse`` (extra ``tensorboard``)."""
    source = os.fspath(path)
    if not Path(path).exists():
        raise InputError(f"{source}: no such file or directory")
    try:
        import google_crc32c  # noqa: F401  # the record checksums (event_file_damage)
        from tbparse import SummaryReader
    except ImportError:
        raise InputError(
            f"{source}: reading TensorBoard files needs the 'tensorboard' extra "
            "(pip install 'bridgepack[tensorboard]')"
        ) from None
    try:
        with warnings.catch_warnings():  # tbparse's pandas deprecation warnings are not the user's business
            warnings.simplefilter("ignore")
            frame = SummaryReader(source, pivot=False).scalars
    except Exception as exc:  # tbparse raises many types for corrupt files
        raise InputError(f"{source}: cannot read TensorBoard events ({exc})") from None
    if frame is None or len(frame) == 0:
        raise InputError(f"{source}: no scalar values in the TensorBoard events")
    metrics: dict[str, Series] = {}
    canonical_names(source, frame["tag"].unique().tolist(), "tags")
    for tag, group in frame.groupby("tag", sort=False):
        metrics[canonical(str(tag))] = resolve(group["step"].to_numpy(), group["value"].to_numpy())
    notes = [note for file in _event_files(Path(path)) if (note := event_file_damage(file)) is not None]
    return Curves(source=source, format="tensorboard", metrics=metrics, notes=notes, damaged=list(notes))


def _event_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("events.out.tfevents*") if p.is_file())
    return [path]


def _masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C (Castagnoli) of ``data``: the CRC rotated right by 15 bits plus a constant,
    mod 2^32. The CRC is ``google-crc32c``'s (the ``tensorboard`` extra; C, the CPU's CRC instruction where
    it has one): ~10 GB/s here, where TensorBoard's own Python table loop does 6.7 MB/s and a bit-by-bit
    loop 1 MB/s, so every record's data can be checked, not only its 8 length bytes."""
    import google_crc32c  # the tensorboard extra: read_tensorboard checks it is installed

    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_file_damage(path: Path) -> str | None:
    """What is wrong with a TensorBoard event file, in words, or ``None`` when every record is whole.
    tbparse (and TensorBoard) stop at the first broken record without a word, so a file cut short (a job
    killed while writing, a partial copy) or with a flipped byte read as a shorter run; the curves readers
    note it.

    A record is ``length (8 bytes LE) | masked CRC-32C of those 8 bytes | data | masked CRC-32C of data``;
    both checksums are checked, one record in memory at a time.
    """
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            offset = records = 0
            while offset < size:
                header = handle.read(12)
                if len(header) < 12:
                    stray = size - offset
                    return f"{path}: cut short inside record {records + 1} ({stray} stray bytes at the end)"
                (length,) = struct.unpack("<Q", header[:8])
                (crc,) = struct.unpack("<I", header[8:])
                where_ = f"record {records + 1} at byte {offset}"
                if _masked_crc32c(header[:8]) != crc:
                    return f"{path}: {where_} is damaged; later records are not read"
                end = offset + 12 + length + 4
                if end > size:
                    return f"{path}: cut short inside record {records + 1} (it needs {end - size} more bytes)"
                data = handle.read(length)
                (data_crc,) = struct.unpack("<I", handle.read(4))
                if _masked_crc32c(data) != data_crc:
                    return f"{path}: {where_} fails its data checksum; later records are not read"
                offset, records = end, records + 1
    except OSError as exc:
        return f"{path}: cannot be read whole ({exc.strerror or exc})"
    return None
