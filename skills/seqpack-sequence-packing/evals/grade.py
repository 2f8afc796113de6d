#!/usr/bin/env python3
"""Grade an answer to one of this skill's eval tasks, deterministically, with seqpack itself.

    python evals/grade.py TASK_ID ANSWER_DIR     # exit 0 pass, 1 fail (each miss named), 2 usage
    python evals/grade.py --check-all            # CI: each reference passes, each wrong answer fails

The checks of a task live in ``evals.json`` beside this file (``grade.checks``), so a task is added
without touching code. Each check runs a seqpack command on the task's input files (``{task}`` =
``files/TASK_ID``, ``{skill}`` = this skill's folder) and the answer (``{answer}`` = ANSWER_DIR) and
judges its exit code and JSON:

- ``doctor``: ``seqpack doctor ARGS [answer overrides]`` exits 0 and reports none of ``fail_on`` ids;
- ``values``: the answer sets each key to the value the task requires (a base config fills the rest);
- ``product``: the product of some effective values equals a number (token slots per step);
- ``inspect``: ``seqpack inspect`` passes on the answer's packed data, with the listed fields;
- ``verdict``: the answer's tolerance is an accepted one and its verdict is ``seqpack curves compare``'s;
- ``includes``: the answer sets the listed keys as a seqpack command does (``translate``, ``plan``);
- ``correlate``: ``seqpack correlate plan --spec`` accepts the answer's spec and plans the required values;
- ``clean``: the answer's commands are ``seqpack clean`` only; run on a copy of the task's folder they
  leave nothing to resume from and lose no file;
- ``findings``: the answer lists exactly the rule ids ``seqpack doctor`` reports;
- ``golden``: the answer's golden-value file holds the task's run (``curves compare -t golden``).

The same file ships in every seqpack skill (a skill folder is installed on its own); a test keeps the
copies identical.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


class Miss(Exception):
    """An answer that does not do what the task asks; the message names what is wrong."""


@dataclass
class Ran:
    """What one seqpack command gave: its exit code and its two streams."""

    returncode: int
    stdout: str
    stderr: str


def seqpack(args: list[str], cwd: Path | None = None) -> Ran:
    """Run ``seqpack ARGS`` as the command line would (same parser, same exit code), in this process: a
    grade runs dozens of commands and a process start costs more than most of them."""
    from seqpack.cli import main

    out, err = io.StringIO(), io.StringIO()
    here = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in args])
    finally:
        os.chdir(here)
    return Ran(code, out.getvalue(), err.getvalue())


def read_overrides(path: Path) -> list[str]:
    """``key=value`` lines of an answer file; blank lines, comments and a trailing ``\\`` are ignored."""
    if not path.is_file():
        raise Miss(f"{path.name} is missing from the answer")
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip().rstrip("\\").strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise Miss(f"{path.name}: '{line}' is not a key=value override")
        lines.append(line)
    return lines


def read_pairs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in read_overrides(path))


def _norm(value: Any) -> str:
    text = str(value).strip().strip("'\"")
    if text.lower() in ("true", "false"):
        return text.lower()
    try:
        number = float(text)
    except ValueError:
        return text
    return repr(int(number)) if number.is_integer() else repr(number)


def effective(ctx: dict[str, Path], check: dict[str, Any]) -> dict[str, str]:
    """Dotted keys of the base config (if any) with the answer's overrides on top."""
    values: dict[str, str] = {}
    if "config" in check:
        import yaml  # seqpack depends on PyYAML

        def walk(node: Any, prefix: str) -> None:
            if isinstance(node, dict):
                for key, sub in node.items():
                    walk(sub, f"{prefix}{key}.")
            else:
                values[prefix[:-1]] = _norm(node)

        walk(yaml.safe_load(fill(check["config"], ctx).read_text(encoding="utf-8")) or {}, "")
    if "overrides" in check:
        for key, value in read_pairs(ctx["answer"] / check["overrides"]).items():
            values[key.lstrip("+~")] = _norm(value)
    return values


def fill(template: str, ctx: dict[str, Path]) -> Path:
    return Path(template.format(**ctx))


def fill_args(args: list[str], ctx: dict[str, Path]) -> list[str]:
    """Arguments with ``{task}`` (the task's inputs), ``{answer}`` and ``{skill}`` (this skill's folder)."""
    return [a.format(**ctx) for a in args]


def check_doctor(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    args = fill_args(check["args"], ctx)
    if "overrides" in check:
        args += read_overrides(ctx["answer"] / check["overrides"])
    proc = seqpack(["doctor", *args, "--format", "json"])
    if proc.returncode == 2:
        raise Miss(f"seqpack doctor cannot read the answer: {proc.stderr.strip()[-300:]}")
    report = json.loads(proc.stdout)
    fail_on = set(check.get("fail_on", []))
    bad = [
        f
        for f in report["findings"]
        if not f.get("allowed") and (f["severity"] == "error" or f["id"] in fail_on)
    ]
    if bad or proc.returncode != 0:
        raise Miss("seqpack doctor finds " + "; ".join(f"{f['id']} {f['message']}" for f in bad))


def check_values(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    values = effective(ctx, check)
    for want in check["expect"]:
        got = values.get(want["key"])
        if got != _norm(want["value"]):
            raise Miss(
                f"{want['key']} is {got if got is not None else 'not set'}, the task needs "
                f"{want['value']}: {want['why']}"
            )


def check_product(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    values = effective(ctx, check)
    product = 1.0
    for key in check["keys"]:
        product *= float(values.get(key, "nan"))
    if product != check["equals"]:
        shown = " x ".join(f"{k}={values.get(k)}" for k in check["keys"])
        raise Miss(f"{shown} = {product:g}, not {check['equals']}: {check['why']}")


def check_inspect(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    path = fill(check["path"], ctx)
    if not path.exists():
        raise Miss(f"{path.name} is missing from the answer")
    proc = seqpack(["inspect", str(path), "--format", "json"])
    if proc.returncode != 0:
        raise Miss(
            f"seqpack inspect fails on the answer (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"
        )
    report = json.loads(proc.stdout)
    for key, value in check.get("expect", {}).items():
        if report.get(key) != value:
            raise Miss(f"the packed data has {key} {report.get(key)}, the task asks for {value}")


def check_verdict(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    answer = read_pairs(ctx["answer"] / check["file"])
    tolerance, verdict = answer.get("tolerance", ""), answer.get("verdict", "").lower()
    if tolerance not in check["accepted"]:
        reason = check.get("rejected", {}).get(tolerance, f"accepted: {', '.join(check['accepted'])}")
        raise Miss(f"tolerance '{tolerance}' does not fit these runs: {reason}")
    proc = seqpack(["curves", "compare", *fill_args(check["runs"], ctx), "-t", tolerance, "--format", "json"])
    if proc.returncode == 2:
        raise Miss(f"seqpack curves compare cannot read the runs: {proc.stderr.strip()[-300:]}")
    truth = "match" if proc.returncode == 0 else "mismatch"
    if verdict != truth:
        raise Miss(f"verdict '{verdict}', but seqpack curves compare -t {tolerance} says {truth}")


def check_includes(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    proc = seqpack(fill_args(check["command"], ctx))
    if proc.returncode not in (0, 1):
        raise Miss(f"seqpack {' '.join(check['command'])} failed: {proc.stderr.strip()[-300:]}")
    if proc.stdout.lstrip().startswith("{"):
        lines = json.loads(proc.stdout)["overrides"]  # e.g. seqpack plan --format json
    else:
        lines = [line for line in proc.stdout.splitlines() if "=" in line and not line.startswith("#")]
    truth = dict(line.split("=", 1) for line in lines)
    answer = read_pairs(ctx["answer"] / check["file"])
    for key in check["keys"]:
        if _norm(answer.get(key)) != _norm(truth[key]):
            raise Miss(
                f"{key} is {answer.get(key, 'not set')}, seqpack {check['command'][0]} gives {truth[key]}"
            )


def check_correlate(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    spec = ctx["answer"] / check["file"]
    if not spec.is_file():
        raise Miss(f"{check['file']} is missing from the answer")
    proc = seqpack(["correlate", "plan", "--spec", str(spec), "--format", "json"])
    if proc.returncode != 0:
        try:
            found = [f"{f['id']} {f['message']}" for f in json.loads(proc.stdout)["findings"]]
        except (ValueError, KeyError):
            found = [(proc.stdout + proc.stderr).strip()[-400:]]
        raise Miss(f"seqpack correlate plan refuses the spec: {'; '.join(found)}")
    plan = json.loads(proc.stdout)
    argv = plan["bridge"]["argv"]
    bridge = dict(a.split("=", 1) for a in argv if "=" in a and not a.startswith("-"))
    bridge["nproc_per_node"] = next(a.split("=", 1)[1] for a in argv if a.startswith("--nproc_per_node="))
    for want in check["expect"]:
        got = bridge.get(want["key"])
        if _norm(got) != _norm(want["value"]):
            raise Miss(f"the plan runs {want['key']}={got}, the task needs {want['value']}: {want['why']}")


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
        for line in (ctx["answer"] / check["file"]).read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    if not commands:
        raise Miss(f"{check['file']} holds no command")
    argvs = []
    for number, line in enumerate(commands, 1):
        argv = shlex.split(line, comments=True)
        if argv[:2] != ["seqpack", "clean"]:
            raise Miss(
                f"line {number}: '{line}' is not a seqpack clean command (never rm -rf: clean moves aside)"
            )
        if "--delete" in argv:
            raise Miss(f"line {number}: '{line}' deletes the old runs; move them aside (no --delete)")
        argvs.append(argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = Path(tmp) / "project"
        shutil.copytree(fill(check["project"], ctx), sandbox)
        before = _files(sandbox)
        for argv in argvs:
            seqpack(argv, cwd=sandbox)
        left = json.loads(seqpack(["clean", ".", "--format", "json"], cwd=sandbox).stdout)["found"]
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
    path = ctx["answer"] / check["file"]
    if not path.is_file():
        raise Miss(f"{check['file']} is missing from the answer")
    answer = {w.strip(",") for w in path.read_text().split() if w[:2] in ("SP", "EN", "CR")}
    proc = seqpack(["doctor", *fill_args(check["args"], ctx), "--format", "json"])
    truth = {f["id"] for f in json.loads(proc.stdout)["findings"] if f["severity"] in ("error", "warning")}
    if answer != truth:
        raise Miss(
            f"finding ids {sorted(answer)}, seqpack doctor reports {sorted(truth)} "
            f"(missing {sorted(truth - answer)}, extra {sorted(answer - truth)})"
        )


def check_golden(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    golden = ctx["answer"] / check["file"]
    if not golden.is_file():
        raise Miss(f"{check['file']} is missing from the answer")
    proc = seqpack(
        [
            "curves",
            "compare",
            str(golden),
            *fill_args(check["runs"], ctx),
            "-t",
            "golden",
            "--require-all-steps",
            "--format",
            "json",
        ]
    )
    if proc.returncode == 2:
        raise Miss(f"seqpack curves cannot read {check['file']}: {proc.stderr.strip()[-300:]}")
    report = json.loads(proc.stdout)
    if report["runs"][0]["format"] != "golden":
        raise Miss(f"{check['file']} is read as {report['runs'][0]['format']}, not Megatron-LM golden values")
    if proc.returncode != 0:
        reasons = [r for c in report["comparisons"] for r in c.get("reasons", [])]
        raise Miss(f"{check['file']} does not hold the run: {'; '.join(reasons)[:400]}")


CHECKS = {
    "doctor": check_doctor,
    "values": check_values,
    "product": check_product,
    "inspect": check_inspect,
    "verdict": check_verdict,
    "includes": check_includes,
    "correlate": check_correlate,
    "clean": check_clean,
    "findings": check_findings,
    "golden": check_golden,
}


def tasks() -> dict[str, dict[str, Any]]:
    data = json.loads((HERE / "evals.json").read_text(encoding="utf-8"))
    return {t["id"]: t for t in data["evals"] if "grade" in t}


def grade(task_id: str, answer: Path) -> list[str]:
    """The misses of an answer (empty: it passes)."""
    task = tasks()[task_id]
    ctx = {"task": HERE / "files" / task_id, "answer": answer.resolve(), "skill": HERE.parent}
    misses = []
    for check in task["grade"]["checks"]:
        try:
            CHECKS[check["kind"]](ctx, check)
        except Miss as miss:
            misses.append(f"{check['kind']}: {miss}")
    return misses


def check_all() -> int:
    """CI: every reference answer passes, every wrong answer fails naming its miss."""
    bad = 0
    for task_id, task in tasks().items():
        answers = task["grade"]["answers"]
        misses = grade(task_id, HERE / answers["reference"])
        ok = not misses
        print(f"{'ok ' if ok else 'BAD'} {task_id} reference: {'pass' if ok else '; '.join(misses)}")
        bad += not ok
        for name, wrong in answers["wrong"].items():
            misses = grade(task_id, HERE / wrong["dir"])
            ok = bool(misses) and any(wrong["miss"] in m for m in misses)
            print(f"{'ok ' if ok else 'BAD'} {task_id} {name}: {'; '.join(misses) or 'passed'}")
            bad += not ok
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    if argv == ["--check-all"]:
        return check_all()
    if len(argv) != 2 or argv[0] not in tasks():
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        print(f"graded tasks: {', '.join(tasks())}", file=sys.stderr)
        return 2
    misses = grade(argv[0], Path(argv[1]))
    for miss in misses:
        print(f"FAIL {argv[0]}: {miss}")
    if not misses:
        print(f"PASS {argv[0]}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
