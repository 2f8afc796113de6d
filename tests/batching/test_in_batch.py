"""pack_in_batch / pack_rows: bridge-format §6 vectors, errors, and equality with Bridge 0.6.2's
in_batch.py."""

from __future__ import annotations

import functools
import types
from typing import Any

import pytest
import torch

from bridgepack.batching import pack_in_batch, pack_rows
from bridgepack.errors import DataError, UsageError


def _batch(lengths: list[int], width: int | None = None, pad: int = 0) -> dict[str, torch.Tensor]:
    width = width or max(lengths)
    tokens = torch.full((len(lengths), width), pad)
    positions = torch.zeros((len(lengths), width), dtype=torch.long)
    for i, n in enumerate(lengths):
        tokens[i, :n] = torch.arange(1, n + 1) + 10 * (i + 1)
        positions[i, :n] = torch.arange(n)
    labels = torch.where(tokens != pad, tokens + 100, -100)
    return {
        "input_ids": tokens,
        "position_ids": positions,
        "labels": labels,
        "loss_mask": (tokens != pad).long(),
    }


@pytest.mark.parametrize(
    ("lengths", "m", "cu", "cu_padded", "max_len"),
    [
        ([3, 4], 1, [0, 3, 7], None, 4),
        ([3, 6], 2, [0, 3, 9], [0, 4, 10], 6),
        ([4, 6], 2, [0, 4, 10], [0, 4, 10], 6),
    ],
)
def test_spec_vectors(
    lengths: list[int], m: int, cu: list[int], cu_padded: list[int] | None, max_len: int
) -> None:
    out = pack_in_batch(_batch(lengths), pad_to_multiple_of=m)
    assert out["cu_seqlens_q"].tolist() == out["cu_seqlens_kv"].tolist() == cu
    assert out["cu_seqlens_q"].dtype == torch.int32
    if cu_padded is None:
        assert "cu_seqlens_q_padded" not in out
    else:
        assert out["cu_seqlens_q_padded"].tolist() == out["cu_seqlens_kv_padded"].tolist() == cu_padded
    assert int(out["max_seqlen_q"]) == max_len and out["max_seqlen_q"].dtype == torch.int32
    assert out["attention_mask"] is None
    assert out["total_tokens"] == (cu_padded or cu)[-1]


def test_gap_layout() -> None:
    out = pack_in_batch(_batch([3, 6], width=7), pad_to_multiple_of=2, pad_token_id=0)
    assert out["input_ids"].tolist() == [[11, 12, 13, 0, 21, 22, 23, 24, 25, 26]]
    assert out["labels"].tolist() == [[111, 112, 113, -100, 121, 122, 123, 124, 125, 126]]
    assert out["loss_mask"].tolist() == [[1, 1, 1, 0, 1, 1, 1, 1, 1, 1]]
    assert out["position_ids"].tolist() == [[0, 1, 2, 3, 0, 1, 2, 3, 4, 5]]


def test_errors() -> None:
    with pytest.raises(DataError, match="batch row 1: empty"):
        pack_in_batch(_batch([3, 0], width=4))
    left = _batch([2, 3])
    left["input_ids"][0] = torch.tensor([0, 11, 12])
    with pytest.raises(DataError, match="batch row 0: not right-padded"):
        pack_in_batch(left)
    with pytest.raises(DataError, match="batch row 1: 5 tokens exceed sequence_length 4"):
        pack_in_batch(_batch([3, 5]), sequence_length=4)
    with pytest.raises(UsageError, match="position_ids"):
        pack_in_batch({"input_ids": torch.ones((2, 3), dtype=torch.long)})
    rows = [
        {"input_ids": torch.tensor([5, 6]), "position_ids": torch.arange(2), "labels": torch.tensor([6, 7])},
        {"input_ids": torch.tensor([8]), "position_ids": torch.arange(1)},
    ]
    with pytest.raises(DataError, match="row 1: 'labels' missing"):
        pack_rows(rows)


def test_pack_rows_equals_pack_in_batch() -> None:
    batch = _batch([3, 6, 1], width=8)
    lengths = [3, 6, 1]
    rows = [{k: v[i, : lengths[i]] for k, v in batch.items()} for i in range(3)]
    a, b = pack_rows(rows, pad_to_multiple_of=4), pack_in_batch(batch, pad_to_multiple_of=4)
    for key in ("input_ids", "labels", "loss_mask", "position_ids", "cu_seqlens_q", "cu_seqlens_q_padded"):
        assert torch.equal(a[key], b[key]), key


@functools.cache
def _bridge_in_batch() -> types.ModuleType:
    from _support.bridge_batching import bridge_module

    # in_batch.py imports torch and one constant.
    return bridge_module(
        "data/packing/in_batch.py",
        "bridge_in_batch",
        stubs={"megatron.bridge.data.datasets.utils": {"IGNORE_INDEX": -100}},
    )


def _random_batch(gen: torch.Generator, use_mask: bool, token_key: str) -> dict[str, Any]:
    rows = int(torch.randint(1, 6, (1,), generator=gen))
    width = int(torch.randint(1, 12, (1,), generator=gen))
    lengths = torch.randint(1, width + 1, (rows,), generator=gen)
    live = torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)
    tokens = torch.where(live, torch.randint(1, 50, (rows, width), generator=gen), 0)
    batch: dict[str, Any] = {
        token_key: tokens,
        "position_ids": torch.where(live, torch.arange(width).expand(rows, width) + 3, 0),
        "labels": torch.where(live, torch.randint(0, 50, (rows, width), generator=gen), -100),
        "loss_mask": live.float(),
        "pixel_weights": torch.randn(rows, width, generator=gen),
        "meta": "passes through",
    }
    if use_mask:
        batch["attention_mask"] = live.long()
    return batch


@pytest.mark.network
def test_equals_bridge_on_random_batches() -> None:
    bridge = _bridge_in_batch()
    gen = torch.Generator().manual_seed(0)
    for trial in range(120):
        m = [1, 2, 4, 8][trial % 4]
        batch = _random_batch(
            gen, use_mask=trial % 3 == 0, token_key="tokens" if trial % 5 == 0 else "input_ids"
        )
        extra = {"pixel_weights": 0.5} if trial % 2 else None
        ours = pack_in_batch(dict(batch), pad_to_multiple_of=m, sequence_tensor_pad_values=extra)
        theirs = dict(batch)
        bridge.pack_right_padded_sequence_batch_to_mcore_thd(
            theirs, pad_to_multiple_of=m, sequence_tensor_pad_values=extra
        )
        assert set(ours) == set(theirs), trial
        for key, value in theirs.items():
            if isinstance(value, torch.Tensor):
                assert ours[key].dtype == value.dtype and torch.equal(ours[key], value), (trial, key)
            else:
                assert ours[key] == value, (trial, key)
