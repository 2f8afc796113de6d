"""EOS for pre-tokenized input (#15 item 3): rows a chat template rendered end with its end token and a
newline (198 for Qwen), not with the tokenizer's EOS; the EOS that pads must come from --tokenizer or
--eos-id, and a guessed one is announced and recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _support.pack_inputs import read_rows, run, write_jsonl
from bridgepack.data.samples.text import eos_disagreement
from bridgepack.demo import build_tokenizer

NEWLINE = 198  # what every row of a Qwen chat render ends with
ROWS = [{"input_ids": [11, 12, 13, NEWLINE], "loss_mask": [0, 1, 1, 1]}, {"input_ids": [21, 22, NEWLINE]}]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tokenizer(["a b c"], tmp_path_factory.mktemp("tok") / "toy")  # <eos> = 2


def pack(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[list[int], dict, str]:
    source = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    out = tmp_path / "out"
    args = [str(source), "--out", str(out), "--pack-size", "16", "--workers", "1", "--overwrite", *extra]
    code, _, err = run(args, capsys)
    assert code == 0, err
    ids = [t for row in read_rows(out / "training_16.idx.parquet") for t in row["input_ids"]]
    record = json.loads((out / "16_metadata.jsonl").read_text())[0]["bridgepack"]
    return ids, record, err


def test_inferred_eos_that_pads_is_announced_and_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids, record, err = pack(tmp_path, capsys, "--pad-seq-to-mult", "4")
    assert record["eos_id"] == NEWLINE and record["eos_source"] == "inferred"
    assert ids.count(NEWLINE) > 2  # it padded with the guessed id
    warning = " ".join(err.split())
    assert f"EOS id {NEWLINE} was inferred" in warning
    assert "--eos-id" in warning and "--tokenizer" in warning


def test_inferred_eos_without_padding_is_silent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, record, err = pack(tmp_path, capsys)
    assert record["eos_source"] == "inferred" and "warning" not in err


def test_tokenizer_names_the_eos_of_pretokenized_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tokenizer_dir: Path
) -> None:
    ids, record, err = pack(tmp_path, capsys, "--pad-seq-to-mult", "4", "--tokenizer", str(tokenizer_dir))
    assert record["eos_id"] == 2 and record["eos_source"] == "tokenizer" and "warning" not in err
    assert record.get("text") is None  # the rows' ids are kept as given
    assert [t for t in ids if t not in (2, NEWLINE)] == [11, 12, 13, 21, 22]
    assert ids.count(NEWLINE) == 2 and ids.count(2) > 0  # padding is the tokenizer's EOS
    assert record["tokenizer_sha256"]


def test_eos_id_option_is_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, record, err = pack(tmp_path, capsys, "--pad-seq-to-mult", "4", "--eos-id", "7")
    assert (record["eos_id"], record["eos_source"]) == (7, "--eos-id") and "warning" not in err


def test_a_recorded_eos_other_than_the_tokenizers_is_flagged(tokenizer_dir: Path) -> None:
    message = eos_disagreement({"eos_id": NEWLINE, "eos_source": "inferred"}, tokenizer_dir)
    assert message is not None and f"EOS id is {NEWLINE} (inferred)" in message and "is 2" in message
    assert "--eos-id 2" in message  # says how to pad with the tokenizer's
    assert eos_disagreement({"eos_id": 2, "eos_source": "tokenizer"}, tokenizer_dir) is None


def test_lengths_of_pretokenized_rows_with_a_tokenizer(tmp_path: Path, tokenizer_dir: Path) -> None:
    """``bridgepack plan`` reads lengths through the same rule: the rows' ids, not a re-tokenization."""
    from bridgepack.data.pipeline import read_lengths

    source = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    assert read_lengths([source], tokenizer=tokenizer_dir, workers=1, quiet=True).tolist() == [3, 2]
