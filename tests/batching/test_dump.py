"""bridgepack inspect --dump-batches: collated batches as .npz, compared by bridgepack diff."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _support.diff_samples import EOS, packs_of, write_packed
from bridgepack.cli import main

pytest.importorskip("torch")

#: Two-turn sequences: the inner EOS input (position 2) is supervised in the stored mask.
TURNS = [([10 + i, 20, EOS, 30, 31 + i, EOS], [0, 1, 1, 1, 1, 0]) for i in range(6)]


def dumps(tmp_path: Path) -> tuple[Path, Path]:
    data = write_packed(tmp_path / "training_16.idx.parquet", packs_of(TURNS, [2, 2, 2]))
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert main(["inspect", str(data), "--dump-batches", "2", "--out", str(a), "-q"]) == 0
    assert (
        main(
            ["inspect", str(data), "--dump-batches", "2", "--out", str(b), "--collate-variant", "main", "-q"]
        )
        == 0
    )
    return a, b


def test_dump_holds_collated_arrays_without_pickles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = dumps(tmp_path)
    with np.load(a, allow_pickle=False) as archive:
        keys = set(archive.files)
        assert int(archive["eos_id"]) == EOS
        tokens = archive["batch0.tokens"]
        cu = archive["batch0.cu_seqlens_q"]
    assert {
        "batch0.tokens",
        "batch0.labels",
        "batch0.loss_mask",
        "batch0.position_ids",
        "batch1.tokens",
    } <= keys
    assert not any(k.startswith("batch2.") for k in keys)
    # pack 0 = two 6-token sequences -> inputs of 5 tokens each, width ceil(10, 16) capped at 16
    assert tokens.tolist() == [[10, 20, EOS, 30, 31, 11, 20, EOS, 30, 32, *[EOS] * 6]]
    assert cu.tolist() == [[0, 5, 10, 16]]


def test_eos_zeroing_of_062_shows_as_eos_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = dumps(tmp_path)
    capsys.readouterr()
    assert main(["diff", str(a), str(b), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["only_in_b"] == ["batch0.padding_mask", "batch1.padding_mask"]
    # 2 packs x 2 sequences, one supervised inner EOS input each; 0.6.2 zeroes them, main keeps them
    assert report["loss_mask_kinds"] == {
        "eos_input": {"supervised_in_b_not_a": 4, "supervised_in_a_not_b": 0}
    }
    assert report["differences"]["batch0.loss_mask"]["first_index"] == [0, 2]
    main(["diff", str(a), str(b)])
    assert "EOS positions supervised in B, not in A: 4 tokens" in capsys.readouterr().out


def test_dump_usage_errors(tmp_path: Path) -> None:
    data = write_packed(tmp_path / "training_16.idx.parquet", packs_of(TURNS, [3, 3]))
    assert main(["inspect", str(data), "--dump-batches", "1", "-q"]) == 2  # no --out
    out = tmp_path / "d.npz"
    assert main(["inspect", str(data), "--dump-batches", "1", "--out", str(out), "-q"]) == 0
    assert main(["inspect", str(data), "--dump-batches", "1", "--out", str(out), "-q"]) == 2  # exists
    assert main(["inspect", str(data), "--dump-batches", "1", "--out", str(out), "-q", "--overwrite"]) == 0
    assert (
        main(["inspect", str(data), "--dump-batches", "1", "--out", str(out), "--collate-variant", "x"]) == 2
    )
    nameless = write_packed(tmp_path / "packs.parquet", packs_of(TURNS, [3, 3]))
    assert (
        main(["inspect", str(nameless), "--dump-batches", "1", "--out", str(tmp_path / "e.npz"), "-q"]) == 2
    )
