"""``bridgepack correlate run`` on the reference trainer: same seed matches, another learning rate does
not."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from _support import warm_bridgepack
from bridgepack.cli import main

EOS, VOCAB, PACK = 2, 48, 64


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small packed set made by the real ``bridgepack pack`` from random pre-tokenized samples."""
    root = tmp_path_factory.mktemp("train-data")
    rng = np.random.default_rng(7)
    rows = []
    for _ in range(60):
        body = rng.integers(3, VOCAB, size=int(rng.integers(4, 40))).tolist()
        rows.append(orjson.dumps({"input_ids": [*body, EOS]}))
    (root / "samples.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    out = root / "packed"
    args = ["pack", str(root / "samples.jsonl"), "--out", str(out), "--pack-size", str(PACK), "-q"]
    assert main([*args, "--workers", "1"]) == 0
    return out / f"training_{PACK}.idx.parquet"


def _train(packed: Path, lr: str) -> str:
    flags = ["--data", str(packed), "--steps", "6", "--gbs", "2", "--hidden", "32", "--layers", "2"]
    flags += ["--heads", "4", "--ffn", "64", "--vocab", str(VOCAB), "--seed", "1", "--lr", lr]
    return shlex.join([*warm_bridgepack.bridgepack(), "train", *flags])  # a fork of the warm server


def _correlate(capsys: pytest.CaptureFixture[str], out: Path, a: str, b: str) -> tuple[int, dict[str, Any]]:
    code = main(["correlate", "run", "--format", "json", "-q", "--a", a, "--b", b, "--out", str(out)])
    return code, json.loads(capsys.readouterr().out)


def test_bridgepack_train_pairs(
    packed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # tiny models; threads only spin on a shared machine
    code, same = _correlate(capsys, tmp_path, _train(packed, "3e-3"), _train(packed, "3e-3"))
    assert (code, same["verdict"]) == (0, "match")
    (loss,) = same["comparisons"]
    assert loss["shared_steps"] == 6 and loss["max_abs_diff"]["value"] == 0.0

    code, other = _correlate(capsys, tmp_path, _train(packed, "3e-3"), _train(packed, "3e-2"))
    assert (code, other["verdict"]) == (1, "mismatch")
    # Iteration 1's loss is computed before the first update: both runs log the same value there, and
    # they part (beyond 2 bf16 ulps) at a later step.
    (loss,) = other["comparisons"]
    assert loss["first_divergence"]["step"] > 1 and not loss["passed"]
