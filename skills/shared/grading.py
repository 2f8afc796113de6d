"""The grading engine every bridgepack skill ships: run bridgepack on an answer, hold it to the user's intent.

One file, kept once in the repository (``skills/shared/grading.py``); each skill's ``evals/grading.py`` is a
link to it, and ``npx skills add`` copies the file the link names (it dereferences), so an installed skill
folder works alone. A skill's ``evals/grade.py`` adds the checks only that skill needs and calls
:func:`main`. Nothing here knows where it lives: the skill's ``evals`` folder is passed in.

A graded task in ``evals.json`` lists its checks (``grade.checks``); each check is a kind (a function of
``(ctx, check)`` that raises :class:`Miss` naming what is wrong) and its settings. The kinds here judge
``key=value`` answers:

- ``doctor``: ``bridgepack doctor ARGS [answer overrides]`` exits 0 and reports none of ``fail_on``;
- ``keeps``: the answer changes nothing the user fixed (below);
- ``values``: the answer gives each key the one value the task determines;
- ``product``: the product of some effective values equals a number (token slots per step);
- ``tool``: the answer is what a bridgepack command prints (``bridgepack plan``): every key it gives, with its
  value, and no key it does not give.

What the user fixed (``keeps``): every key of the user's config, every Bridge default the task holds
(``defaults``, e.g. PP 1 where the config does not say) and every value the prompt states (``fixed``, e.g.
CP 2 with no config) keeps its value, unless the task frees the key (``free``: the keys the fix may
change). An answer that sets any other key changes something the task did not ask to change: that too
is a miss (unless ``only`` is false, where another check already holds the answer's keys). Each miss
names the key, its value and the fixed one, and says why (``because``).

``{task}`` (the task's input folder), ``{answer}`` and ``{skill}`` in a check's strings are filled in.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import io
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Check = Callable[[dict[str, Path], dict[str, Any]], None]


class Miss(Exception):
    """An answer that does not do what the task asks; the message names what is wrong."""


@dataclass
class Ran:
    """What one bridgepack command gave: its exit code and its two streams."""

    returncode: int
    stdout: str
    stderr: str


def bridgepack(args: Iterable[object], cwd: Path | None = None) -> Ran:
    """Run ``bridgepack ARGS`` as the command line would (same parser, same exit code), in this process: a
    grade runs dozens of commands and a process start costs more than most of them."""
    from bridgepack.cli import main as bridgepack_main

    out, err = io.StringIO(), io.StringIO()
    here = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = bridgepack_main([str(a) for a in args])
    finally:
        os.chdir(here)
    return Ran(code, out.getvalue(), err.getvalue())


def tail(ran: Ran) -> str:
    """The end of what a failed command said, for a miss message."""
    return (ran.stderr or ran.stdout).strip()[-300:]


def fill(template: str, ctx: Mapping[str, Path]) -> Path:
    return Path(template.format(**ctx))


def fill_args(args: Iterable[str], ctx: Mapping[str, Path]) -> list[str]:
    """Arguments with ``{task}`` (the task's inputs), ``{answer}`` and ``{skill}`` (the skill's folder)."""
    return [a.format(**ctx) for a in args]


def answer_file(ctx: Mapping[str, Path], name: str) -> Path:
    """A file of the answer folder, or a miss saying it is not there."""
    path = ctx["answer"] / name
    if not path.is_file():
        raise Miss(f"{name} is missing from the answer")
    return path


def read_overrides(path: Path) -> list[str]:
    """``key=value`` lines of an answer file; blank lines, comments and a trailing ``\\`` are ignored."""
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip().rstrip("\\").strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise Miss(f"{path.name}: '{line}' is not a key=value override")
        lines.append(line)
    return lines


def pairs(lines: Iterable[str]) -> dict[str, str]:
    """``key=value`` lines as a mapping of normalised values; ``+key`` (Hydra's add) is the key itself, and
    a later line wins, as on a command line."""
    out: dict[str, str] = {}
    for line in lines:
        key, value = line.split("=", 1)
        out[key.strip().lstrip("+")] = norm(value)
    return out


def answer_pairs(ctx: Mapping[str, Path], name: str) -> dict[str, str]:
    return pairs(read_overrides(answer_file(ctx, name)))


def norm(value: Any) -> str:
    """A value as an override means it: quotes dropped, booleans lower-case, numbers by value, so ``1e-05``,
    ``0.00001`` and ``1.0e-5`` are one value and ``8`` is ``8.0``; nothing is rounded."""
    text = str(value).strip().strip("'\"")
    if text.lower() in ("true", "false"):
        return text.lower()
    try:
        number = float(text)
    except ValueError:
        return text
    return repr(int(number)) if number.is_integer() else repr(number)


def config_values(ctx: Mapping[str, Path], check: Mapping[str, Any]) -> dict[str, str]:
    """Dotted keys of the task's base config (``config``), normalised; empty without one."""
    if "config" not in check:
        return {}
    import yaml  # bridgepack depends on PyYAML

    values: dict[str, str] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, sub in node.items():
                walk(sub, f"{prefix}{key}.")
        else:
            values[prefix[:-1]] = norm(node)

    walk(yaml.safe_load(fill(check["config"], ctx).read_text(encoding="utf-8")) or {}, "")
    return values


def effective(ctx: Mapping[str, Path], check: Mapping[str, Any]) -> dict[str, str]:
    """The base config (if any) with the answer's overrides on top: what the run would use."""
    return {**config_values(ctx, check), **answer_pairs(ctx, check["overrides"])}


def shown(value: str | None) -> str:
    return "not set" if value is None else value


def check_doctor(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    args = fill_args(check["args"], ctx)
    if "overrides" in check:
        args += read_overrides(answer_file(ctx, check["overrides"]))
    ran = bridgepack(["doctor", *args, "--format", "json"])
    if ran.returncode == 2:
        raise Miss(f"bridgepack doctor cannot read the answer: {tail(ran)}")
    report = json.loads(ran.stdout)
    fail_on = set(check.get("fail_on", []))
    bad = [
        f
        for f in report["findings"]
        if not f.get("allowed") and (f["severity"] == "error" or f["id"] in fail_on)
    ]
    if bad or ran.returncode != 0:
        found = "; ".join(f"{f['id']} {f['message']}" for f in bad) or f"an error (exit {ran.returncode})"
        raise Miss(f"bridgepack doctor finds {found}")


def check_keeps(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    base = {**{k: norm(v) for k, v in check.get("defaults", {}).items()}, **config_values(ctx, check)}
    held = {**base, **{k: norm(v) for k, v in check.get("fixed", {}).items()}}
    free = check.get("free", [])
    answer = answer_pairs(ctx, check["overrides"])
    problems = [
        f"{key} is {shown(answer.get(key, base.get(key)))}, the user fixed {value}"
        for key, value in held.items()
        if key not in free and answer.get(key, base.get(key)) != value
    ]
    if check.get("only", True):
        problems += [
            f"{key}={value} changes what the task leaves as it is (it may change only {', '.join(free)})"
            for key, value in answer.items()
            if key not in held and key not in free
        ]
    if problems:
        raise Miss(f"{'; '.join(problems)} ({check['because']})")


def check_values(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    values = effective(ctx, check)
    for want in check["expect"]:
        got = values.get(want["key"])
        if got != norm(want["value"]):
            raise Miss(f"{want['key']} is {shown(got)}, the task needs {want['value']}: {want['why']}")


def check_product(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    values = effective(ctx, check)
    product = 1.0
    for key in check["keys"]:
        product *= float(values.get(key, "nan"))
    if product != check["equals"]:
        factors = " x ".join(f"{k}={shown(values.get(k))}" for k in check["keys"])
        raise Miss(f"{factors} = {product:g}, not {check['equals']}: {check['why']}")


def tool_overrides(args: list[str]) -> dict[str, str]:
    """The ``key=value`` lines a bridgepack command prints (its JSON ``overrides``), normalised."""
    return dict(_tool_overrides(tuple(args)))


@functools.cache
def _tool_overrides(args: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    # Once per command line and process: its inputs are the task's files, which a grade does not change.
    cut = args.index("--") if "--" in args else len(args)  # what follows -- is the command's own input
    ran = bridgepack([*args[:cut], "--format", "json", *args[cut:]])
    if ran.returncode not in (0, 1):
        raise Miss(f"bridgepack {' '.join(args)} failed: {tail(ran)}")
    return tuple(pairs(json.loads(ran.stdout)["overrides"]).items())


def compare_to_tool(
    answer: Mapping[str, str],
    truth: Mapping[str, str],
    required: Iterable[str],
    tool: str,
    leave_out: Iterable[str] = (),
) -> None:
    """Hold an answer to what a bridgepack command printed: each required key with the tool's value, every
    key one the tool printed with the same value (none invented), none of the ``leave_out`` patterns."""
    problems = []
    patterns = list(leave_out)
    for key, value in answer.items():
        if any(fnmatch.fnmatchcase(key, p) for p in patterns):
            problems.append(f"{key} is one of the keys the task leaves out ({', '.join(patterns)})")
        elif key not in truth:
            problems.append(f"{key}={value} is invented: {tool} gives no {key}")
        elif value != truth[key]:
            problems.append(f"{key} is {value}, {tool} gives {truth[key]}")
    problems += [f"{key} is not set, {tool} gives {truth[key]}" for key in required if key not in answer]
    if problems:
        raise Miss("; ".join(problems))


def check_tool(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    args = fill_args(check["command"], ctx)
    truth = tool_overrides(args)
    tool = f"bridgepack {args[0]}"
    compare_to_tool(answer_pairs(ctx, check["file"]), truth, truth, tool)


CHECKS: dict[str, Check] = {
    "doctor": check_doctor,
    "keeps": check_keeps,
    "values": check_values,
    "product": check_product,
    "tool": check_tool,
}


def tasks(evals: Path) -> dict[str, dict[str, Any]]:
    """The graded tasks of a skill's ``evals.json``, by id."""
    data = json.loads((evals / "evals.json").read_text(encoding="utf-8"))
    return {t["id"]: t for t in data["evals"] if "grade" in t}


def grade(evals: Path, checks: Mapping[str, Check], task_id: str, answer: Path) -> list[str]:
    """The misses of an answer (empty: it passes), each prefixed by the kind of check that found it."""
    task = tasks(evals)[task_id]
    ctx = {"task": evals / "files" / task_id, "answer": answer.resolve(), "skill": evals.parent}
    misses = []
    for check in task["grade"]["checks"]:
        try:
            checks[check["kind"]](ctx, check)
        except Miss as miss:
            misses.append(f"{check['kind']}: {miss}")
    return misses


def check_all(evals: Path, checks: Mapping[str, Check]) -> int:
    """CI: every reference answer passes; every wrong answer fails, and a message names its stated miss."""
    bad = 0
    for task_id, task in tasks(evals).items():
        answers = task["grade"]["answers"]
        misses = grade(evals, checks, task_id, evals / answers["reference"])
        ok = not misses
        print(f"{'ok ' if ok else 'BAD'} {task_id} reference: {'pass' if ok else '; '.join(misses)}")
        bad += not ok
        for name, wrong in answers["wrong"].items():
            misses = grade(evals, checks, task_id, evals / wrong["dir"])
            ok = any(wrong["miss"] in m for m in misses)
            verdict = "; ".join(misses) or "passed"
            print(f"{'ok ' if ok else 'BAD'} {task_id} {name} ({wrong['why']}): {verdict}")
            bad += not ok
    return 1 if bad else 0


def main(evals: Path, checks: Mapping[str, Check], argv: list[str], usage: str) -> int:
    """``grade.py TASK ANSWER_DIR`` (exit 0 pass, 1 fail, 2 usage) or ``grade.py --check-all``."""
    if argv == ["--check-all"]:
        return check_all(evals, checks)
    graded = tasks(evals)
    if len(argv) != 2 or argv[0] not in graded:
        print(usage, file=sys.stderr)
        print(f"graded tasks: {', '.join(graded)}", file=sys.stderr)
        return 2
    misses = grade(evals, checks, argv[0], Path(argv[1]))
    for miss in misses:
        print(f"FAIL {argv[0]}: {miss}")
    if not misses:
        print(f"PASS {argv[0]}")
    return 1 if misses else 0
