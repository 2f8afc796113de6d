"""``bridgepack demo --tokenizer DIR``: the whole path with a user's tokenizer, ids remapped for a tiny
model."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from _support.byte_bpe import build_byte_bpe
from _support.packs import bridge_metadata, make_row, write_packs
from bridgepack.cli import main
from bridgepack.demo import dataset_path
from bridgepack.demo._remap import MAPPING_NAME, remap_packs
from bridgepack.demo._steps import conversation_texts


def test_remap_is_the_rank_among_the_ids_present(tmp_path: Path) -> None:
    rows = [make_row([[151644, 271, 198, 151645]]), make_row([[271, 151645], [198, 198, 151645]])]
    write_packs(tmp_path / "training_8.idx.parquet", rows)
    bridge = bridge_metadata(rows, 8)
    entry = {**bridge, "bridgepack": {"eos_id": 151643, "fingerprint": {"content": "x"}}}
    (tmp_path / "8_metadata.jsonl").write_text(json.dumps([entry]))
    remap = remap_packs(
        tmp_path / "training_8.idx.parquet", tmp_path / "8_metadata.jsonl", tmp_path / "out",
        tokenizer="TOK", tokenizer_size=151669, overwrite=False,
    )  # fmt: skip
    # 151643 (EOS) is kept although no row holds it: the trainer pads with it.
    assert remap.kept.tolist() == [198, 271, 151643, 151644, 151645]
    table = pq.read_table(tmp_path / "out" / "training_8.idx.parquet").to_pydict()
    assert table["input_ids"] == [[3, 1, 0, 4], [1, 4, 0, 0, 4]]
    assert table["loss_mask"] == [r["loss_mask"] for r in rows]
    assert table["seq_start_id"] == [r["seq_start_id"] for r in rows]
    (meta,) = json.loads((tmp_path / "out" / "8_metadata.jsonl").read_text())
    assert {k: meta[k] for k in bridge} == bridge
    assert meta["bridgepack"]["eos_id"] == 2 and "fingerprint" not in meta["bridgepack"]
    assert meta["bridgepack"]["vocab_remap"] == {
        "tokenizer": "TOK", "tokenizer_size": 151669, "kept": 5, "mapping": MAPPING_NAME,
    }  # fmt: skip
    mapping = json.loads((tmp_path / "out" / MAPPING_NAME).read_text())
    assert mapping["original_id"] == [198, 271, 151643, 151644, 151645]


@pytest.fixture(scope="module")
def bpe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bpe")
    return build_byte_bpe(conversation_texts(dataset_path()), root / "tok", vocab_size=600)


@pytest.fixture(scope="module")
def run(bpe: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("demo") / "out"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["demo", "--quick", "--tokenizer", str(bpe), "--out", str(out), "--format", "json", "-q"])
    assert code == 0
    return out, json.loads(buffer.getvalue())


def test_demo_trains_on_remapped_ids(bpe: Path, run: tuple[Path, dict[str, Any]]) -> None:
    from transformers import AutoTokenizer

    out, doc = run
    assert doc["passed"] is True
    assert not (out / "tokenizer").exists()  # the user's tokenizer is used, none is built
    original = pq.read_table(out / "packed" / "training_512.idx.parquet")
    remapped = pq.read_table(out / "packed_vocab" / "training_512.idx.parquet")
    ids = original.column("input_ids").combine_chunks().values.to_numpy()
    new = remapped.column("input_ids").combine_chunks().values.to_numpy()
    tokenizer = AutoTokenizer.from_pretrained(str(bpe), local_files_only=True)
    present = np.union1d(np.unique(ids), [tokenizer.eos_token_id])
    (meta,) = json.loads((out / "packed_vocab" / "512_metadata.jsonl").read_text())
    # The metadata names the mapping file beside the packs: a reader needs nothing else to undo the remap.
    mapping = json.loads((out / "packed_vocab" / meta["bridgepack"]["vocab_remap"]["mapping"]).read_text())
    assert mapping["original_id"] == present.tolist()
    assert np.array_equal(np.asarray(mapping["original_id"])[new], ids)  # a bijection: the same sequences
    for name in ("loss_mask", "seq_start_id"):
        assert remapped.column(name).to_pylist() == original.column(name).to_pylist()
    (pack,) = [s for s in doc["steps"] if s["name"] == "pack"]
    kept = len(present)
    vocab = -(-kept // 64) * 64
    assert pack["data"]["vocab_remap"] == {
        "tokenizer": str(bpe), "tokenizer_size": len(tokenizer), "kept": kept, "model_vocab": vocab,
    }  # fmt: skip
    assert mapping["original_id"][meta["bridgepack"]["eos_id"]] == tokenizer.eos_token_id
    (train,) = [s for s in doc["steps"] if s["name"] == "train packed"]
    assert train["data"]["first_loss"] == pytest.approx(np.log(vocab), abs=0.5)
    page = (out / "report.html").read_text()
    assert f"the {kept:,} ids present in the packs remapped to 0..{kept - 1:,}" in page


def test_a_tokenizer_without_chat_template_is_refused_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from transformers import AutoTokenizer

    tok = build_byte_bpe(["a b c"], tmp_path / "tok", vocab_size=280)
    plain = AutoTokenizer.from_pretrained(str(tok), local_files_only=True)
    plain.chat_template = None
    plain.save_pretrained(str(tmp_path / "plain"))
    (tmp_path / "plain" / "chat_template.jinja").unlink(missing_ok=True)
    out = tmp_path / "out"
    assert main(["demo", "--quick", "--tokenizer", str(tmp_path / "plain"), "--out", str(out), "-q"]) == 2
    assert "no chat template" in capsys.readouterr().err
    assert main(["demo", "--quick", "--tokenizer", str(tmp_path / "nowhere"), "--out", str(out), "-q"]) == 2
    assert "tokenizer directory does not exist" in capsys.readouterr().err
    assert not out.exists()
