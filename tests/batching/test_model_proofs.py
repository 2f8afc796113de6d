"""Proof on a real model that packing does not change the math (issue 4, deliverable 5).

A tiny randomly initialised transformers Llama on CPU with SDPA, in float64 so the tolerances are about
layout, not rounding:

(a) the packed batch (bridgepack's collate or its Hugging Face layout) gives the same per-token loss and the
    same gradients as the sequences run one by one (bridge-format §9: sum of token losses / number of tokens);
(b) context parallelism simulated in one process: each rank attends with its zigzag query chunks to the
    key/value shards of all ranks, ring style (online softmax over the shards, masked causally by *global*
    position and by document); the reassembled output equals full varlen attention over the packed row.
    A wrong chunk pairing, a local-position mask or a missing document mask must break it;
(c) negative controls: the same batch without reset position ids, or with an attention mask that hides the
    boundaries, gives a measurably different loss.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
import torch

from _support.packs import make_row
from _support.tiny_llama import tiny_llama
from bridgepack.batching import PackedCollator, to_hf_packed, unpartition_thd, zigzag_indices

transformers = pytest.importorskip("transformers")

EOS = 2
VOCAB = 48
PACK = 40


@pytest.fixture(scope="module")
def model() -> Any:
    return tiny_llama(VOCAB)


def _sequences(seed: int) -> list[tuple[list[int], list[int]]]:
    """Stored sequences (EOS-terminated, no EOS inside) with rolled loss masks (last stored position 0)."""
    rng = np.random.default_rng(seed)
    out = []
    for length in (9, 5, 12, 7, 3, 14, 6):
        ids = [*rng.integers(3, VOCAB, size=length - 1).tolist(), EOS]
        mask = [*rng.integers(0, 2, size=length - 1).tolist(), 0]
        mask[0] = 1  # at least one supervised token per sequence
        out.append((ids, mask))
    return out


def _items(seqs: list[tuple[list[int], list[int]]]) -> list[dict[str, Any]]:
    """Two packs: [0, 1, 2, 3] and [4, 5, 6] (runtime 8+4+11+6 = 29 and 2+13+5 = 20 of 40)."""
    items = []
    for group in ([0, 1, 2, 3], [4, 5, 6]):
        row = make_row([seqs[i][0] for i in group], [seqs[i][1] for i in group])
        bounds = [*row["seq_start_id"], len(row["input_ids"])]
        items.append({"input_ids": row["input_ids"], "seq_boundaries": bounds, "loss_mask": row["loss_mask"]})
    return items


def _token_losses(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none"
    )


def _one_by_one(
    model: Any, seqs: list[tuple[list[int], list[int]]]
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Per-token loss of every sequence run alone: sum over supervised tokens / their number."""
    model.zero_grad()
    total, count = torch.zeros((), dtype=torch.float64), 0
    for ids, mask in seqs:
        tokens = torch.tensor([ids[:-1]])
        logits = model(input_ids=tokens, use_cache=False).logits
        weights = torch.tensor(mask[:-1], dtype=torch.float64)
        total = total + (_token_losses(logits, torch.tensor([ids[1:]])) * weights).sum()
        count += int(weights.sum())
    loss = total / count
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def _megatron_style(model: Any, batch: dict[str, Any]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Loss of a collated THD batch: HF model with the batch's position ids and no attention mask."""
    model.zero_grad()
    logits = model(input_ids=batch["tokens"], position_ids=batch["position_ids"], use_cache=False).logits
    mask = batch["loss_mask"].double().reshape(-1)
    loss = (_token_losses(logits, batch["labels"]) * mask).sum() / mask.sum()
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def _assert_same(
    a: tuple[torch.Tensor, list[torch.Tensor]], b: tuple[torch.Tensor, list[torch.Tensor]]
) -> None:
    assert abs(float(a[0] - b[0])) < 1e-5
    for ga, gb in zip(a[1], b[1], strict=True):
        assert torch.allclose(ga, gb, atol=1e-5, rtol=0)


def test_a_packed_collate_equals_one_by_one(model: Any) -> None:
    seqs = _sequences(1)
    reference = _one_by_one(model, seqs)
    batch = PackedCollator(EOS, PACK)(_items(seqs))  # width: ceil(29, 16) = 32, a tail pseudo-sequence each
    assert batch["tokens"].shape == (2, 32)
    _assert_same(_megatron_style(model, batch), reference)


def test_a_hf_layout_equals_one_by_one(model: Any) -> None:
    seqs = _sequences(2)
    reference = _one_by_one(model, seqs)
    layout = to_hf_packed(_items(seqs), width=36)
    model.zero_grad()
    loss = model(**layout, use_cache=False).loss  # transformers' own mean over labels != -100
    loss.backward()
    _assert_same((loss.detach(), [p.grad.clone() for p in model.parameters()]), reference)


def test_c_without_boundaries_the_loss_changes(model: Any) -> None:
    seqs = _sequences(3)
    reference, _ = _one_by_one(model, seqs)
    batch = PackedCollator(EOS, PACK)(_items(seqs))
    no_reset = dict(batch, position_ids=torch.arange(32).expand(2, 32))
    loss_no_reset, _ = _megatron_style(model, no_reset)
    with torch.no_grad():
        logits = model(
            input_ids=batch["tokens"],
            position_ids=batch["position_ids"],
            attention_mask=torch.ones_like(batch["tokens"]),  # a mask switches packing detection off
            use_cache=False,
        ).logits
    mask = batch["loss_mask"].double().reshape(-1)
    loss_masked = (_token_losses(logits, batch["labels"]) * mask).sum() / mask.sum()
    assert abs(float(loss_no_reset - reference)) > 1e-3
    assert abs(float(loss_masked - reference)) > 1e-3


# ---- (b) context parallelism, simulated ------------------------------------------------------------------

CP = 2
CU = [0, 8, 20, 24, 32]  # physical sequences of 8, 12, 4 and a tail of 8: all divisible by 2*CP = 4
HEADS, DIM = 2, 8


def _document_of(cu: list[int]) -> torch.Tensor:
    return torch.repeat_interleave(torch.arange(len(cu) - 1), torch.tensor(np.diff(cu)))


def _full_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: list[int]) -> torch.Tensor:
    """Reference: every sequence attends causally within itself only (one SDPA call per sequence)."""
    out = torch.empty_like(q)
    for start, end in itertools.pairwise(cu):
        if end > start:
            out[:, start:end] = torch.nn.functional.scaled_dot_product_attention(
                q[:, start:end], k[:, start:end], v[:, start:end], is_causal=True
            )
    return out


def _ring_attention(
    q_shard: torch.Tensor,
    q_pos: torch.Tensor,
    kv_shards: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
    doc: torch.Tensor,
    *,
    use_documents: bool = True,
    local_positions: bool = False,
) -> torch.Tensor:
    """One rank's output: online softmax over the key/value shards of all ranks (the ring's steps).

    Masks: key position <= query position (global positions; ``local_positions`` uses shard-local ones, the
    bug this must catch) and, with ``use_documents``, the same document.
    """
    scale = 1.0 / math.sqrt(q_shard.shape[-1])
    acc = torch.zeros_like(q_shard)
    running_max = torch.full(q_shard.shape[:-1], -math.inf, dtype=q_shard.dtype)
    denom = torch.zeros(q_shard.shape[:-1], dtype=q_shard.dtype)
    for k, v, k_pos in kv_shards:
        scores = torch.einsum("hqd,hkd->hqk", q_shard, k) * scale
        if local_positions:
            allowed = torch.arange(k.shape[1])[None, :] <= torch.arange(q_shard.shape[1])[:, None]
        else:
            allowed = k_pos[None, :] <= q_pos[:, None]
        if use_documents:
            allowed = allowed & (doc[k_pos][None, :] == doc[q_pos][:, None])
        scores = scores.masked_fill(~allowed, -math.inf)
        block_max = scores.amax(dim=-1)
        new_max = torch.maximum(running_max, block_max)
        safe = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
        weights = torch.exp(scores - safe[..., None])
        correction = torch.exp(torch.where(torch.isinf(running_max), -math.inf, running_max - safe))
        acc = acc * correction[..., None] + torch.einsum("hqk,hkd->hqd", weights, v)
        denom = denom * correction + weights.sum(dim=-1)
        running_max = new_max
    return acc / denom[..., None]


def _simulate_cp(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, pairing: str = "zigzag", **mask_options: bool
) -> torch.Tensor:
    """Shard q/k/v by rank, run each rank's ring attention, reassemble with the zigzag inverse."""
    if pairing == "zigzag":
        positions = [torch.from_numpy(zigzag_indices(CU, CP, r)) for r in range(CP)]
    else:  # the bug: rank r takes chunks 2r and 2r+1 of every sequence (contiguous), not r and 2*CP-1-r
        spans = [torch.arange(s, e).chunk(2 * CP) for s, e in itertools.pairwise(CU) if e > s]
        positions = [torch.cat([c for chunks in spans for c in chunks[2 * r : 2 * r + 2]]) for r in range(CP)]
    doc = _document_of(CU)
    kv = [(k[:, pos], v[:, pos], pos) for pos in positions]  # what the ring passes around
    outputs = []
    for rank in range(CP):
        ring = kv[rank:] + kv[:rank]  # the order a ring delivers them in; softmax merging is order-free
        outputs.append(
            _ring_attention(q[:, positions[rank]], positions[rank], ring, doc, **mask_options).numpy()
        )
    return torch.from_numpy(unpartition_thd(outputs, CU, CP, axis=1))


@pytest.fixture(scope="module")
def qkv() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(5)
    return tuple(torch.randn(HEADS, CU[-1], DIM, generator=gen, dtype=torch.float64) for _ in range(3))  # type: ignore[return-value]


def test_b_zigzag_ring_attention_equals_full_varlen(qkv: tuple[torch.Tensor, ...]) -> None:
    q, k, v = qkv
    assert torch.allclose(_simulate_cp(q, k, v), _full_varlen(q, k, v, CU), atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    "broken",
    [{"pairing": "contiguous"}, {"local_positions": True}, {"use_documents": False}],
    ids=["wrong-chunk-pairing", "local-position-mask", "no-document-mask"],
)
def test_b_broken_partition_or_mask_fails(qkv: tuple[torch.Tensor, ...], broken: dict[str, Any]) -> None:
    q, k, v = qkv
    got = _simulate_cp(q, k, v, **broken)
    assert (got - _full_varlen(q, k, v, CU)).abs().max() > 1e-3
