"""A tiny random-init Llama built in the test (never from a hub), for proofs that packing keeps the math."""

from __future__ import annotations

from typing import Any

import pytest


def tiny_llama(vocab: int, attn: str = "sdpa") -> Any:
    """2 layers, hidden 32, 4 heads (2 KV heads), 128 positions, float64, eval mode, seed 0 weights."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        attn_implementation=attn,
    )
    return transformers.LlamaForCausalLM(config).double().eval()
