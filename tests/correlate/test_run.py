"""``bridgepack correlate run``: real training commands on CPU, logs teed into new run folders, compared."""

from __future__ import annotations

import datetime as dt
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from _support import warm_bridgepack
from bridgepack.cli import main
from bridgepack.correlate import claim_run_dir, new_run_dir, run_logged

TINY = Path(__file__).with_name("tiny_train.py")


def train(*flags: str) -> str:
    """The tiny trainer's command line (python from the tests' warm server: torch is imported once)."""
    return shlex.join([warm_bridgepack.python(), str(TINY), *flags])


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["correlate", "run", "--format", "json", "-q", *args])
    return code, json.loads(capsys.readouterr().out)


def test_same_seed_matches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cmd = train("--lr", "0.01", "--seed", "3")
    code, report = run_cli(capsys, "--a", cmd, "--b", cmd, "--out", str(tmp_path))
    assert (code, report["verdict"]) == (0, "match")
    run_dir = Path(report["run_dir"])
    assert run_dir.parent == tmp_path and run_dir.name.startswith("correlate-")
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "a.log",
        "b.log",
        "curves.png",
        "report.json",
        "report.txt",
    ]
    (loss,) = report["comparisons"]
    assert loss["metric"] == "lm loss" and loss["shared_steps"] == 20
    assert loss["first_divergence"] is None and loss["max_abs_diff"]["value"] == 0.0
    assert (run_dir / "a.log").read_text().count("| lm loss: ") == 20
    assert (run_dir / "curves.png").read_bytes().startswith(b"\x89PNG")
    assert json.loads((run_dir / "report.json").read_text())["verdict"] == "match"
    assert (run_dir / "report.txt").read_text().endswith("verdict: match\n")


def test_different_lr_does_not_match(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_cli(
        capsys, "--a", train("--lr", "0.01"), "--b", train("--lr", "0.03"), "--out", str(tmp_path)
    )
    assert (code, report["verdict"]) == (1, "mismatch")
    (loss,) = report["comparisons"]
    # Iteration 1's loss is computed before the first update, so the runs part at iteration 2.
    assert loss["first_divergence"]["step"] == 2
    assert not loss["passed"]


def test_failed_run_keeps_going_and_reports_the_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crash = shlex.join([sys.executable, "-c", "print('step 1'); raise SystemExit('out of memory')"])
    code, report = run_cli(capsys, "--a", crash, "--b", "echo second run", "--out", str(tmp_path))
    assert (code, report["verdict"]) == (1, "failed")
    a, b = report["runs"]
    assert a["returncode"] == 1 and b["returncode"] == 0
    assert a["tail"] == ["step 1", "out of memory"]
    assert Path(b["log"]).read_text() == "second run\n"
    assert "     | out of memory" in (Path(report["run_dir"]) / "report.txt").read_text()


def test_command_that_cannot_start_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "no-such-launcher")
    code, report = run_cli(capsys, "--a", missing, "--b", "true", "--out", str(tmp_path))
    assert (code, report["verdict"]) == (2, "not-started")
    a, b = report["runs"]
    assert a["returncode"] is None and "cannot start" in a["error"] and "no-such-launcher" in a["error"]
    assert b["returncode"] == 0  # the other command still ran


def test_shell_mode_not_found_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_cli(
        capsys, "--shell", "--a", "no-such-launcher-xyz --x", "--b", "echo hi | cat", "--out", str(tmp_path)
    )
    assert code == 2
    assert report["runs"][0]["returncode"] == 127 and "command not found" in report["runs"][0]["error"]
    assert Path(report["runs"][1]["log"]).read_text() == "hi\n"


FROZEN = dt.datetime(2026, 8, 30, 10, 15, 0, tzinfo=dt.timezone.utc)


def test_existing_run_folder_is_never_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = tmp_path / "correlate-20260830-101500"
    existing.mkdir()
    (existing / "a.log").write_text("old log\n")
    monkeypatch.setattr("bridgepack.correlate._plan._utc_now", lambda: FROZEN)
    # exit 1: two runs without a loss curve to compare; what matters here is where they ran
    assert main(["correlate", "run", "--a", "true", "--b", "true", "--out", str(tmp_path)]) == 1
    assert [p.name for p in existing.iterdir()] == ["a.log"]
    assert (existing / "a.log").read_text() == "old log\n"
    assert sorted(p.name for p in (tmp_path / "correlate-20260830-101500-2").iterdir())[:2] == [
        "a.log",
        "b.log",
    ]


def test_new_run_dir_takes_the_next_free_name(tmp_path: Path) -> None:
    assert new_run_dir(tmp_path, now=FROZEN) == tmp_path / "correlate-20260830-101500"
    (tmp_path / "correlate-20260830-101500").mkdir()
    (tmp_path / "correlate-20260830-101500-2").write_text("a file is a taken name too")
    assert new_run_dir(tmp_path, now=FROZEN) == tmp_path / "correlate-20260830-101500-3"
    assert claim_run_dir(tmp_path, now=FROZEN).is_dir()
    assert claim_run_dir(tmp_path, now=FROZEN) == tmp_path / "correlate-20260830-101500-4"


def test_live_progress_goes_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["correlate", "run", "--a", "echo first", "--b", "echo second", "--out", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert "[a] first" in err and "[b] second" in err and err[0] == "[a] starting: echo first"
    assert "[a] first" not in captured.out
    # No loss line in either log: nothing to compare is a mismatch, and the report says why.
    assert "note: a: no curve to compare" in captured.out


def test_log_is_teed_line_by_line(tmp_path: Path) -> None:
    seen: list[str] = []
    result = run_logged(
        "x", ["sh", "-c", "echo one; echo two >&2; exit 3"], tmp_path / "x.log", echo=seen.append
    )
    assert result.returncode == 3 and result.started
    assert seen == ["one", "two"] and (tmp_path / "x.log").read_text() == "one\ntwo\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--a", "true"], "both --a CMD and --b CMD"),
        (["--a", "'unbalanced", "--b", "true"], "--a: cannot split the command"),
        (["--a", "true", "--b", "true", "--tolerance", "loose"], "--tolerance: expected one of"),
        (["--a", " ", "--b", "true"], "--a: empty command"),
    ],
)
def test_bad_usage_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["correlate", "run", "--out", str(tmp_path), *args]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_spec_runs_the_planned_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both planned commands run (the tiny trainer reads MLM flags and Bridge overrides alike) and match."""
    spec: dict[str, Any] = {
        "model": {
            "num_layers": 2,
            "hidden_size": 32,
            "num_attention_heads": 4,
            "ffn_hidden_size": 64,
            "seq_length": 16,
            "vocab_size": 64,
        },
        "train": {"micro_batch_size": 8, "global_batch_size": 8, "train_iters": 12},
        "lr": {"lr": 0.02},
        "seed": {"init": 5},
        # Stand-ins for torchrun + the two training scripts: the trainer ignores what it does not know.
        "launch": {"launcher": f"{warm_bridgepack.python()} {TINY}", "mlm_script": "pretrain_gpt.py"},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, report = run_cli(capsys, "--spec", str(path), "--out", str(tmp_path / "runs"))
    assert (code, report["verdict"]) == (0, "match")
    run_dir = Path(report["run_dir"])
    assert {"mlm.log", "bridge.log", "plan.json", "mlm.sh", "bridge.sh"} <= {
        p.name for p in run_dir.iterdir()
    }
    assert report["comparisons"][0]["shared_steps"] == 12
    mlm, bridge = report["runs"]
    assert "--lr 0.02" in mlm["command"] and "optimizer.lr=0.02" in bridge["command"]
    assert mlm["command"].startswith("PYTHONPATH=3rdparty/Megatron-LM:$PYTHONPATH ")
