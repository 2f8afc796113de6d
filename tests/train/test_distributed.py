"""Data parallel: 1 and 2 processes (gloo, CPU) with the same global batch train the same curve."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _support import warm_bridgepack
from bridgepack.curves import read_curves
from bridgepack.train import DataMode, TrainConfig, train
from train.conftest import with_

SRC = Path(__file__).resolve().parents[2] / "src"


def _torchrun(nproc: int, *args: str) -> dict:
    """``torchrun --standalone --nproc_per_node K --no-python bridgepack train ... --format json`` -> its JSON
    summary (each rank a fork of the tests' warm bridgepack, which imported torch once)."""
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    if torchrun is None:
        pytest.fail("torchrun is not installed beside torch")
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    proc = subprocess.run(
        [
            torchrun,
            "--standalone",
            f"--nproc_per_node={nproc}",
            "--no-python",
            *warm_bridgepack.bridgepack(),
            "train",
            *args,
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("mode", [DataMode.packed, pytest.param(DataMode.padded, marks=pytest.mark.slow)])
def test_two_processes_match_one(base_config: TrainConfig, mode: DataMode, tmp_path: Path) -> None:
    config = with_(base_config, mode=mode, steps=3)
    one = train(config)
    flag = "--data" if mode is DataMode.packed else "--padded-from"
    two = _torchrun(
        2,
        flag,
        str(config.data),
        "--hidden",
        str(config.model.hidden),
        "--layers",
        str(config.model.layers),
        "--heads",
        str(config.model.heads),
        "--ffn",
        str(config.model.ffn),
        "--vocab",
        str(config.model.vocab),
        "--lr",
        str(config.lr),
        "--steps",
        "3",
        "--gbs",
        str(config.gbs),
        "--seed",
        str(config.seed),
        "--log-file",  # not --log: torchrun's own parser would take it for --log-dir
        str(tmp_path / "run.log"),
    )
    assert two["processes"] == 2 and two["steps"] == 3
    np.testing.assert_allclose(two["losses"], one.losses, rtol=1e-5)
    assert two["real_tokens"] == one.real_tokens and two["loss_tokens"] == one.loss_tokens
    logged = read_curves(tmp_path / "run.log").metrics["lm loss"].as_dict()
    np.testing.assert_allclose([logged[k] for k in (1, 2, 3)], one.losses, rtol=1e-5)
