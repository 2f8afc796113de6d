"""The graders hold every value a task fixes, not only the named wrong answers: a reference answer changed
in one place (any fixed key set to another value, any required key dropped, a key nobody asked for added, a
value one ulp off, one mask bit or token of one packed sequence changed) fails, and the miss names the
place; a different but correct answer (the same samples packed into other bins) passes."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from _support.skill_pages import SKILLS_DIR, evals, graded_checks

PACKING = "bridgepack-sequence-packing"
MLM = "bridgepack-mlm-bridge-training"


def other(value: str) -> str:
    """Another value of the same kind: a flipped boolean, a different number, another word."""
    if value in ("true", "false"):
        return "false" if value == "true" else "true"
    try:
        return repr(float(value) * 2 + 1)
    except ValueError:
        return f"{value}_other"


def reference(skill: str, task_id: str) -> Path:
    task = next(t for t in evals(skill)["evals"] if t["id"] == task_id)
    return SKILLS_DIR / skill / "evals" / task["grade"]["answers"]["reference"]


def context(skill: str, task_id: str, answer: Path) -> dict[str, Path]:
    evals_dir = SKILLS_DIR / skill / "evals"
    return {"task": evals_dir / "files" / task_id, "answer": answer, "skill": evals_dir.parent}


def answer_with(tmp_path: Path, name: str, lines: list[str]) -> Path:
    folder = tmp_path / f"answer-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def misses(module: ModuleType, kind: str, ctx: dict[str, Path], check: dict[str, Any]) -> str:
    """The miss one check finds ("" when the answer passes it)."""
    try:
        module.CHECKS[kind](ctx, check)
    except module.grading.Miss as miss:
        return str(miss)
    return ""


def test_keeps_holds_every_fixed_value(graders: dict[str, ModuleType], tmp_path: Path) -> None:
    grading = graders[PACKING].grading
    cases = 0
    for task_id, check in graded_checks(PACKING, "keeps"):
        ref_lines = grading.read_overrides(reference(PACKING, task_id) / check["overrides"])
        ctx = context(PACKING, task_id, reference(PACKING, task_id))
        assert misses(graders[PACKING], "keeps", ctx, check) == "", task_id
        held = {**check.get("defaults", {}), **grading.config_values(ctx, check), **check.get("fixed", {})}
        for key, value in held.items():
            if key in check.get("free", []):
                continue
            changed = other(grading.norm(value))
            ctx["answer"] = answer_with(tmp_path, check["overrides"], [*ref_lines, f"{key}={changed}"])
            found = misses(graders[PACKING], "keeps", ctx, check)
            assert f"{key} is {grading.norm(changed)}" in found, (task_id, key, found)
            cases += 1
        if check.get("only", True):
            ctx["answer"] = answer_with(tmp_path, check["overrides"], [*ref_lines, "model.num_layers=7"])
            assert "model.num_layers=7 changes" in misses(graders[PACKING], "keeps", ctx, check), task_id
    assert cases >= 30


def test_values_are_exact(graders: dict[str, ModuleType], tmp_path: Path) -> None:
    grading = graders[PACKING].grading
    for task_id, check in graded_checks(PACKING, "values"):
        ref_lines = grading.read_overrides(reference(PACKING, task_id) / check["overrides"])
        for want in check["expect"]:
            changed = other(grading.norm(want["value"]))
            ctx = context(
                PACKING,
                task_id,
                answer_with(tmp_path, check["overrides"], [*ref_lines, f"{want['key']}={changed}"]),
            )
            assert f"{want['key']} is {grading.norm(changed)}" in misses(
                graders[PACKING], "values", ctx, check
            )


@pytest.mark.parametrize(("skill", "kind"), [(PACKING, "tool"), (MLM, "translate")])
def test_tool_answers_are_the_tools_every_key(
    graders: dict[str, ModuleType], tmp_path: Path, skill: str, kind: str
) -> None:
    """Each key of the reference (bridgepack's own output) dropped, or given another value, fails naming it;
    a key the tool does not print fails as invented."""
    grading = graders[skill].grading
    ((task_id, check),) = graded_checks(skill, kind)
    ref_lines = grading.read_overrides(reference(skill, task_id) / check["file"])
    assert len(ref_lines) >= 8
    for i, line in enumerate(ref_lines):
        key, value = line.split("=", 1)
        dropped = answer_with(tmp_path, check["file"], ref_lines[:i] + ref_lines[i + 1 :])
        assert f"{key} is not set" in misses(graders[skill], kind, context(skill, task_id, dropped), check)
        changed_value = other(grading.norm(value))
        changed = answer_with(
            tmp_path, check["file"], [*ref_lines[:i], f"{key}={changed_value}", *ref_lines[i + 1 :]]
        )
        found = misses(graders[skill], kind, context(skill, task_id, changed), check)
        assert f"{key} is {grading.norm(changed_value)}" in found, (key, found)
    extra = answer_with(tmp_path, check["file"], [*ref_lines, "model.num_query_groups=2"])
    assert "model.num_query_groups=2 is invented" in misses(
        graders[skill], kind, context(skill, task_id, extra), check
    )


def _spec_fields(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(section, field) for section, body in doc.items() for field in body]


def test_correlate_plans_every_value_the_user_gave(graders: dict[str, ModuleType], tmp_path: Path) -> None:
    """Every field of the reference spec is a value from the prompt: changed, or left to the spec's
    default, the plan no longer runs what the user asked for."""
    ((task_id, check),) = graded_checks(MLM, "correlate")
    doc = yaml.safe_load((reference(MLM, task_id) / check["file"]).read_text(encoding="utf-8"))
    for section, field in _spec_fields(doc):
        value = doc[section][field]
        changed_value = (
            (not value) if isinstance(value, bool) else value * 2 if isinstance(value, int | float) else value
        )
        if isinstance(value, str):
            changed_value = "linear" if value != "linear" else "cosine"
        for mutated in (
            {**doc, section: {**doc[section], field: changed_value}},
            {**doc, section: {k: v for k, v in doc[section].items() if k != field}},
        ):
            answer = answer_with(tmp_path, check["file"], [yaml.safe_dump(mutated)])
            assert misses(graders[MLM], "correlate", context(MLM, task_id, answer), check), (
                section,
                field,
                mutated,
            )


def test_golden_holds_every_logged_value_bit_for_bit(graders: dict[str, ModuleType], tmp_path: Path) -> None:
    ((task_id, check),) = graded_checks(MLM, "golden")
    golden = json.loads((reference(MLM, task_id) / check["file"]).read_text(encoding="utf-8"))
    for metric, series in golden.items():
        for step, value in series["values"].items():
            nudged = {
                **golden,
                metric: {**series, "values": {**series["values"], step: math.nextafter(value, math.inf)}},
            }
            answer = answer_with(tmp_path, check["file"], [json.dumps(nudged)])
            assert f"'{metric}' step {step} is" in misses(
                graders[MLM], "golden", context(MLM, task_id, answer), check
            )
        fewer = {**golden, metric: {**series, "values": dict(list(series["values"].items())[1:])}}
        answer = answer_with(tmp_path, check["file"], [json.dumps(fewer)])
        assert f"'{metric}' step 1 is missing" in misses(
            graders[MLM], "golden", context(MLM, task_id, answer), check
        )


@pytest.fixture(scope="module")
def packed_reference() -> tuple[Path, dict[str, Any], pa.Table]:
    ((task_id, check),) = graded_checks(PACKING, "packed")
    folder = reference(PACKING, task_id) / "packed"
    (table_path,) = folder.glob("training_*.parquet")
    return folder, check, pq.read_table(table_path)


@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_packed_holds_every_token_and_mask_bit(
    graders: dict[str, ModuleType],
    packed_reference: tuple[Path, dict[str, Any], pa.Table],
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
) -> None:
    folder, check, table = packed_reference
    rows = table.to_pylist()
    row = data.draw(st.integers(0, len(rows) - 1), label="pack")
    column = data.draw(st.sampled_from(["input_ids", "loss_mask"]), label="column")
    position = data.draw(st.integers(0, len(rows[row][column]) - 1), label="position")
    old = rows[row][column][position]
    rows[row][column][position] = (1 - old) if column == "loss_mask" else old + 1
    answer = tmp_path_factory.mktemp("packed-answer")
    shutil.copytree(folder, answer / "packed")
    (table_path,) = (answer / "packed").glob("training_*.parquet")
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), table_path)
    found = misses(graders[PACKING], "packed", context(PACKING, "pack-for-cp2", answer), check)
    assert "1 of 240 samples are not stored as the task asks" in found, found


def test_packed_accepts_any_correct_packing(
    graders: dict[str, ModuleType], packed_reference: tuple[Path, dict[str, Any], pa.Table], tmp_path: Path
) -> None:
    """The same samples packed by Bridge's own algorithm (other bins, other order) pass: the grader holds the
    sequences, not one packing of them."""
    _, check, _ = packed_reference
    samples = SKILLS_DIR / PACKING / "assets" / "data" / "samples.jsonl"
    args = ["pack", samples, "--out", tmp_path / "packed", "--pack-size", 2048, "--cp", 2, "--eos-id", 2]
    ran = graders[PACKING].grading.bridgepack([*args, "--bridge-compat", "-q"])
    assert ran.returncode == 0, ran.stderr
    assert misses(graders[PACKING], "packed", context(PACKING, "pack-for-cp2", tmp_path), check) == ""
