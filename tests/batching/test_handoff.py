"""Hand-offs: Megatron-Core PackedSeqParams (megatron-core 0.16.1, CPU) and the Hugging Face packed layout."""

from __future__ import annotations

import pytest
import torch

from bridgepack.batching import PackedCollator, pack_in_batch, to_hf_packed, to_packed_seq_params

ITEMS = [
    {
        "input_ids": [10, 11, 12, 2, 2, 20, 21, 2, 2, 2],
        "seq_boundaries": [0, 5, 10],
        "loss_mask": [1, 1, 1, 0, 0] * 2,
    },
    {"input_ids": [30, 31, 32, 2, 2], "seq_boundaries": [0, 5], "loss_mask": [1, 1, 1, 0, 0]},
]


def test_packed_seq_params_from_collated_batch() -> None:
    pytest.importorskip("megatron.core")
    batch = PackedCollator(2, 8, pad_to_max_length=True, pad_seq_to_mult=4)(ITEMS)
    params = to_packed_seq_params(batch, row=1)
    assert params.qkv_format == "thd"
    assert params.cu_seqlens_q.tolist() == [0, 3, 3] and params.cu_seqlens_q.dtype == torch.int32
    assert params.cu_seqlens_q_padded.tolist() == [0, 4, 8]
    assert params.cu_seqlens_kv_padded.tolist() == [0, 4, 8]
    assert (params.max_seqlen_q, params.max_seqlen_kv) == (4, 4)
    assert params.dropped == []


def test_packed_seq_params_from_legacy_and_in_batch() -> None:
    pytest.importorskip("megatron.core")
    from megatron.core.packed_seq_params import PackedSeqParams

    legacy = PackedCollator(2, 8, pad_seq_length_to_mult=1, variant="legacy")(ITEMS[:1])
    params = to_packed_seq_params(legacy)
    assert params.cu_seqlens_q.tolist() == [0, 4, 8] and params.max_seqlen_q == 4
    assert params.cu_seqlens_q_padded is None
    tokens = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])
    packed = pack_in_batch(
        {"input_ids": tokens, "position_ids": torch.arange(4).expand(2, 4)}, pad_to_multiple_of=2
    )
    params = to_packed_seq_params(packed)
    assert params.cu_seqlens_q.tolist() == [0, 3, 5] and params.cu_seqlens_q_padded.tolist() == [0, 4, 6]
    assert params.max_seqlen_q == 4
    has_total = "total_tokens" in PackedSeqParams.__dataclass_fields__
    # megatron-core 0.16.1 lacks total_tokens (added later, Bridge 0.6.2 passes it): reported, not passed.
    assert params.dropped == ([] if has_total else ["total_tokens"])


def test_hf_layout() -> None:
    layout = to_hf_packed(ITEMS, width=12, pad_token_id=0)
    assert set(layout) == {"input_ids", "position_ids", "labels"}  # never an attention_mask
    assert layout["input_ids"][0].tolist() == [10, 11, 12, 2, 2, 20, 21, 2, 2, 2, 0, 0]
    assert layout["position_ids"][0].tolist() == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1]
    # stored mask [1 1 1 0 0] supervises tokens 1..3 of each sequence; first tokens and padding are -100.
    assert layout["labels"][0].tolist() == [-100, 11, 12, 2, -100, -100, 21, 2, 2, -100, -100, -100]
    assert layout["labels"][1].tolist() == [-100, 31, 32, 2] + [-100] * 8
