"""Matched Megatron-LM vs Megatron-Bridge correlation runs (bridge-format §10-12), and cleaning old experiment
folders.

>>> from bridgepack.correlate import load_spec, check_spec, build_plan      # doctest: +SKIP
>>> spec = load_spec("correlate.yaml")                                   # doctest: +SKIP
>>> assert not check_spec(spec)                                          # doctest: +SKIP
>>> plan = build_plan(spec, "runs/correlate-20260830-101500")            # doctest: +SKIP
>>> print(plan.mlm.shell()); print(plan.bridge.shell())                  # doctest: +SKIP
"""

from bridgepack.correlate._checks import CHECKS, check_spec
from bridgepack.correlate._clean import (
    CleanAction,
    CleanReport,
    Found,
    clean_experiments,
    clean_stamp,
    find_experiments,
    move_aside_or_delete,
    moved_name,
)
from bridgepack.correlate._knobs import KNOBS, Knob
from bridgepack.correlate._pair import PlannedRun, run_pair
from bridgepack.correlate._plan import (
    PLAN_SCHEMA_VERSION,
    AlignedRow,
    BlockedPlan,
    Command,
    CorrelationPlan,
    PlanOutcome,
    build_plan,
    claim_run_dir,
    make_run_dir,
    new_run_dir,
    render_table,
    write_plan,
)
from bridgepack.correlate._report import CorrelationReport, render_report
from bridgepack.correlate._runner import RunResult, run_logged
from bridgepack.correlate._skill import (
    SKILL_PAIRS,
    Mismatch,
    SkillPairs,
    SkillReport,
    analyse_pair,
    parse_overrides,
    render_skill,
    unmatched_knobs,
)
from bridgepack.correlate._spec import SCHEMA, CorrelationSpec, load_spec, parse_spec

__all__ = [
    "CHECKS",
    "KNOBS",
    "PLAN_SCHEMA_VERSION",
    "SCHEMA",
    "SKILL_PAIRS",
    "AlignedRow",
    "BlockedPlan",
    "CleanAction",
    "CleanReport",
    "Command",
    "CorrelationPlan",
    "CorrelationReport",
    "CorrelationSpec",
    "Found",
    "Knob",
    "Mismatch",
    "PlanOutcome",
    "PlannedRun",
    "RunResult",
    "SkillPairs",
    "SkillReport",
    "analyse_pair",
    "build_plan",
    "check_spec",
    "claim_run_dir",
    "clean_experiments",
    "clean_stamp",
    "find_experiments",
    "load_spec",
    "make_run_dir",
    "move_aside_or_delete",
    "moved_name",
    "new_run_dir",
    "parse_overrides",
    "parse_spec",
    "render_report",
    "render_skill",
    "render_table",
    "run_logged",
    "run_pair",
    "unmatched_knobs",
    "write_plan",
]
