"""A matched correlation plan: one spec -> the MLM command, the Bridge command, the table of what was aligned.

The spec's knobs (:data:`~._knobs.KNOBS`) become one Megatron-LM command (each knob's Bridge keys spelled
back as flags through the one flag table, :mod:`bridgepack.translate`); the Bridge command is that command's
translation as a whole launch on the spec's recipe (``mlm_to_bridge(..., full=True)``), so the two sides
resolve through the same model of what each launcher does (couplings, conditions, Megatron-LM's defaults
where the recipe differs); the tests resolve both commands with Megatron-LM's and Bridge's own config code.
Every knob is written on both sides even where the defaults agree, so a new default in either launcher
cannot unmatch the pair.

Each side writes into its own folder of a new run folder, never into ``nemo_experiments/`` (bridge-format
§12: Bridge silently resumes from a checkpoint it finds there)::

    OUT/correlate-20260830-101500/
      plan.json  mlm.sh  bridge.sh  aligned.txt
      mlm/checkpoints  mlm/tb_logs  bridge/checkpoints  bridge/tb_logs
"""

from __future__ import annotations

import datetime as _dt
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import orjson

from bridgepack._bridge_keys import override
from bridgepack._io import atomic_write_bytes
from bridgepack.correlate._knobs import KNOBS, NO_DEFAULT, Knob, resolve
from bridgepack.correlate._spec import CorrelationSpec
from bridgepack.correlate._values import format_value
from bridgepack.errors import DataError, UsageError
from bridgepack.findings import Finding
from bridgepack.translate import bridge_to_mlm, bridge_to_mlm_report, mlm_to_bridge

#: Megatron-LM flags of a plan that Bridge has no key for, and need none (the position table follows the
#: sequence length in Bridge 0.6.2's GPT provider).
MLM_ONLY_FLAGS = ("--max-position-embeddings",)

RUN_PREFIX = "correlate-"

#: The one version of every ``bridgepack correlate plan``/``run`` JSON document (the plan, ``plan.json``, a
#: blocked spec, the skill pairs, the run's report and ``report.json``); 2: findings in the shape every
#: finding has (:class:`bridgepack.findings.Finding`: ``id``, a ``fix`` list, ...), not ``rule`` + one
#: ``fix``.
PLAN_SCHEMA_VERSION = 2


@dataclass(frozen=True)
class Command:
    """A command as an argv (run without a shell) plus the environment variables it adds."""

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)

    def shell(self) -> str:
        """The command as one shell line (``PYTHONPATH=... python -m ...``) for copy and paste."""
        prefix = [f"{name}={shlex.quote(value)}:${name}" for name, value in self.env.items()]
        return " ".join([*prefix, shlex.join(self.argv)])

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """``base`` with this command's variables prepended (path lists keep what was there)."""
        merged = dict(base)
        for name, value in self.env.items():
            merged[name] = f"{value}{os.pathsep}{base[name]}" if base.get(name) else value
        return merged


@dataclass(frozen=True)
class AlignedRow:
    """One line of the alignment table: the value, how each side spells it, and why it had to be set."""

    knob: str
    value: Any
    mlm: str
    bridge: str
    mlm_default: Any
    recipe_default: Any
    why: str


@dataclass(frozen=True)
class CorrelationPlan:
    """The two commands of a matched pair, their fresh output folders, and the alignment table."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = PLAN_SCHEMA_VERSION

    spec: CorrelationSpec
    run_dir: Path
    overrides: dict[str, Any]
    mlm: Command
    bridge: Command
    rows: tuple[AlignedRow, ...]

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data: ``plan.json`` (``bridgepack correlate plan --format json`` adds
        ``written``: :class:`PlanOutcome`)."""
        return {
            "schema_version": self.SCHEMA_VERSION,
            "spec": self.spec.source,
            "run_dir": os.fspath(self.run_dir),
            "mlm": {"argv": list(self.mlm.argv), "env": self.mlm.env, "shell": self.mlm.shell()},
            "bridge": {"argv": list(self.bridge.argv), "env": self.bridge.env, "shell": self.bridge.shell()},
            "aligned": [row.__dict__ for row in self.rows],
        }


@dataclass(frozen=True)
class PlanOutcome:
    """What ``bridgepack correlate plan`` did with a plan: the plan, and whether its files were written."""

    SCHEMA_VERSION: ClassVar[int] = PLAN_SCHEMA_VERSION

    plan: CorrelationPlan
    written: bool

    def to_dict(self) -> dict[str, Any]:
        """``bridgepack correlate plan --format json``'s document: the plan and ``written``."""
        return {**self.plan.to_dict(), "written": self.written}


@dataclass(frozen=True)
class BlockedPlan:
    """A spec no plan is made of: the findings that block it (``bridgepack correlate plan|run``, exit 1)."""

    SCHEMA_VERSION: ClassVar[int] = PLAN_SCHEMA_VERSION

    spec: str
    findings: list[Finding]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.SCHEMA_VERSION,
            "spec": self.spec,
            "blocked": True,
            "findings": [f.to_dict() for f in self.findings],
        }


def _utc_now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def new_run_dir(
    out: str | os.PathLike[str], prefix: str = RUN_PREFIX, now: _dt.datetime | None = None
) -> Path:
    """A free run folder name under ``out`` stamped with the time (UTC): ``correlate-20260830-101500``, or
    ``...-101500-2``, ``-3``, ... when that second's name is taken (two plans in one second each get their
    own folder). Only a name: :func:`claim_run_dir` creates it."""
    stamp = (now or _utc_now()).strftime("%Y%m%d-%H%M%S")
    base = Path(out) / f"{prefix}{stamp}"
    run_dir, n = base, 1
    while run_dir.exists() or run_dir.is_symlink():
        n += 1
        run_dir = base.with_name(f"{base.name}-{n}")
    return run_dir


def claim_run_dir(
    out: str | os.PathLike[str], prefix: str = RUN_PREFIX, now: _dt.datetime | None = None
) -> Path:
    """Create a new run folder under ``out`` and return it; a name another process creates first is skipped
    (the folder is made with ``mkdir``, which only one creator wins), never shared."""
    Path(out).mkdir(parents=True, exist_ok=True)
    while True:
        run_dir = new_run_dir(out, prefix, now)
        try:
            run_dir.mkdir()
        except FileExistsError:
            continue
        return run_dir


def _why(knob: Knob, value: Any, values: dict[str, Any]) -> str:
    parts = []
    for side, default in (("MLM", knob.mlm_default), ("recipe", knob.recipe_default)):
        resolved = resolve(default, values)
        if default is NO_DEFAULT:
            parts.append(f"{side} has no default")
        elif resolved != value:
            parts.append(f"{side} default {format_value(resolved)}")
    text = "; ".join(parts) or "same default on both sides; set so a new default cannot unmatch the pair"
    return f"{text} ({knob.note})" if knob.note else text


def _side_overrides(base: dict[str, Any], out: Path, iters: int) -> dict[str, Any]:
    return {
        **base,
        "checkpoint.save": os.fspath(out / "checkpoints"),
        "checkpoint.save_interval": iters,
        "logger.tensorboard_dir": os.fspath(out / "tb_logs"),
    }


def _mlm_flags(knob: Knob, value: Any, values: dict[str, Any]) -> list[str]:
    """One knob's MLM flags, through the flag table; no flag is right only where MLM's default is the value.

    ``--seed`` covers both ``rng.seed`` and ``dataset.random_seed`` (MLM seeds the mock data with it), so a
    knob with some of its keys translated is complete.
    """
    report = bridge_to_mlm_report(knob.bridge_values(value))
    if report.untranslated and not report.flags and resolve(knob.mlm_default, values) != value:
        missing = ", ".join(report.untranslated)
        raise DataError(f"{knob.name}={format_value(value)}: no Megatron-LM flag for {missing}")
    return [*report.flags, *(part for flag in knob.mlm_only for part in (flag, format_value(value)))]


def _bridge_side(spec: CorrelationSpec, mlm_flags: list[str], values: dict[str, Any]) -> dict[str, Any]:
    """The Bridge overrides that train what ``mlm_flags`` trains: their translation as a whole launch on the
    spec's recipe, then every knob key the translation left to a default both sides share (so a new default
    cannot unmatch the pair). A knob the translation resolves to another value is a plan that cannot be
    matched (``DataError``), never a half-matched pair."""
    translation = mlm_to_bridge(mlm_flags, recipe=spec["launch.recipe"], full=True)
    refused = [item for item in translation.untranslated if item.split()[0] not in MLM_ONLY_FLAGS]
    if refused:
        why = translation.reason(refused[0])
        raise DataError(f"{spec.source}: no Bridge override trains {refused[0]} ({why})")
    overrides = dict(translation.overrides)
    for knob in KNOBS:
        for key, value in knob.bridge_values(values[knob.name]).items():
            if key in overrides and overrides[key] != value:
                raise DataError(
                    f"{spec.source}: {knob.name}={format_value(values[knob.name])}: Megatron-LM runs it as"
                    f" {key}={format_value(overrides[key])} (bridgepack translate)"
                )
            overrides.setdefault(key, value)
    return overrides


def build_plan(spec: CorrelationSpec, run_dir: str | os.PathLike[str]) -> CorrelationPlan:
    """The matched pair for ``spec`` writing under ``run_dir`` (made absolute: launchers may ``cd``).

    Call :func:`~bridgepack.correlate.check_spec` first: this function assumes the spec passed it.
    """
    root = Path(run_dir).absolute()
    iters = spec["train.train_iters"]
    values = {knob.name: knob.value(spec) for knob in KNOBS}
    knob_flags = {knob.name: _mlm_flags(knob, values[knob.name], values) for knob in KNOBS}
    mlm_flags = [flag for flags in knob_flags.values() for flag in flags]
    bridge_overrides = _side_overrides(_bridge_side(spec, mlm_flags, values), root / "bridge", iters)
    launcher = [*shlex.split(spec["launch.launcher"]), f"--nproc_per_node={spec.world_size}"]
    mlm = Command(
        (
            *launcher,
            spec["launch.mlm_script"],
            *mlm_flags,
            *bridge_to_mlm(_side_overrides({}, root / "mlm", iters)),
        ),
        {"PYTHONPATH": spec["launch.mlm_pythonpath"]},
    )
    bridge = Command(
        (
            *launcher,
            spec["launch.bridge_script"],
            "--recipe",
            spec["launch.recipe"],
            *(override(key, value) for key, value in bridge_overrides.items()),
        )
    )
    rows = []
    for knob in KNOBS:
        value = values[knob.name]
        rows.append(
            AlignedRow(
                knob=knob.name,
                value=value,
                mlm=" ".join(knob_flags[knob.name]) or "(no flag: MLM's default)",
                bridge=" ".join(override(key, bridge_overrides[key]) for key in knob.bridge),
                mlm_default=resolve(knob.mlm_default, values),
                recipe_default=resolve(knob.recipe_default, values),
                why=_why(knob, value, values),
            )
        )
    rows.append(
        AlignedRow(
            knob="output folder",
            value=os.fspath(root),
            mlm=f"--save {root / 'mlm' / 'checkpoints'}",
            bridge=override("checkpoint.save", os.fspath(root / "bridge" / "checkpoints")),
            mlm_default=None,
            recipe_default="nemo_experiments/default",
            why="a fresh folder per run: Bridge silently resumes from a checkpoint in nemo_experiments/",
        )
    )
    return CorrelationPlan(spec, root, bridge_overrides, mlm, bridge, tuple(rows))


def render_table(rows: tuple[AlignedRow, ...]) -> str:
    """The alignment table as plain text (also written to ``aligned.txt``)."""
    header = ("knob", "value", "Megatron-LM", "Bridge", "why")
    lines = [(r.knob, format_value(r.value), r.mlm, r.bridge, r.why) for r in rows]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line[:4], widths, strict=True)) + "  " + line[4]
        for line in [header, *lines]
    )


def make_run_dir(run_dir: Path) -> None:
    """Create the run folder; an existing one (or anything by that name) is refused, never reused."""
    try:
        run_dir.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise UsageError(f"{os.fspath(run_dir)}: run folder already exists (never overwritten)") from None


def write_plan(plan: CorrelationPlan) -> None:
    """Write the plan files and both sides' output folders into the run folder: the empty one
    :func:`claim_run_dir` made, or a new one (anything else by that name is refused, never reused)."""
    if not (plan.run_dir.is_dir() and not plan.run_dir.is_symlink() and not any(plan.run_dir.iterdir())):
        make_run_dir(plan.run_dir)
    for side in ("mlm", "bridge"):
        (plan.run_dir / side).mkdir()
    atomic_write_bytes(plan.run_dir / "plan.json", orjson.dumps(plan.to_dict(), option=orjson.OPT_INDENT_2))
    atomic_write_bytes(plan.run_dir / "mlm.sh", f"#!/bin/sh\n{plan.mlm.shell()}\n".encode())
    atomic_write_bytes(plan.run_dir / "bridge.sh", f"#!/bin/sh\n{plan.bridge.shell()}\n".encode())
    atomic_write_bytes(plan.run_dir / "aligned.txt", (render_table(plan.rows) + "\n").encode())
