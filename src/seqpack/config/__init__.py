"""Check a training config against every packing and long-context rule before launch (``seqpack doctor``).

>>> from seqpack.config import load_config, check
>>> report = check(load_config(overrides=["model.context_parallel_size=2", "model.seq_length=510"]))
>>> [f.id for f in report.findings]
['SP011']
"""

from seqpack.config._catalog import CATALOG
from seqpack.config._doctor import (
    SCHEMA_VERSION,
    DoctorOptions,
    Report,
    apply_overrides,
    check,
    checked_lang,
    default_lang,
    suggest_fixes,
)
from seqpack.config._findings import Finding, Rule
from seqpack.config._load import LoadedConfig, LoadProblem, load_config, parse_override
from seqpack.config._rules import RULES
from seqpack.config._view import ConfigView, DatasetKind

__all__ = [
    "CATALOG",
    "RULES",
    "SCHEMA_VERSION",
    "ConfigView",
    "DatasetKind",
    "DoctorOptions",
    "Finding",
    "LoadProblem",
    "LoadedConfig",
    "Report",
    "Rule",
    "apply_overrides",
    "check",
    "checked_lang",
    "default_lang",
    "load_config",
    "parse_override",
    "suggest_fixes",
]
