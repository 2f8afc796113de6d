"""The Bridge 0.6.2 text peer itself: same library versions as this interpreter, nothing replaced on the
tokenization path, and its examples are what the recipe preset promises (prompt, space, completion, EOS)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _support.bridge_text import BridgeRefused, TextCase
from _support.tokenizers import qwen3_tokenizer_dir

pytestmark = pytest.mark.network


def test_peer_runs_bridges_tokenizer_with_our_versions(bridge_text: Any) -> None:
    import jinja2
    import tokenizers
    import transformers

    assert bridge_text.versions["transformers"] == transformers.__version__
    assert bridge_text.versions["tokenizers"] == tokenizers.__version__
    assert bridge_text.versions["jinja2"] == jinja2.__version__
    replaced = " ".join(bridge_text.stand_ins)
    for module in ("tokenizers", "transformers", "sft_processing", "conversation_processing", "gpt_sft.py"):
        assert module not in replaced


def test_peer_example_decodes_to_prompt_space_completion(bridge_text: Any, tmp_path: Path) -> None:
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(json.dumps({"input": "Name a colour.", "output": "Blue"}) + "\n")
    (row,) = bridge_text.examples(TextCase(jsonl, qwen3_tokenizer_dir()))
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(qwen3_tokenizer_dir(), local_files_only=True)
    start = row["loss_mask"].index(1)
    assert tok.decode(row["input_ids"][:start]) == "Name a colour."
    assert tok.decode(row["input_ids"][start:]) == " Blue<|im_end|>"
    assert row["loss_mask"] == [0] * start + [1] * (len(row["input_ids"]) - start)


def test_peer_reports_bridges_refusal(bridge_text: Any, tmp_path: Path) -> None:
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(json.dumps({"question": "q", "output": "a"}) + "\n")
    with pytest.raises(BridgeRefused, match="prompt/completion columns"):
        bridge_text.examples(TextCase(jsonl, qwen3_tokenizer_dir()))
