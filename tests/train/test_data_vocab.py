"""Without ``--vocab`` the model's vocabulary comes from the data: real tokenizers' ids train as they are."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from bridgepack.cli import main
from bridgepack.packing import ModelDims
from bridgepack.train import count_parameters, data_vocab
from train.conftest import EOS, pack


def _samples(path: Path, top_id: int) -> Path:
    """Samples whose ids reach ``top_id`` (as a Qwen3 or Llama 3 tokenizer's do), EOS-terminated."""
    rows = [[5, 17, top_id, 90, EOS], [top_id - 1, 3, EOS], [11, 12, 13, 14, 15, 16, EOS]] * 8
    path.write_bytes(b"".join(orjson.dumps({"input_ids": ids}) + b"\n" for ids in rows))
    return path


@pytest.mark.parametrize("top_id", [300, 25_700])
def test_vocabulary_is_the_datas_largest_id_plus_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], top_id: int
) -> None:
    packed = pack(_samples(tmp_path / "s.jsonl", top_id), tmp_path / "packed")
    assert data_vocab(packed) == top_id + 1
    assert data_vocab(tmp_path / "packed") == top_id + 1  # the directory reads the same
    capsys.readouterr()
    argv = ["train", "--data", str(packed), "--steps", "1", "--gbs", "2", "--format", "json", "-q"]
    assert main(argv) == 0, capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    dims = ModelDims(hidden=64, layers=2, heads=4, ffn=128, vocab=top_id + 1)
    assert doc["parameters"] == count_parameters(dims)


def test_a_given_vocabulary_still_refuses_ids_beyond_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packed = pack(_samples(tmp_path / "s.jsonl", 300), tmp_path / "packed")
    capsys.readouterr()
    assert main(["train", "--data", str(packed), "--steps", "1", "--gbs", "2", "--vocab", "256"]) == 1
    assert "does not fit --vocab 256" in capsys.readouterr().err


def test_the_vocabulary_comes_from_the_footers_and_else_from_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The footers' column statistics give the largest id without reading a token (the trainer's checked
    scan is then the one read); a file written without statistics is read once instead, same answer."""
    import pyarrow.parquet as pq

    from bridgepack.data.packed import PackedSource

    packed = pack(_samples(tmp_path / "s.jsonl", 25_700), tmp_path / "packed")
    bare = tmp_path / "bare.idx.parquet"
    pq.write_table(pq.read_table(packed), bare, write_statistics=False)
    read = []
    blocks = PackedSource.blocks
    monkeypatch.setattr(
        PackedSource, "blocks", lambda self, **kw: read.append(self.location) or blocks(self, **kw)
    )
    assert data_vocab(packed) == 25_701 and read == []
    assert data_vocab(bare) == 25_701 and read == [str(bare)]
