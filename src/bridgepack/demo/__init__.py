"""``bridgepack demo``: the whole toolkit on bundled data -- pack, inspect, doctor, train packed vs padded,
compare the curves -- ending in a self-contained HTML report.

>>> from bridgepack.demo import DemoOptions, run_demo                      # doctest: +SKIP
>>> result = run_demo(DemoOptions(out=Path("demo-out"), quick=True))
>>> result.passed, result.paths.report, result.speedup.real_tokens_per_s
"""

from bridgepack.demo._paths import DemoPaths, default_out_dir
from bridgepack.demo._resources import EXPECTED_FINDING, config_path, dataset_path
from bridgepack.demo._result import DemoResult, Speedup, StepResult
from bridgepack.demo._run import DEFAULT_THREADS, STEPS, DemoOptions, Reporter, SilentReporter, run_demo
from bridgepack.demo._sizes import FULL, QUICK, DemoSizes
from bridgepack.demo._toy_tokenizer import build_tokenizer

__all__ = [
    "DEFAULT_THREADS",
    "EXPECTED_FINDING",
    "FULL",
    "QUICK",
    "STEPS",
    "DemoOptions",
    "DemoPaths",
    "DemoResult",
    "DemoSizes",
    "Reporter",
    "SilentReporter",
    "Speedup",
    "StepResult",
    "build_tokenizer",
    "config_path",
    "dataset_path",
    "default_out_dir",
    "run_demo",
]
