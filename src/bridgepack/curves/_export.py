"""Write curves as Megatron-LM golden-value JSON (bridge-format §11), so a log can become a CI reference.

Layout, per metric (Megatron-LM's names: ``lm loss``, ``num-zeros``, ``iteration-time`` in seconds, ...)::

    {"lm loss": {"start_step": 10, "end_step": 40, "step_interval": 10,
                 "values": {"10": 10.84, "20": "nan", "30": 10.71, "40": 10.5}}}

Every step of the ``start..end`` grid is listed; a step without a value is the string ``"nan"`` ("not
recorded", Megatron-LM's convention). A *real* NaN loss therefore cannot be told apart once written; the
export says so in its notes. Values are rounded to 5 decimals like Megatron-LM's files.
"""

from __future__ import annotations

import math
import os
from functools import reduce
from typing import Any

import numpy as np
import orjson

from bridgepack._io import atomic_write_bytes
from bridgepack.curves._names import GOLDEN_METRICS, LOSS
from bridgepack.curves._series import Curves, Series
from bridgepack.errors import DataError

GOLDEN_DECIMALS = 5


def _metric_entry(series: Series, notes: list[str], name: str) -> dict[str, Any]:
    steps = series.iterations
    interval = int(reduce(math.gcd, np.diff(steps).tolist(), 0)) or 1
    start, end = int(steps[0]), int(steps[-1])
    values: dict[str, Any] = {str(s): "nan" for s in range(start, end + 1, interval)}
    real_nan = 0
    for step, value in zip(steps.tolist(), series.values.tolist(), strict=True):
        if math.isnan(value):
            real_nan += 1
            values[str(step)] = "nan"
        elif math.isinf(value):
            values[str(step)] = "inf" if value > 0 else "-inf"
        else:
            values[str(step)] = round(value, GOLDEN_DECIMALS)
    if real_nan:
        notes.append(
            f"'{name}': {real_nan} real NaN value(s) written as \"nan\" (reads back as not recorded)"
        )
    return {"start_step": start, "end_step": end, "step_interval": interval, "values": values}


def golden_document(
    curves: Curves, metrics: tuple[str, ...] = GOLDEN_METRICS
) -> tuple[dict[str, Any], list[str]]:
    """The golden-value document of ``curves`` and notes; :class:`DataError` if there is no ``lm loss``."""
    loss = curves.metrics.get(LOSS)
    if loss is None or len(loss) == 0:
        have = ", ".join(sorted(curves.metrics)) or "nothing"
        raise DataError(f"{curves.source}: no '{LOSS}' value to export (found: {have})")
    notes: list[str] = []
    doc = {}
    for name in metrics:
        series = curves.metrics.get(name)
        if series is not None and len(series):
            doc[name] = _metric_entry(series, notes, name)
    return doc, notes


def write_golden(curves: Curves, out: str | os.PathLike[str], *, overwrite: bool = False) -> list[str]:
    """Write ``curves`` as golden-value JSON atomically; returns the notes."""
    doc, notes = golden_document(curves)
    atomic_write_bytes(out, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n", overwrite=overwrite)
    return notes
