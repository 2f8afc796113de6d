"""Log lines in Megatron-LM's format, read back by ``bridgepack curves``; TensorBoard scalars."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import numpy as np

from bridgepack.cli import main
from bridgepack.curves import read_curves
from bridgepack.train import StepRecord, TrainConfig, TrainResult, format_log_line, train
from train.conftest import with_

# The example line of bridge-format §10, character for character.
SPEC_LINE = (
    " [2026-08-22 10:00:00.123456] iteration       10/     100 | consumed samples:          320 |"
    " elapsed time per iteration (ms): 123.4 | learning rate: 2.700000E-04 | global batch size:    32 |"
    " lm loss: 9.876543E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 |"
    " number of nan iterations:   0 |"
)


def test_log_line_is_megatron_lm_format() -> None:
    record = StepRecord(
        iteration=10,
        total_iterations=100,
        loss=0.0,
        grad_norm=1.234,
        learning_rate=2.7e-4,
        rows=32,
        consumed_samples=320,
        loss_tokens=0,
        positions=0,
        real_tokens=0,
        seconds=0.0,
    )
    line = format_log_line(
        record, interval_loss=9.876543, interval_ms=123.4, now=dt.datetime(2026, 8, 22, 10, 0, 0, 123456)
    )
    assert line == SPEC_LINE


def test_log_and_tensorboard_read_back_through_curves(base_config: TrainConfig, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    tb = tmp_path / "tb"
    result = train(with_(base_config, steps=5, log_interval=2, log=log, tensorboard=tb))
    lines = read_curves(log).metrics["lm loss"].as_dict()
    # Logged: iteration 1, multiples of the interval (means over it), and the last (partial) interval.
    losses = result.losses
    expected = {1: losses[0], 2: losses[1], 4: (losses[2] + losses[3]) / 2, 5: losses[4]}
    assert sorted(lines) == sorted(expected)
    np.testing.assert_allclose(
        [lines[k] for k in sorted(lines)], [expected[k] for k in sorted(expected)], rtol=1e-6
    )
    board = read_curves(tb).metrics["lm loss"].as_dict()
    np.testing.assert_allclose([board[k] for k in sorted(board)], losses, rtol=1e-6)


def test_curves_compare_says_packed_and_padded_logs_match(
    base_config: TrainConfig, packed_path: Path, tmp_path: Path, capsys
) -> None:
    logs = []
    for flag in ("--data", "--padded-from"):
        log = tmp_path / f"{flag.strip('-')}.log"
        code = main(
            [
                "train",
                flag,
                str(packed_path),
                "--hidden",
                "32",
                "--layers",
                "2",
                "--ffn",
                "64",
                "--vocab",
                "64",
                "--steps",
                "3",
                "--log",
                str(log),
                "--quiet",
            ]
        )
        assert code == 0
        logs.append(str(log))
    capsys.readouterr()
    assert main(["curves", "compare", *logs]) == 0


def test_json_summary_is_the_results_to_dict(base_config: TrainConfig, capsys) -> None:
    """`bridgepack train --format json` prints TrainResult.to_dict(), its SCHEMA_VERSION first: same keys in
    the same order, the same numbers for the same run (timings aside)."""
    config = with_(base_config, steps=2)
    result = train(config)
    dims = config.model
    flags = {"--hidden": dims.hidden, "--layers": dims.layers, "--heads": dims.heads, "--ffn": dims.ffn}
    flags |= {"--vocab": dims.vocab, "--lr": config.lr, "--gbs": config.gbs, "--steps": 2}
    argv = ["train", "--data", str(config.data), *[str(x) for kv in flags.items() for x in kv]]
    assert main([*argv, "--format", "json", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    want = result.to_dict()
    assert want.pop("schema_version") == TrainResult.SCHEMA_VERSION == 1
    assert list(doc) == ["schema_version", *want] and doc["schema_version"] == TrainResult.SCHEMA_VERSION
    timing = {"seconds", "tokens_per_s", "real_tokens_per_s"}
    assert {k: v for k, v in doc.items() if k not in timing | {"schema_version"}} == {
        k: v for k, v in want.items() if k not in timing
    }


class _CutShort:
    """A log file whose write is cut short by a stop (a second Ctrl-C while a slow disk blocks the write):
    part of the text reaches the file, then ``KeyboardInterrupt``."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def write(self, text: str) -> int:
        self.real.write(text[: len(text) // 2])
        raise KeyboardInterrupt

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_a_log_cut_short_by_a_stop_still_ends_with_a_complete_line(tmp_path: Path) -> None:
    from bridgepack.train._log import RunLog

    path = tmp_path / "stopped.log"
    log = RunLog(stream=None, path=path, tensorboard=None, interval=1)
    record = StepRecord(
        iteration=1,
        total_iterations=3,
        loss=4.0,
        grad_norm=0.5,
        learning_rate=1e-3,
        rows=8,
        consumed_samples=8,
        loss_tokens=100,
        positions=128,
        real_tokens=120,
        seconds=0.1,
    )
    log.step(record)
    log._file = _CutShort(log._file)  # the next write is interrupted halfway
    try:
        log.step(dataclasses.replace(record, iteration=2, consumed_samples=16))
    except KeyboardInterrupt:
        pass
    finally:
        log.close()
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    lines = text.splitlines()
    assert len(lines) == 2 and lines[0].endswith("number of nan iterations:   0 |")
