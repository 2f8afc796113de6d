#!/usr/bin/env python3
"""Grade an answer to one of this skill's eval tasks, deterministically, with bridgepack itself.

    python evals/grade.py TASK_ID ANSWER_DIR     # exit 0 pass, 1 fail (each miss named), 2 usage
    python evals/grade.py --check-all            # CI: each reference passes, each wrong answer fails

The checks of a task live in ``evals.json`` beside this file (``grade.checks``), so a task is added
without touching code. The kinds every bridgepack skill shares (``doctor``, ``keeps``, ``values``,
``product``, ``tool``) are in ``grading.py`` beside this file; this skill adds the ones for runs:

- ``verdict``: the answer's tolerance is an accepted one and its verdict is ``bridgepack curves compare``'s;
- ``translate``: the overrides are ``bridgepack translate``'s for the model config, run at grade time: every
  key it gives for the flags the task asks about, each with its value, no key it does not give, none of
  the keys the task leaves out;
- ``correlate``: ``bridgepack correlate plan --spec`` accepts the answer's spec and both planned commands
  run every value the user gave (the Megatron-LM flags as given, the Bridge side as ``bridgepack translate``
  maps them);
- ``clean``: the answer's commands are ``bridgepack clean`` only; run on a copy of the task's folder they
  leave nothing to resume from and lose no file;
- ``findings``: the answer lists exactly the rule ids ``bridgepack doctor`` reports;
- ``golden``: the answer's golden-value file is ``bridgepack curves export``'s for the task's log, value for
  value, bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import grading  # noqa: E402  (beside this file: the engine every bridgepack skill ships)
from grading import (  # noqa: E402
    Miss,
    answer_file,
    answer_pairs,
    bridgepack,
    compare_to_tool,
    fill,
    fill_args,
    norm,
    pairs,
    read_overrides,
    tail,
    tool_overrides,
)


def check_verdict(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    answer = pairs(read_overrides(answer_file(ctx, check["file"])))
    tolerance, verdict = answer.get("tolerance", ""), answer.get("verdict", "").lower()
    if tolerance not in check["accepted"]:
        reason = check.get("rejected", {}).get(tolerance, f"accepted: {', '.join(check['accepted'])}")
        raise Miss(f"tolerance '{tolerance}' does not fit these runs: {reason}")
    ran = bridgepack(
        ["curves", "compare", *fill_args(check["runs"], ctx), "-t", tolerance, "--format", "json"]
    )
    if ran.returncode == 2:
        raise Miss(f"bridgepack curves compare cannot read the runs: {tail(ran)}")
    truth = "match" if ran.returncode == 0 else "mismatch"
    if verdict != truth:
        raise Miss(f"verdict '{verdict}', but bridgepack curves compare -t {tolerance} says {truth}")


def model_flags(model_config: Path, names: list[str]) -> list[str]:
    """The named flags of a Megatron-LM functional-test ``model_config.yaml`` (``MODEL_ARGS``) as a command
    line: ``--bf16: true`` is the bare flag, any other value follows its flag."""
    import yaml  # bridgepack depends on PyYAML

    args = (yaml.safe_load(model_config.read_text(encoding="utf-8")) or {}).get("MODEL_ARGS", {})
    argv: list[str] = []
    for name in names:
        value = args[name]
        argv += [name] if value is True else [name, str(value)]
    return argv


def check_translate(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    config = fill(check["model_config"], ctx)
    truth = tool_overrides(["translate", "mlm-to-bridge", "--model-config", str(config)])
    asked = tool_overrides(["translate", "mlm-to-bridge", "--", *model_flags(config, check["flags"])])
    answer = answer_pairs(ctx, check["file"])
    compare_to_tool(answer, truth, asked, "bridgepack translate", check.get("leave_out", ()))


def flag_values(argv: list[str]) -> dict[str, str]:
    """``--flag value`` and bare ``--flag`` (``true``) of a Megatron-LM command line, normalised."""
    out: dict[str, str] = {}
    for i, word in enumerate(argv):
        if word.startswith("--"):
            name, _, inline = word.partition("=")
            following = argv[i + 1] if i + 1 < len(argv) else "--"
            out[name] = norm(inline or ("true" if following.startswith("--") else following))
    return out


def check_correlate(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    spec = answer_file(ctx, check["file"])
    ran = bridgepack(["correlate", "plan", "--spec", str(spec), "--format", "json"])
    if ran.returncode != 0:
        try:
            found = [f"{f['id']} {f['message']}" for f in json.loads(ran.stdout)["findings"]]
        except (ValueError, KeyError):
            found = [(ran.stdout + ran.stderr).strip()[-400:]]
        raise Miss(f"bridgepack correlate plan refuses the spec: {'; '.join(found)}")
    plan = json.loads(ran.stdout)
    given = shlex.split(check["mlm_flags"])
    mlm = flag_values(plan["mlm"]["argv"])
    bridge_argv = plan["bridge"]["argv"]
    bridge = pairs(a for a in bridge_argv if "=" in a and not a.startswith("-"))
    problems = []
    for side, argv in (("Megatron-LM", plan["mlm"]["argv"]), ("Bridge", bridge_argv)):
        nproc = flag_values(argv).get("--nproc_per_node")
        if nproc != norm(check["nproc_per_node"]):
            problems.append(
                f"the {side} command runs {nproc} processes, the user has {check['nproc_per_node']}"
            )
    for flag, value in flag_values(given).items():
        if mlm.get(flag) != value:
            problems.append(
                f"the Megatron-LM command runs {flag} {mlm.get(flag, '(not given)')}, the user gave {value}"
            )
    for key, value in tool_overrides(["translate", "mlm-to-bridge", "--", *given]).items():
        if bridge.get(key) != value:
            problems.append(
                f"the Bridge command runs {key}={bridge.get(key, '(not set)')}, the user's value is {value}"
            )
    if problems:
        raise Miss("; ".join(problems))


def _files(root: Path) -> dict[str, str]:
    """Content hash -> relative path of every file under root (where a file went does not matter)."""
    return {
        hashlib.sha256(p.read_bytes()).hexdigest(): str(p.relative_to(root))
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def check_clean(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    commands = [
        line.strip()
        for line in answer_file(ctx, check["file"]).read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    if not commands:
        raise Miss(f"{check['file']} holds no command")
    argvs = []
    for number, line in enumerate(commands, 1):
        argv = shlex.split(line, comments=True)
        if argv[:2] != ["bridgepack", "clean"]:
            raise Miss(
                f"line {number}: '{line}' is not a bridgepack clean command (never rm -rf: clean moves aside)"
            )
        if "--delete" in argv:
            raise Miss(f"line {number}: '{line}' deletes the old runs; move them aside (no --delete)")
        argvs.append(argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = Path(tmp) / "project"
        shutil.copytree(fill(check["project"], ctx), sandbox)
        before = _files(sandbox)
        for argv in argvs:
            bridgepack(argv, cwd=sandbox)
        left = json.loads(bridgepack(["clean", ".", "--format", "json"], cwd=sandbox).stdout)["found"]
        if left:
            names = ", ".join(f["path"] for f in left)
            raise Miss(
                f"a new run would still resume from {names}: a dry run moves nothing (add --yes "
                "once the user said yes)"
            )
        lost = sorted(set(before) - set(_files(sandbox)))
        if lost:
            raise Miss(f"files were lost: {', '.join(before[h] for h in lost)}")


def check_findings(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    path = answer_file(ctx, check["file"])
    answer = {w.strip(",") for w in path.read_text(encoding="utf-8").split() if w[:2] in ("SP", "EN", "CR")}
    ran = bridgepack(["doctor", *fill_args(check["args"], ctx), "--format", "json"])
    truth = {f["id"] for f in json.loads(ran.stdout)["findings"] if f["severity"] in ("error", "warning")}
    if answer != truth:
        raise Miss(
            f"finding ids {sorted(answer)}, bridgepack doctor reports {sorted(truth)} "
            f"(missing {sorted(truth - answer)}, extra {sorted(answer - truth)})"
        )


def golden_differences(answer: dict[str, Any], truth: dict[str, Any]) -> list[str]:
    """Where a golden-value document differs from the tool's: metrics, step ranges, each value exactly."""
    problems = [f"metric '{m}' is missing" for m in truth if m not in answer]
    problems += [f"metric '{m}' is not in the log" for m in answer if m not in truth]
    for metric in (m for m in truth if m in answer):
        mine, theirs = answer[metric], truth[metric]
        if not isinstance(mine, dict) or not isinstance(mine.get("values"), dict):
            problems.append(
                f"'{metric}' is not Megatron-LM's {{start_step, end_step, step_interval, values}}"
            )
            continue
        for field in ("start_step", "end_step", "step_interval"):
            if mine.get(field) != theirs[field]:
                problems.append(f"'{metric}' {field} is {mine.get(field)}, the log gives {theirs[field]}")
        steps = theirs["values"]
        problems += [f"'{metric}' step {s} is missing" for s in steps if s not in mine["values"]]
        problems += [f"'{metric}' step {s} is not in the log" for s in mine["values"] if s not in steps]
        problems += [
            f"'{metric}' step {s} is {mine['values'][s]!r}, the log gives {v!r}"
            for s, v in steps.items()
            if s in mine["values"] and not _same_number(mine["values"][s], v)
        ]
    return problems


def _same_number(a: Any, b: Any) -> bool:
    return isinstance(a, int | float) and not isinstance(a, bool) and float(a) == float(b)


def check_golden(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    golden = answer_file(ctx, check["file"])
    try:
        answer = json.loads(golden.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise Miss(f"{check['file']} is not JSON: {exc}") from None
    if not isinstance(answer, dict):
        raise Miss(f"{check['file']} is not a mapping of metrics (Megatron-LM golden values)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "golden.json"
        ran = bridgepack(["curves", "export", str(fill(check["log"], ctx)), "--golden", str(out), "-q"])
        if ran.returncode != 0:
            raise Miss(f"bridgepack curves export fails on the task's log: {tail(ran)}")
        truth = json.loads(out.read_text(encoding="utf-8"))
    problems = golden_differences(answer, truth)
    if problems:
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        raise Miss(
            f"{check['file']} does not hold the logged values (bridgepack curves export): "
            f"{'; '.join(problems[:3])}{more}"
        )


CHECKS = {
    **grading.CHECKS,
    "verdict": check_verdict,
    "translate": check_translate,
    "correlate": check_correlate,
    "clean": check_clean,
    "findings": check_findings,
    "golden": check_golden,
}


def grade(task_id: str, answer: Path) -> list[str]:
    """The misses of an answer (empty: it passes)."""
    return grading.grade(HERE, CHECKS, task_id, answer)


def main(argv: list[str]) -> int:
    """``grade.py TASK ANSWER_DIR`` or ``grade.py --check-all`` (exit 0 pass, 1 fail, 2 usage)."""
    return grading.main(HERE, CHECKS, argv, (__doc__ or "").split("\n\n")[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
