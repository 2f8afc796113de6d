"""Check a training config against every packing and long-context rule before launch (``bridgepack doctor``).

>>> from bridgepack.doctor import load_config, check
>>> report = check(load_config(overrides=["model.context_parallel_size=2", "model.seq_length=510"]))
>>> [f.id for f in report.findings]
['SP011']
"""

from bridgepack.doctor._atlas import atlas_markdown
from bridgepack.doctor._catalog import CATALOG, CatalogEntry, RuleCatalog, catalog_entry, rules_markdown
from bridgepack.doctor._defect_model import ON_BOTH, ON_BRIDGE, ON_MLM, Defect
from bridgepack.doctor._defects import DEFECTS, find_defects
from bridgepack.doctor._doctor import (
    DoctorOptions,
    Report,
    apply_overrides,
    check,
    checked_lang,
    default_lang,
    suggest_fixes,
)
from bridgepack.doctor._findings import Example, Rule
from bridgepack.doctor._load import LoadedConfig, LoadProblem, load_config, parse_override, range_problem
from bridgepack.doctor._rewrite import fixed_yaml
from bridgepack.doctor._rules import RULES
from bridgepack.doctor._versions import known_versions, parse_stack, stack_summary
from bridgepack.doctor._view import ConfigView, DatasetKind

__all__ = [
    "CATALOG",
    "DEFECTS",
    "ON_BOTH",
    "ON_BRIDGE",
    "ON_MLM",
    "RULES",
    "CatalogEntry",
    "ConfigView",
    "DatasetKind",
    "Defect",
    "DoctorOptions",
    "Example",
    "LoadProblem",
    "LoadedConfig",
    "Report",
    "Rule",
    "RuleCatalog",
    "apply_overrides",
    "atlas_markdown",
    "catalog_entry",
    "check",
    "checked_lang",
    "default_lang",
    "find_defects",
    "fixed_yaml",
    "known_versions",
    "load_config",
    "parse_override",
    "parse_stack",
    "range_problem",
    "rules_markdown",
    "stack_summary",
    "suggest_fixes",
]
