"""Check a training config against every packing and long-context rule before launch (``seqpack doctor``).

>>> from seqpack.config import load_config, check
>>> report = check(load_config(overrides=["model.context_parallel_size=2", "model.seq_length=510"]))
>>> [f.id for f in report.findings]
['SP011']
"""

from seqpack.config._atlas import atlas_markdown
from seqpack.config._catalog import CATALOG
from seqpack.config._defects import DEFECTS, Defect
from seqpack.config._doctor import (
    SCHEMA_VERSION,
    DoctorOptions,
    Report,
    apply_overrides,
    check,
    default_lang,
    suggest_fixes,
)
from seqpack.config._findings import Finding, Rule
from seqpack.config._load import LoadedConfig, LoadProblem, load_config, parse_override
from seqpack.config._rules import RULES
from seqpack.config._versions import parse_stack
from seqpack.config._view import ConfigView, DatasetKind

__all__ = [
    "CATALOG",
    "DEFECTS",
    "RULES",
    "SCHEMA_VERSION",
    "ConfigView",
    "DatasetKind",
    "Defect",
    "DoctorOptions",
    "Finding",
    "LoadProblem",
    "LoadedConfig",
    "Report",
    "Rule",
    "apply_overrides",
    "atlas_markdown",
    "check",
    "default_lang",
    "load_config",
    "parse_override",
    "parse_stack",
    "suggest_fixes",
]
