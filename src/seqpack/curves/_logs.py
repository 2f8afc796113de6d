"""Reader of Megatron-LM / Megatron-Bridge / NeMo 2.x training stdout (spec §10).

What real logs look like (``shared/data/real-logs/``) decides the shape of this reader:

* A record is ``iteration <N>/<M> | key: value | key: value | ... |``. Whatever comes before ``iteration``
  (no timestamp, ``[2025-04-13 23:41:12]``, ``[2026-08-22 10:00:00.123456]``, launcher prefixes such as
  ``[default3]:`` or ``[lrdn3321:3]:`` that change from line to line) is ignored, so one regex finds
  every record whatever the prefix. A record ends at the end of its line *or* where the next record
  starts (two records can run together on one physical line), and at the first ``[`` (a ``[Rank N]``
  line glued to it).
* Fields are split on ``|`` and at the last ``:``; printed keys are mapped to Megatron-LM's TensorBoard
  names and units (:mod:`._names`), so ``(ms)`` and ``(s)`` times, ``lm-loss`` and ``lm loss`` agree.
* Megatron prints a loss only when it is > 0: a NaN loss *vanishes* from the line. A record without
  ``lm loss`` is listed as a missing loss, or as skipped when ``number of skipped iterations`` > 0 and
  no NaN was counted (every step of the interval skipped, e.g. fp16 overflow).
* Validation blocks (`` validation loss at iteration 10 [on validation set|on test set] | lm loss value:
  ...``) become ``lm loss validation`` / ``lm loss test`` (named sets: ``lm loss validation-<name>``).
* Bridge prints ``Step Time : 4.65s GPU utilization: 59892.5TFLOP/s/GPU`` *before* the iteration line;
  it is attached to the next record as ``step-time`` (s) and ``gpu-utilization``.
* NeMo 2.x prints ``Training epoch 0, iteration 3/19 | ... | reduced_train_loss: 10.84`` counting from 0:
  Lightning's iteration ``i`` is the (i+1)-th optimizer step, which Megatron calls iteration ``i + 1``,
  so NeMo iterations are shifted by one to line up with Megatron-LM and Bridge logs of the same run.

Speed: the file is read in large blocks and scanned with ``re.finditer`` for the record header (the regex
engine's literal-prefix search on ``iteration`` is the prefilter); only record bodies are split in Python.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field

import numpy as np

from seqpack.curves._names import GPU_UTILIZATION, LOG_KEYS, LOSS, NAN_ITERS, SKIPPED, STEP_TIME
from seqpack.curves._series import Curves, Segment, resolve
from seqpack.errors import InputError

BLOCK_BYTES = 32 << 20
MAX_NOTES = 20

_RECORD = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_VALIDATION = re.compile(r"validation loss at ([^|\n]*)\|([^\n]*)")
_VALIDATION_AT = re.compile(r"iteration\s+(\d+)(.*)")
_STEP_TIME = re.compile(r"Step Time :\s*([-+0-9.eE]+)s(?:\s+GPU utilization:\s*([-+0-9.eE]+))?")
_NEMO_HINT = re.compile(r"reduced_train_loss|Training epoch \d+, iteration \d+/")


@dataclass
class _Columns:
    """Per-metric iterations and values in log order (Python lists: appends are cheap)."""

    data: dict[str, tuple[list[int], list[float]]] = field(default_factory=dict)

    def add(self, name: str, iteration: int, value: float) -> None:
        col = self.data.get(name)
        if col is None:
            col = self.data[name] = ([], [])
        col[0].append(iteration)
        col[1].append(value)


@dataclass
class _State:
    nemo: bool
    columns: _Columns = field(default_factory=_Columns)
    validation: _Columns = field(default_factory=_Columns)
    missing: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    segments: list[list[int]] = field(default_factory=list)  # [first, max, records, line]
    previous: int | None = None
    pending_step_time: tuple[float, float | None] | None = None
    saw_step_time: bool = False
    lines_before: int = 0  # newlines in the blocks already scanned

    def note(self, text: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(text)
        elif len(self.notes) == MAX_NOTES:
            self.notes.append("... further notes omitted")


def _line_of(state: _State, block: str, pos: int) -> int:
    return state.lines_before + block.count("\n", 0, pos) + 1


def _parse_body(state: _State, iteration: int, body: str, source: str, block: str, pos: int) -> None:
    """Split ``key: value | key: value`` and file each value under its canonical name."""
    cut = body.find("[")
    if cut >= 0:
        body = body[:cut]
    add = state.columns.add
    has_loss = False
    skipped = 0.0
    nans = 0.0
    for part in body.split("|"):
        key, sep, raw = part.rpartition(":")
        if not sep:
            continue
        key = key.strip()
        if not key:
            continue
        try:
            value = float(raw)
        except ValueError:
            state.note(
                f"{source}:{_line_of(state, block, pos)}: field '{key}': not a number: {raw.strip()!r}"
            )
            continue
        known = LOG_KEYS.get(key)
        if known is None:
            add(key, iteration, value)
            continue
        name, scale = known
        add(name, iteration, value * scale if scale != 1.0 else value)
        if name == LOSS:
            has_loss = True
        elif name == SKIPPED:
            skipped = value
        elif name == NAN_ITERS:
            nans = value
    if not has_loss:
        if skipped > 0 and nans == 0:
            state.skipped.append(iteration)
        else:
            state.missing.append(iteration)


def _track_segment(state: _State, iteration: int, block: str, pos: int) -> None:
    prev = state.previous
    if prev is None or iteration < prev:
        state.segments.append([iteration, iteration, 0, _line_of(state, block, pos)])
    seg = state.segments[-1]
    seg[1] = max(seg[1], iteration)
    seg[2] += 1
    state.previous = iteration


def _scan_block(state: _State, block: str, source: str, at_eof: bool) -> None:
    """Parse every training, validation and Step Time record of one block of whole lines."""
    matches = list(_RECORD.finditer(block))
    starts = [m.start() for m in matches]
    step_times: dict[int, tuple[float, float | None]] = {}
    if "Step Time :" in block:
        state.saw_step_time = True
        for st in _STEP_TIME.finditer(block):
            util = float(st.group(2)) if st.group(2) else None
            target = bisect.bisect_right(starts, st.start())
            if target < len(matches):
                step_times[target] = (float(st.group(1)), util)
            else:
                state.pending_step_time = (float(st.group(1)), util)
    offset = 1 if state.nemo else 0
    n = len(matches)
    for k, m in enumerate(matches):
        end = block.find("\n", m.end())
        if end < 0:
            end = len(block)
        if k + 1 < n and starts[k + 1] < end:
            end = starts[k + 1]
        body = block[m.end() : end]
        iteration = int(m.group(1)) + offset
        if at_eof and end == len(block) and not state.nemo and not body.rstrip().endswith("|"):
            state.note(
                f"{source}:{_line_of(state, block, m.start())}: last line is cut off; "
                f"record of iteration {iteration} ignored"
            )
            continue
        if k == 0 and state.pending_step_time is not None and k not in step_times:
            step_times[0] = state.pending_step_time
            state.pending_step_time = None
        _track_segment(state, iteration, block, m.start())
        _parse_body(state, iteration, body, source, block, m.start())
        timing = step_times.get(k)
        if timing is not None:
            state.columns.add(STEP_TIME, iteration, timing[0])
            if timing[1] is not None:
                state.columns.add(GPU_UTILIZATION, iteration, timing[1])
    if "validation loss at" in block:
        _scan_validation(state, block)


def _scan_validation(state: _State, block: str) -> None:
    for v in _VALIDATION.finditer(block):
        at = _VALIDATION_AT.search(v.group(1))
        if at is None:
            continue
        iteration = int(at.group(1))
        label = at.group(2).strip()
        if label.startswith("on "):
            label = label[3:]
        label = label.replace(" set", "").strip() or "validation"
        for part in v.group(2).split("|"):
            key, sep, raw = part.rpartition(":")
            key = key.strip()
            if not sep or not key:
                continue
            try:
                value = float(raw)
            except ValueError:
                continue
            base = key[: -len(" value")] if key.endswith(" value") else key
            state.validation.add(f"{base} {label}", iteration, value)


def looks_like_nemo(head: str) -> bool:
    """Does this text hold NeMo 2.x Lightning lines (``reduced_train_loss``, ``Training epoch``)?"""
    return _NEMO_HINT.search(head) is not None


def read_log(path: str | os.PathLike[str], input_format: str | None = None) -> Curves:
    """Read a Megatron-LM / Bridge / NeMo 2.x stdout log into :class:`Curves`.

    ``input_format`` forces ``mlm``, ``bridge`` or ``nemo``; ``None`` detects it from the text.
    Raises :class:`InputError` for an unreadable or empty file, or one without any iteration line.
    """
    source = os.fspath(path)
    state: _State | None = None
    tail = ""
    total = 0
    try:
        with open(path, "rb") as handle:
            while True:
                raw = handle.read(BLOCK_BYTES)
                at_eof = len(raw) < BLOCK_BYTES
                if not raw and not tail:
                    break
                total += len(raw)
                text = tail + raw.decode("utf-8", errors="replace")
                if at_eof:
                    block, tail = text, ""
                else:
                    cut = text.rfind("\n") + 1
                    block, tail = text[:cut], text[cut:]
                if state is None:
                    nemo = input_format == "nemo" or (input_format is None and looks_like_nemo(block))
                    state = _State(nemo=nemo)
                _scan_block(state, block, source, at_eof)
                state.lines_before += block.count("\n")
                if at_eof:
                    break
    except FileNotFoundError:
        raise InputError(f"{source}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{source}: is a directory, expected a log file") from None
    except OSError as exc:
        raise InputError(f"{source}: cannot read ({exc.strerror})") from None
    if total == 0 or state is None:
        raise InputError(f"{source}: empty file")
    if not state.segments:
        raise InputError(
            f"{source}: no training iteration line found (tried formats: mlm, bridge, nemo; "
            "expected e.g. ' iteration 10/ 100 | ... | lm loss: 9.87E+00 |'); "
            "force another with --input-format golden|csv|jsonl|tensorboard"
        )
    return _finish(state, source, input_format)


def _finish(state: _State, source: str, input_format: str | None) -> Curves:
    metrics = {}
    for name, (its, vals) in state.columns.data.items():
        metrics[name] = resolve(its, vals)
    for name, (its, vals) in state.validation.data.items():
        metrics[name] = resolve(its, vals)
    if state.nemo:
        fmt = "nemo"
    elif input_format in ("mlm", "bridge"):
        fmt = input_format
    else:
        fmt = "bridge" if state.saw_step_time else "mlm"
    segments = [Segment(a, b, c, d) for a, b, c, d in state.segments]
    if len(segments) > 1:
        for seg in segments[1:]:
            state.notes.insert(
                0, f"{source}:{seg.line}: restart: iterations go back to {seg.first_iteration} (new segment)"
            )
    if state.nemo:
        state.notes.append(f"{source}: NeMo iterations count from 0; shown as Megatron iterations (+1)")
    missing = {LOSS: np.asarray(sorted(set(state.missing)), dtype=np.int64)} if state.missing else {}
    return Curves(
        source=source,
        format=fmt,
        metrics=metrics,
        segments=segments,
        missing=missing,
        skipped=np.asarray(sorted(set(state.skipped)), dtype=np.int64),
        notes=state.notes,
    )
