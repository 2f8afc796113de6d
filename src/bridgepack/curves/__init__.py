"""Loss curves: read every Megatron log format into one series type, compare runs, plot the divergence.

>>> from bridgepack.curves import read_curves, compare_curves, Profile      # doctest: +SKIP
>>> a, b = read_curves("run_a.log"), read_curves("golden_values.json")  # doctest: +SKIP
>>> [c.passed for c in compare_curves(a, [b], Profile("bf16"))]          # doctest: +SKIP
[True]
"""

from bridgepack.curves._compare import (
    ALL_METRICS,
    DEFAULT_PROFILE,
    DEFAULT_ULPS,
    PROFILES,
    Comparison,
    Profile,
    bf16_ulp,
    compare_curves,
    compare_series,
    tolerated_failures,
)
from bridgepack.curves._export import golden_document, write_golden
from bridgepack.curves._names import LOSS, canonical, parse_metric_map, rename_metrics
from bridgepack.curves._read import (
    CURVE_FORMATS,
    FORMATS,
    CurvesFormat,
    detect_format,
    one_run,
    read_curves,
    read_runs,
)
from bridgepack.curves._report import curves_figure, render_html, render_png
from bridgepack.curves._results import SCHEMA_VERSION, CompareReport, ExportReport, ShowReport, run_notes
from bridgepack.curves._series import Curves, Segment, Series, find_segments, resolve

__all__ = [
    "ALL_METRICS",
    "CURVE_FORMATS",
    "DEFAULT_PROFILE",
    "DEFAULT_ULPS",
    "FORMATS",
    "LOSS",
    "PROFILES",
    "SCHEMA_VERSION",
    "CompareReport",
    "Comparison",
    "Curves",
    "CurvesFormat",
    "ExportReport",
    "Profile",
    "Segment",
    "Series",
    "ShowReport",
    "bf16_ulp",
    "canonical",
    "compare_curves",
    "compare_series",
    "curves_figure",
    "detect_format",
    "find_segments",
    "golden_document",
    "one_run",
    "parse_metric_map",
    "read_curves",
    "read_runs",
    "rename_metrics",
    "render_html",
    "render_png",
    "resolve",
    "run_notes",
    "tolerated_failures",
    "write_golden",
]
