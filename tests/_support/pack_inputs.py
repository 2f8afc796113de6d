"""Shared helpers of the data tests: write real input files, run the CLI, read packed Parquet back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow.parquet as pq
import pytest

from bridgepack.cli import main

EOS = 2


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def random_examples(
    rng: np.random.Generator, n: int, max_runtime: int, eos: int = EOS, with_mask: bool = True
) -> list[dict[str, list[int]]]:
    """Stored examples with runtime lengths in [0, max_runtime], ending with ``eos``."""
    rows = []
    for r in rng.integers(0, max_runtime + 1, n):
        ids = rng.integers(3, 1000, int(r) + 1).tolist()
        ids[-1] = eos
        row: dict[str, list[int]] = {"input_ids": ids}
        if with_mask:
            row["loss_mask"] = rng.integers(0, 2, int(r) + 1).tolist()
        rows.append(row)
    return rows


def read_rows(path: Path) -> list[dict[str, list[int]]]:
    return pq.read_table(path).to_pylist()


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["pack", "--quiet", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
