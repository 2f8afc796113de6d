"""Through a pipe, every command's text is plain and whole (#40 item 1): no table, no wrapped or cut line,
whatever ``COLUMNS`` says, so an agent or a CI job that copies a key copies all of it.

Each command runs in a child whose stdout is a pipe and whose ``COLUMNS`` is 40; what it prints is held
against the same command's ``--format json`` (run in-process): every key, path and override the JSON holds
is on a line of its own, whole.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _support.pack_inputs import random_examples, write_jsonl
from bridgepack.cli import main
from curves._lines import mlm_line

COLUMNS = 40
#: What a Rich table or a styled terminal line would leave in the text.
_TABLE_OR_STYLE = re.compile(r"[│┃━─┏┓└┘╇╈┡┩]|\x1b\[")
CONFIG = """\
model:
  seq_length: 8192
  tensor_model_parallel_size: 4
  sequence_parallel: true
  context_parallel_size: 2
train:
  micro_batch_size: 2
  global_batch_size: 64
dataset:
  seq_length: 8192
  enable_offline_packing: true
  offline_packing_specs:
    packed_sequence_size: 4096
    pad_seq_to_mult: 4
    pad_cu_seqlens: true
ddp:
  average_in_collective: true
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("plain")
    samples = write_jsonl(root / "samples.jsonl", random_examples(np.random.default_rng(7), 120, 200))
    for name, cp in (("cp2", "2"), ("cp1", "1")):
        argv = ["pack", str(samples), "--out", str(root / name), "--pack-size", "256", "--cp", cp, "-q"]
        assert main([*argv, "--eos-id", "2"]) == 0
    for name, shift in (("a", 0.0), ("b", 0.25)):
        lines = [mlm_line(i, 9.0 - 0.1 * i + shift * (i > 5)) for i in range(1, 11)]
        (root / f"{name}.log").write_text("\n".join(lines) + "\n")
    (root / "sft.yaml").write_text(CONFIG)
    return {
        "root": root,
        "samples": samples,
        "cp2": root / "cp2",
        "cp1": root / "cp1",
        "config": root / "sft.yaml",
    }


Piped = dict[str, tuple[int, list[str]]]
Capture = pytest.CaptureFixture[str]
#: One child runs every command in turn (one interpreter start, not seven), its stdout a pipe throughout.
_RUNNER = """
import json, sys
from bridgepack.cli import main
for argv in json.loads(sys.argv[1]):
    code = main(argv)
    sys.stdout.flush()
    print(f"@@@ exit {code}", flush=True)
"""
COMMANDS = {
    "doctor": [
        "doctor",
        "sft.yaml",
        "--world-size",
        "32",
        "--stack",
        "megatron-bridge==0.6.2,transformer-engine==2.18",
    ],
    "list-rules": ["doctor", "--list-rules"],
    "explain": ["doctor", "--explain", "SP005"],
    "plan": [
        "plan",
        "samples.jsonl",
        "--pack-sizes",
        "128,256,512",
        "--token-slots",
        "4096",
        "--dp",
        "2",
        "--cp",
        "2",
        "--eos-id",
        "2",
        "-q",
    ],
    "inspect": ["inspect", "cp2", "--dp", "2", "--gbs", "4", "-q"],
    "diff": ["diff", "cp2/training_256.idx.parquet", "cp1/training_256.idx.parquet", "-q"],
    "curves compare": ["curves", "compare", "a.log", "b.log", "-q"],
}


@pytest.fixture(scope="module")
def piped(inputs: dict[str, Path]) -> Piped:
    """Each command's exit code and stdout lines, run with stdout a pipe and a 40-column terminal claimed."""
    env = {**os.environ, "COLUMNS": str(COLUMNS), "LC_ALL": "C.UTF-8"}
    argvs = [[*argv, "--format", "text"] for argv in COMMANDS.values()]
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(argvs)],
        cwd=inputs["root"],
        env=env,
        capture_output=True,  # stdout is a pipe, as for an agent or a CI job
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out: Piped = {}
    chunks = re.split(r"^@@@ exit (\d+)\n", done.stdout, flags=re.M)
    for name, text, code in zip(COMMANDS, chunks[0::2], chunks[1::2], strict=False):
        lines = text.splitlines()
        assert not [line for line in lines if _TABLE_OR_STYLE.search(line)], f"{name}:\n{text}"
        assert any(len(line) > COLUMNS for line in lines), f"{name}: nothing longer than COLUMNS: wrapped?"
        out[name] = (int(code), lines)
    assert list(out) == list(COMMANDS)
    return out


def _json(args: list[str], capsys: Capture, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The same command's JSON document, run in-process."""
    monkeypatch.chdir(cwd)
    main([*args, "--format", "json"])
    return json.loads(capsys.readouterr().out)


def test_doctor(
    piped: Piped, inputs: dict[str, Path], capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, lines = piped["doctor"]
    doc = _json(COMMANDS["doctor"], capsys, inputs["root"], monkeypatch)
    assert code == 1 and doc["findings"]
    for f in doc["findings"]:
        at = f["location"]
        where = (
            f"{at['file']}:{at['line']}:{at['col']}: "
            if at and at["line"]
            else f"{at['file']}: "
            if at
            else ""
        )
        heading = f"{where}{f['id']} {f['severity']}: {f['message']}"
        assert heading in lines
        block = lines[lines.index(heading) :]
        block = block[: block.index("")] if "" in block else block
        assert [line.removeprefix("fix: ") for line in block if line.startswith("fix: ")] == f["fix"]
        assert f"why: {f['why']}" in block and f"upstream: {f['upstream']}" in block
    assert (
        "sft.yaml:5:3: SP012 error: fine-tuning with CP 2 needs model.calculate_per_token_loss=true" in lines
    )


def test_doctor_list_rules_and_explain(
    piped: Piped, inputs: dict[str, Path], capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, lines = piped["list-rules"]
    doc = _json(COMMANDS["list-rules"], capsys, inputs["root"], monkeypatch)
    assert lines == [f"{r['id']} {r['severity']}: {r['title']}" for r in doc["rules"]]
    _, lines = piped["explain"]
    (entry,) = _json(COMMANDS["explain"], capsys, inputs["root"], monkeypatch)["rules"]
    assert lines[0] == f"SP005 error: {entry['title']}"
    assert f"fix sets: {', '.join(entry['fix'])}" in lines and f"example: {entry['example']}" in lines


def test_plan(
    piped: Piped, inputs: dict[str, Path], capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, lines = piped["plan"]
    doc = _json(COMMANDS["plan"], capsys, inputs["root"], monkeypatch)
    stripped = [line.strip().removesuffix(" \\") for line in lines]
    assert all(item in stripped for item in doc["overrides"])
    assert doc["pack_command"] in stripped
    for c in doc["candidates"]:
        assert (
            f"pack size {c['pack_size']}" + (" (recommended)" if c["pack_size"] == doc["recommended"] else "")
            in lines
        )


def test_inspect(
    piped: Piped, inputs: dict[str, Path], capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, lines = piped["inspect"]
    doc = _json(COMMANDS["inspect"], capsys, inputs["root"], monkeypatch)
    meta = doc["metadata"]
    assert (
        f"metadata         {meta['path']} entry {meta['entry']}: consistent (6 Bridge keys recomputed)"
        in lines
    )
    (line,) = [line for line in lines if line.startswith("DP imbalance")]
    assert line.endswith(f"; {doc['dp_imbalance']['step_time_saving']:.1%} of step time spent waiting)")


def test_diff(
    piped: Piped, inputs: dict[str, Path], capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, lines = piped["diff"]
    doc = _json(COMMANDS["diff"], capsys, inputs["root"], monkeypatch)
    assert code == 1 and f"verdict: {doc['verdict']}" in lines
    for key, (a, b) in doc["metadata"]["differences"].items():
        assert f"  {key}: {a!r} -> {b!r}" in lines
    assert any(line.startswith("  (not compared: ") and line.endswith(")") for line in lines)


def test_curves_compare(
    piped: Piped, inputs: dict[str, Path], capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, lines = piped["curves compare"]
    doc = _json(COMMANDS["curves compare"], capsys, inputs["root"], monkeypatch)
    assert code == 1
    (comparison,) = doc["comparisons"]
    block = lines[lines.index(f"candidate: {comparison['candidate']}") :]
    assert block[1] == f"metric: {comparison['metric']}" and "verdict: MISMATCH" in block
    assert lines[-1] == "verdict: MISMATCH"
