"""Reader of Megatron-LM / Megatron-Bridge / NeMo 2.x training stdout (bridge-format §10).

What real logs look like (``shared/data/real-logs/``) decides the shape of this reader:

* A record is ``iteration <N>/<M> | key: value | key: value | ... |``. Whatever comes before ``iteration``
  (no timestamp, ``[2025-04-13 23:41:12]``, ``[2026-08-22 10:00:00.123456]``, launcher prefixes such as
  ``[default3]:`` or ``[lrdn3321:3]:`` that change from line to line) is ignored: the record is found
  wherever its header starts. A record ends at the end of its line *or* where the next record
  starts (two records can run together on one physical line), and at the first ``[`` (a ``[Rank N]``
  line glued to it).
* Fields are split on ``|``, key and value at the first ``:``; printed keys are mapped to
  Megatron-LM's TensorBoard names and units (:mod:`._names`), so ``(ms)`` and ``(s)`` times,
  ``lm-loss`` and ``lm loss`` agree.
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

Speed: the file is read as bytes in large blocks; a numba kernel (:mod:`._kernel`) finds the records and
splits and parses their fields in one pass. Python then works per distinct key and per block, never per
line, so a 1M-line log reads in seconds (``benchmarks/curves_parse.py``).
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridgepack.curves._kernel import MAX_KEYS, STATUS_BAD, STATUS_SLOW, TOO_MANY_KEYS, scan_records
from bridgepack.curves._log_lines import LOG_LINES, MEGATRON, LogLine, detect_line, log_line
from bridgepack.curves._names import GPU_UTILIZATION, LOG_KEYS, LOSS, NAN_ITERS, SKIPPED, STEP_TIME
from bridgepack.curves._series import Curves, FloatArray, IntArray, Segment, resolve
from bridgepack.errors import InputError, param

BLOCK_BYTES = 16 << 20  # bounds memory: the kernel keeps ~10 arrays of 8 bytes per ':' of a block
MAX_NOTES = 20
#: Largest iteration a validation line may name (int64 storage; found by fuzzing: 10**30 overflowed).
MAX_ITERATION = 2**62
#: Longest line kept while looking for its end (memory stays ~2 blocks + this); longer is an InputError.
MAX_LINE_BYTES = 64 << 20

_VALIDATION = re.compile(rb"validation loss at ([^|\n]*)\|([^\n]*)")
_VALIDATION_AT = re.compile(rb"iteration\s+(\d+)(.*)")
_FLOAT = rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"  # what float() reads, so a match always converts
_STEP_TIME = re.compile(rb"Step Time :\s*(" + _FLOAT + rb")s(?:\s+GPU utilization:\s*(" + _FLOAT + rb"))?")
_DROPPED = -2  # key id given to fields whose value is not a number


@dataclass
class _Columns:
    """Small per-metric iteration/value lists in log order (validation blocks)."""

    data: dict[str, tuple[list[int], list[float]]] = field(default_factory=dict)

    def add(self, name: str, iteration: int, value: float) -> None:
        col = self.data.get(name)
        if col is None:
            col = self.data[name] = ([], [])
        col[0].append(iteration)
        col[1].append(value)


@dataclass
class _State:
    line: LogLine
    key_names: dict[int, tuple[str, float]] = field(default_factory=dict)  # key hash -> canonical, scale
    iteration_chunks: list[IntArray] = field(default_factory=list)
    records: int = 0
    # canonical metric -> chunks of (record ids, values); record ids grow in log order
    chunks: dict[str, list[tuple[IntArray, FloatArray]]] = field(default_factory=dict)
    no_loss: list[IntArray] = field(default_factory=list)  # records printed without a loss
    step_times: list[tuple[int, float, float | None]] = field(default_factory=list)
    validation: _Columns = field(default_factory=_Columns)
    notes: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)  # what stopped the read early (Curves.damaged)
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


def _line_of(state: _State, block: bytes, pos: int) -> int:
    return state.lines_before + block.count(b"\n", 0, pos) + 1


def _text(block: bytes, start: int, end: int) -> str:
    return block[start:end].decode("utf-8", errors="replace")


def _scan_block(state: _State, block: bytes, source: str, at_eof: bool) -> int:
    """Parse every training, validation and Step Time record of one block of whole lines.

    Returns the number of newlines in the block (counted by the kernel on its way).
    """
    scan = scan_records(block, state.line.header, state.line.iteration_offset)
    if np.any(scan.field_key == TOO_MANY_KEYS):
        raise InputError(
            f"{source}: more than {MAX_KEYS} different field names in one block: not a training log"
        )
    n = scan.iterations.size
    # A last line without its newline is cut off unless it ends as Megatron ends every line (" |") and holds
    # a loss: a line cut inside a value ("lm loss: 9.1E+") or before it ("iteration 30/ 100 |") would
    # otherwise read as a loss Megatron left off (a NaN), silently.
    tail_line = block[block.rfind(b"\n") + 1 :].rstrip()
    cut_short = bool(n) and (not scan.closed[-1] or not tail_line.endswith(b"|") or b"loss" not in tail_line)
    if at_eof and n and state.line.closed_by_pipe and not block.endswith(b"\n") and cut_short:
        last = int(scan.positions[-1])
        if block.find(b"\n", last) < 0:
            cut = (
                f"{source}:{_line_of(state, block, last)}: last line is cut off; "
                f"record of iteration {int(scan.iterations[-1])} ignored"
            )
            state.note(cut)
            state.damaged.append(cut)
            n -= 1
            scan = scan.records(n)
    rec_iter, rec_pos = scan.iterations, scan.positions
    f_rec, f_key, f_vs, f_ve = scan.field_record, scan.field_key, scan.value_start, scan.value_end
    f_value, f_status, key_hash, key_span = scan.value, scan.status, scan.key_hash, scan.key_span
    if b"Step Time :" in block or (state.pending_step_time is not None and n):
        _collect_step_times(state, block, rec_pos)
    if b"validation loss at" in block:
        _scan_validation(state, block)
    if n == 0:
        return scan.newlines
    _track_segments(state, block, rec_iter, rec_pos)
    base = state.records
    state.records += n
    state.iteration_chunks.append(rec_iter)
    names = []
    for h, (start, end) in zip(key_hash.tolist(), key_span.tolist(), strict=True):
        known = state.key_names.get(h)
        if known is None:
            key = _text(block, start, end)
            known = state.key_names[h] = LOG_KEYS.get(key, (key, 1.0))
        names.append(known)
    for k in np.flatnonzero(f_status == STATUS_SLOW).tolist():
        f_value[k] = float(_text(block, int(f_vs[k]), int(f_ve[k])))
    bad = f_status == STATUS_BAD
    if bad.any():
        for k in np.flatnonzero(bad)[:MAX_NOTES].tolist():
            start, end = key_span[int(f_key[k])].tolist()
            raw = _text(block, int(f_vs[k]), int(f_ve[k]))
            where = f"{source}:{_line_of(state, block, int(f_vs[k]))}: iteration {int(rec_iter[f_rec[k]])}"
            state.note(f"{where}: field '{_text(block, start, end)}': not a number: {raw!r}")
        f_key = np.where(bad, np.int16(_DROPPED), f_key)
    # Group the fields by key id (a radix sort on int16); stable, so each key keeps log order.
    order = np.argsort(f_key, kind="stable")
    keys = f_key[order]
    bounds = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    has_loss = np.zeros(n, dtype=bool)
    for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), int(keys.size)], strict=True):
        if hi <= lo:  # no field at all in the block's records (keys is empty)
            continue
        key_id = int(keys[lo])
        if key_id == _DROPPED:
            continue
        name, scale = names[key_id]
        if not name:
            continue  # ": value" without a key
        take = order[lo:hi]
        ids = f_rec[take]
        values = f_value[take] * scale if scale != 1.0 else f_value[take]
        state.chunks.setdefault(name, []).append((ids + base, values))
        if name == LOSS:
            has_loss[ids] = True
    if not has_loss.all():
        state.no_loss.append(np.flatnonzero(~has_loss) + base)
    return scan.newlines


def _track_segments(state: _State, block: bytes, iters: IntArray, positions: IntArray) -> None:
    """Extend the current segment; a record whose iteration goes back starts a new one (a restart)."""
    starts = (np.flatnonzero(iters[1:] < iters[:-1]) + 1).tolist()
    if state.previous is None or int(iters[0]) < state.previous:
        starts.insert(0, 0)
    cuts = [*starts, int(iters.size)]
    if not starts or starts[0] != 0:
        seg = state.segments[-1]
        seg[1] = max(seg[1], int(iters[: cuts[0]].max()))
        seg[2] += cuts[0]
    for lo, hi in itertools.pairwise(cuts):
        part = iters[lo:hi]
        line = _line_of(state, block, int(positions[lo]))
        state.segments.append([int(part[0]), int(part.max()), hi - lo, line])
    state.previous = int(iters[-1])


def _collect_step_times(state: _State, block: bytes, positions: IntArray) -> None:
    """Bridge prints ``Step Time : ...`` before the iteration line it belongs to."""
    state.saw_step_time = state.saw_step_time or b"Step Time :" in block
    base = state.records
    if positions.size and state.pending_step_time is not None:
        state.step_times.append((base, *state.pending_step_time))
        state.pending_step_time = None
    for st in _STEP_TIME.finditer(block):
        util = float(st.group(2)) if st.group(2) else None
        target = int(np.searchsorted(positions, st.start(), side="right"))
        if target < positions.size:
            state.step_times.append((base + target, float(st.group(1)), util))
        else:
            state.pending_step_time = (float(st.group(1)), util)


def _scan_validation(state: _State, block: bytes) -> None:
    for v in _VALIDATION.finditer(block):
        at = _VALIDATION_AT.search(v.group(1))
        if at is None:
            continue
        iteration = int(at.group(1))
        if iteration > MAX_ITERATION:  # not a real step (iterations are stored as int64)
            continue
        label = at.group(2).decode("utf-8", errors="replace").strip()
        if label.startswith("on "):
            label = label[3:]
        label = label.replace(" set", "").strip() or "validation"
        for part in v.group(2).decode("utf-8", errors="replace").split("|"):
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


def read_log(
    path: str | os.PathLike[str], input_format: str | None = None, *, progress: Any = None
) -> Curves:
    """Read a training log of any line format of :data:`LOG_LINES` (Megatron-LM / Bridge / NeMo 2.x
    stdout) into :class:`Curves`.

    ``input_format`` forces a line format by name; ``None`` detects it from the text
    (:func:`~bridgepack.curves._log_lines.detect_line`).
    ``progress`` (from :func:`bridgepack._progress.progress`) gets one task advanced by the bytes read.
    Raises :class:`InputError` for an unreadable or empty file, or one without any iteration line.
    """
    source = os.fspath(path)
    forced = None if input_format is None else log_line(input_format)
    if input_format is not None and forced is None:
        raise ValueError(f"{input_format!r} is no line format (bridgepack.curves._log_lines.LOG_LINES)")
    state: _State | None = None
    tail = b""
    total = 0
    # an OSError is worded by the caller, as every reader's (bridgepack.curves._read.read_runs)
    with open(path, "rb") as handle:
        task = None
        if progress is not None:
            task = progress.add_task(
                f"reading {os.path.basename(source)}", total=os.fstat(handle.fileno()).st_size
            )
        while True:
            raw = handle.read(BLOCK_BYTES)
            if task is not None:
                progress.advance(task, len(raw))
            at_eof = len(raw) < BLOCK_BYTES
            if not raw and not tail:
                break
            total += len(raw)
            data = tail + raw
            if at_eof:
                block, tail = data, b""
            else:
                cut = data.rfind(b"\n") + 1
                block, tail = data[:cut], data[cut:]
                if len(tail) > MAX_LINE_BYTES:  # no newline for that long: not a log, stop reading
                    line = (state.lines_before if state is not None else 0) + block.count(b"\n") + 1
                    raise InputError(f"{source}:{line}: line longer than {MAX_LINE_BYTES} bytes")
            if state is None:
                state = _State(line=detect_line(block) if forced is None else forced)
            state.lines_before += _scan_block(state, block, source, at_eof)
            if at_eof:
                break
    if total == 0 or state is None:
        raise InputError(f"{source}: empty file")
    if not state.segments:
        raise InputError(
            f"{source}: no training iteration line found (tried formats: "
            f"{', '.join(line.name for line in LOG_LINES)}; expected e.g. {state.line.example}); "
            f"force another format with {param('input_format')}"
        )
    return _finish(state, source, input_format)


def _finish(state: _State, source: str, input_format: str | None) -> Curves:
    record_iterations = (
        np.concatenate(state.iteration_chunks) if state.iteration_chunks else np.zeros(0, dtype=np.int64)
    )
    metrics = {}
    missing, skipped = _lost_losses(state, record_iterations)  # reads the chunks: before they go
    for name in list(state.chunks):
        chunks = state.chunks.pop(name)  # free each metric's chunks as soon as it is joined
        # record ids rise within a chunk (stable grouping) and from block to block: already log order
        records = np.concatenate([c[0] for c in chunks])
        values = np.concatenate([c[1] for c in chunks])
        del chunks
        metrics[name] = resolve(record_iterations[records], values)
    if state.step_times:
        ids = np.asarray([t[0] for t in state.step_times], dtype=np.int64)
        metrics[STEP_TIME] = resolve(record_iterations[ids], [t[1] for t in state.step_times])
        with_util = [t for t in state.step_times if t[2] is not None]
        if with_util:
            util_ids = np.asarray([t[0] for t in with_util], dtype=np.int64)
            utils = [float(t[2] or 0.0) for t in with_util]
            metrics[GPU_UTILIZATION] = resolve(record_iterations[util_ids], utils)
    for name, (its, vals) in state.validation.data.items():
        metrics[name] = resolve(its, vals)
    fmt = state.line.name
    if input_format is None and state.line is MEGATRON and state.saw_step_time:
        fmt = "bridge"  # Bridge prints Megatron's line, and its own Step Time line before it
    segments = [Segment(a, b, c, d) for a, b, c, d in state.segments]
    for seg in reversed(segments[1:]):
        state.notes.insert(
            0, f"{source}:{seg.line}: restart: iterations go back to {seg.first_iteration} (new segment)"
        )
    if state.line.iteration_offset:
        state.notes.append(
            f"{source}: {state.line.label} iterations count from {1 - state.line.iteration_offset}; shown "
            f"as Megatron iterations ({state.line.iteration_offset:+d})"
        )
    return Curves(
        source=source,
        format=fmt,
        metrics=metrics,
        segments=segments,
        missing={LOSS: missing} if missing.size else {},
        skipped=skipped,
        notes=state.notes,
        damaged=state.damaged,
    )


def _lost_losses(state: _State, record_iterations: IntArray) -> tuple[IntArray, IntArray]:
    """Iterations printed without a loss: skipped (every step skipped) or missing (a NaN left off).

    Megatron prints the loss only when it is > 0. If the line says steps were skipped and no NaN was
    counted, the interval had no step to average (skipped); otherwise the loss was NaN and vanished.
    """
    empty = np.zeros(0, dtype=np.int64)
    if not state.no_loss:
        return empty, empty
    records = np.unique(np.concatenate(state.no_loss))
    skipped_count = _values_at(state, SKIPPED, records)
    nan_count = _values_at(state, NAN_ITERS, records)
    is_skip = (skipped_count > 0) & ~(nan_count > 0)
    iterations = record_iterations[records]
    return np.unique(iterations[~is_skip]), np.unique(iterations[is_skip])


def _values_at(state: _State, name: str, records: IntArray) -> FloatArray:
    """The value of ``name`` on each of ``records`` (0 where the record does not print it)."""
    out = np.zeros(records.size, dtype=np.float64)
    for ids, values in state.chunks.get(name, []):
        hit = np.isin(ids, records)
        if hit.any():
            out[np.searchsorted(records, ids[hit])] = values[hit]
    return out
