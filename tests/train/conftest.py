"""Packed data for the trainer's tests, made by the real ``bridgepack pack`` from pre-tokenized JSONL."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import orjson
import pytest
import torch

from bridgepack.cli import main
from bridgepack.packing import ModelDims
from bridgepack.train import TrainConfig

# Tiny models gain nothing from intra-op threads, and on a shared 2-core machine the threads spin-wait on
# each other (a 0.4 s run becomes 20 s).
torch.set_num_threads(1)

EOS = 2
VOCAB = 64
PACK_SIZE = 64


def write_samples(path: Path, n: int, seed: int, max_len: int = 40) -> Path:
    """``n`` pre-tokenized samples: random bodies (ids 3..VOCAB-1), EOS-terminated, a prompt masked out."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        r = int(rng.integers(2, max_len))
        ids = [*rng.integers(3, VOCAB, size=r).tolist(), EOS]
        prompt = int(rng.integers(0, r))
        mask = [0] * prompt + [1] * (r + 1 - prompt)
        lines.append(orjson.dumps({"input_ids": ids, "loss_mask": mask}))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def pack(samples: Path, out: Path, *extra: str) -> Path:
    """Run ``bridgepack pack`` in-process; return the training Parquet it wrote."""
    code = main(
        [
            "pack",
            str(samples),
            "--out",
            str(out),
            "--pack-size",
            str(PACK_SIZE),
            "--workers",
            "1",
            "--quiet",
            *extra,
        ]
    )
    assert code == 0
    return out / f"training_{PACK_SIZE}.idx.parquet"


@pytest.fixture(scope="session")
def packed_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("packed")
    return pack(write_samples(root / "samples.jsonl", 80, seed=0), root / "out")


@pytest.fixture(scope="session")
def base_config(packed_path: Path) -> TrainConfig:
    """A model and run small enough for a test: a few steps of a 2-layer, 32-wide model."""
    return TrainConfig(
        data=packed_path,
        model=ModelDims(hidden=32, layers=2, heads=4, ffn=64, vocab=VOCAB),
        lr=3e-3,
        steps=4,
        gbs=4,
        quiet=True,
    )


def with_(config: TrainConfig, **changes: object) -> TrainConfig:
    return replace(config, **changes)  # type: ignore[arg-type]
