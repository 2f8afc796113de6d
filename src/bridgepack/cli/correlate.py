"""``bridgepack correlate plan|run``: matched Megatron-LM vs Bridge runs, run and compared (bridge-format
§10-12)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import typer

from bridgepack.cli._common import (
    FormatOption,
    OutputFormat,
    QuietOption,
    emit_json,
    err_console,
    out_console,
)
from bridgepack.correlate import (
    SKILL_PAIRS,
    BlockedPlan,
    CorrelationPlan,
    PlannedRun,
    PlanOutcome,
    SkillPairs,
    analyse_pair,
    build_plan,
    check_spec,
    claim_run_dir,
    load_spec,
    new_run_dir,
    render_report,
    render_skill,
    render_table,
    run_pair,
    write_plan,
)
from bridgepack.curves import DEFAULT_PROFILE, PROFILES, Profile
from bridgepack.errors import UsageError
from bridgepack.findings import Finding

app = typer.Typer(
    help="Matched Megatron-LM vs Megatron-Bridge correlation runs: plan both commands, run them, compare.",
    no_args_is_help=True,
)

SpecOption = typer.Option(
    None, "--spec", help="Correlation spec (YAML): model, batch, LR schedule, optimizer..."
)
OutOption = typer.Option(Path("."), "--out", help="Folder for the new timestamped run folder.")


def _print_findings(findings: list[Finding], source: str, fmt: OutputFormat) -> None:
    if fmt is OutputFormat.json:
        emit_json(BlockedPlan(source, findings))
        return
    out_console.print(
        f"{source}: the plan is blocked by {len(findings)} finding(s):", markup=False, soft_wrap=True
    )
    for f in findings:
        fixes = "; ".join(f.fix) or f.why
        out_console.print(f"  {f.id} {f.message}\n        fix: {fixes}", markup=False, soft_wrap=True)


def _checked_plan(spec_path: Path, out: Path | None, fmt: OutputFormat) -> CorrelationPlan:
    """The plan of a spec that passes its checks; with ``out``, in a run folder made new under it (nothing
    is made for a blocked spec), else named under the current folder for the printed commands only."""
    spec = load_spec(spec_path)
    findings = check_spec(spec)
    if findings:
        _print_findings(findings, os.fspath(spec_path), fmt)
        raise typer.Exit(1)
    return build_plan(spec, claim_run_dir(out) if out is not None else new_run_dir(Path(".")))


@app.command("plan")
def plan_command(
    spec: Path | None = SpecOption,
    out: Path | None = typer.Option(
        None, "--out", help="Write plan.json, mlm.sh, bridge.sh, aligned.txt into a new run folder here."
    ),
    from_skill: bool = typer.Option(
        False,
        "--from-skill",
        help="Show the Bridge skill's command pairs and the knobs they leave unmatched.",
    ),
    fmt: OutputFormat = FormatOption,
    quiet: bool = QuietOption,  # nothing on stderr to silence: taken as every command takes it
) -> None:
    """Write the Megatron-LM and the Bridge command of one spec, every knob set on both sides.

    Example: bridgepack correlate plan --spec correlate.yaml --out runs
    """
    if from_skill:
        if spec is not None:
            raise UsageError("--from-skill and --spec: pick one")
        reports = [analyse_pair(name) for name in SKILL_PAIRS]
        if fmt is OutputFormat.json:
            emit_json(SkillPairs(reports))
        else:
            out_console.print("\n\n".join(render_skill(r) for r in reports), markup=False, soft_wrap=True)
        return
    if spec is None:
        raise UsageError("pass --spec SPEC.yaml (or --from-skill)")
    plan = _checked_plan(spec, out, fmt)
    if out is not None:
        write_plan(plan)
        err_console.print(
            f"wrote {plan.run_dir}/ (plan.json, mlm.sh, bridge.sh, aligned.txt)", markup=False, soft_wrap=True
        )
    if fmt is OutputFormat.json:
        emit_json(PlanOutcome(plan, written=out is not None))
        return
    text = [
        "# Megatron-LM",
        plan.mlm.shell(),
        "",
        "# Megatron-Bridge",
        plan.bridge.shell(),
        "",
        "# aligned knobs",
        render_table(plan.rows),
    ]
    out_console.print("\n".join(text), markup=False, soft_wrap=True)


def _argv(option: str, text: str, shell: bool) -> list[str] | str:
    if shell:
        if not text.strip():
            raise UsageError(f"{option}: empty command")
        return text
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"{option}: cannot split the command ({exc})") from None
    if not argv:
        raise UsageError(f"{option}: empty command")
    return argv


@app.command("run")
def run_command(
    spec: Path | None = SpecOption,
    a: str | None = typer.Option(None, "--a", help="Reference command (torchrun, srun, anything)."),
    b: str | None = typer.Option(None, "--b", help="Command compared with the reference."),
    out: Path = OutOption,
    tolerance: str = typer.Option(DEFAULT_PROFILE, "--tolerance", help=f"One of {', '.join(PROFILES)}."),
    metric: list[str] | None = typer.Option(
        None,
        "--metric",
        "-m",
        help="Metric to compare (repeatable; default lm loss; 'all' = every shared one).",
    ),
    shell: bool = typer.Option(False, "--shell", help="Run --a/--b through /bin/sh (pipes, env, &&)."),
    fmt: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """Run two commands one after the other, tee their logs into a new run folder, compare the loss curves.

    Example: bridgepack correlate run --a "python train.py --lr 1e-3" --b "python train.py --lr 2e-3" --out
    runs
    """
    profile = Profile(tolerance)
    runs: tuple[PlannedRun, PlannedRun]
    if spec is not None:
        if a is not None or b is not None or shell:
            raise UsageError("--spec runs the planned pair: leave out --a, --b and --shell")
        plan = _checked_plan(spec, out, fmt)
        write_plan(plan)
        run_dir = plan.run_dir
        base = dict(os.environ)
        runs = (
            PlannedRun("mlm", plan.mlm.argv, plan.mlm.environment(base), plan.mlm.shell()),
            PlannedRun("bridge", plan.bridge.argv, plan.bridge.environment(base), plan.bridge.shell()),
        )
    elif a is not None and b is not None:
        runs = (PlannedRun("a", _argv("--a", a, shell)), PlannedRun("b", _argv("--b", b, shell)))
        run_dir = claim_run_dir(out)
    else:
        raise UsageError("pass --spec SPEC.yaml, or both --a CMD and --b CMD")

    def echo(label: str, line: str) -> None:
        err_console.print(f"[{label}] {line}", markup=False, highlight=False, soft_wrap=True)

    report = run_pair(run_dir, runs, profile, echo=None if quiet else echo, metrics=metric or None)
    if fmt is OutputFormat.json:
        emit_json(report)
    else:
        out_console.print(render_report(report), markup=False, soft_wrap=True)
    if report.exit_code:
        raise typer.Exit(report.exit_code)


#: What ``bridgepack correlate`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = app
