"""Hand-offs: a packed batch in the form Megatron-Core or a Hugging Face model takes it.

**Megatron-Core** (:func:`to_packed_seq_params`): THD attention reads the boundaries from ``PackedSeqParams``
(qkv_format ``"thd"``), one packed row per micro-batch. Fields by release: megatron-core 0.16.1 has
``qkv_format, cu_seqlens_q/kv, cu_seqlens_q/kv_padded, max_seqlen_q/kv, local_cp_size, cp_group``; later
releases add ``total_tokens`` and ``seq_idx`` (the per-token sequence index Mamba/SSM layers need), which
Bridge 0.6.2 passes unconditionally; Bridge 0.6's THD context parallelism needs megatron-core >= 0.18.
Fields the installed release lacks are left out here (and listed in ``dropped``).

**Hugging Face** (:func:`to_hf_packed`): transformers models treat a row as packed only when
``attention_mask`` is None *and* there is no cache; then they cut the row wherever ``position_ids`` do not
step by +1. So the layout is the stored row with per-sequence positions, labels -100 where no loss is due
(the first token of every sequence, unsupervised tokens, padding) and **no** ``attention_mask``; call the
model with ``use_cache=False``. With an attention mask or a cache, sequences silently attend across
boundaries::

    stored    [10 11 12  2 | 20 21  2]     mask (rolled) [1 1 1 0 | 1 1 0]
    input_ids [10 11 12  2   20 21  2]
    position  [ 0  1  2  3    0  1  2]
    labels    [-100 11 12 2  -100 21 2]    the model shifts: logits at t predict labels[t+1]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bridgepack.errors import UsageError

#: Label value the loss ignores in Hugging Face models.
HF_IGNORE_INDEX = -100


def _row(value: Any, row: int) -> Any:
    """Row ``row`` of a [B, n] boundary tensor, or the value itself when it is 1-D."""
    return value[row] if value.dim() == 2 else value


def _as_int(value: Any, row: int) -> int:
    """max_seqlen as an int: 0-d (in-batch), [B] (pad_cu_seqlens) or [B, 1] (per row)."""
    if value.dim() == 0:
        return int(value)
    return int(value[row].reshape(-1)[0])


def to_packed_seq_params(batch: Mapping[str, Any], row: int = 0, **extra: Any) -> Any:
    """Megatron-Core ``PackedSeqParams`` for row ``row`` of a collated THD batch (or a 1-D in-batch pack).

    Accepts 0.6.x keys (``cu_seqlens_q`` ...) and legacy keys (``cu_seqlens`` padded with -1, cut at
    ``cu_seqlens_argmin``). ``extra`` fields (e.g. ``cp_group``) are passed on. Requires megatron-core.
    """
    try:
        from megatron.core.packed_seq_params import PackedSeqParams
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UsageError("to_packed_seq_params needs megatron-core (pip install megatron-core)") from exc
    fields: dict[str, Any] = {"qkv_format": "thd"}
    if "cu_seqlens_q" in batch:
        cu = _row(batch["cu_seqlens_q"], row)
        fields["cu_seqlens_q"] = cu
        fields["cu_seqlens_kv"] = _row(batch.get("cu_seqlens_kv", batch["cu_seqlens_q"]), row)
        if "cu_seqlens_q_padded" in batch:
            fields["cu_seqlens_q_padded"] = _row(batch["cu_seqlens_q_padded"], row)
            fields["cu_seqlens_kv_padded"] = _row(
                batch.get("cu_seqlens_kv_padded", batch["cu_seqlens_q_padded"]), row
            )
        fields["max_seqlen_q"] = _as_int(batch["max_seqlen_q"], row)
        fields["max_seqlen_kv"] = _as_int(batch.get("max_seqlen_kv", batch["max_seqlen_q"]), row)
    elif "cu_seqlens" in batch:
        physical = _row(batch["cu_seqlens"], row)
        argmin = batch.get("cu_seqlens_argmin")
        physical = physical[: int(_row(argmin, row)) if argmin is not None else int(physical.argmin())]
        max_seqlen = _as_int(batch["max_seqlen"], row)
        if "cu_seqlens_unpadded" in batch:
            logical = _row(batch["cu_seqlens_unpadded"], row)
            argmin_u = batch.get("cu_seqlens_unpadded_argmin")
            logical = logical[: int(_row(argmin_u, row)) if argmin_u is not None else int(logical.argmin())]
            fields.update(cu_seqlens_q=logical, cu_seqlens_kv=logical)
            fields.update(cu_seqlens_q_padded=physical, cu_seqlens_kv_padded=physical)
        else:
            fields.update(cu_seqlens_q=physical, cu_seqlens_kv=physical)
        fields.update(max_seqlen_q=max_seqlen, max_seqlen_kv=max_seqlen)
    else:
        raise UsageError("not a THD batch: no cu_seqlens_q (0.6) or cu_seqlens (<= 0.5) key")
    if "total_tokens" in batch:
        fields["total_tokens"] = int(batch["total_tokens"])
    fields.update(extra)
    known = {f.name for f in dataclasses.fields(PackedSeqParams)}
    dropped = sorted(set(fields) - known)
    params = PackedSeqParams(**{k: v for k, v in fields.items() if k in known})
    params.dropped = dropped  # fields this megatron-core release does not have
    return params


def to_hf_packed(
    items: Sequence[Mapping[str, Any]], *, width: int | None = None, pad_token_id: int = 0
) -> dict[str, Any]:
    """Hugging Face packed layout from packed items (``PackedDataset`` rows): ``input_ids``,
    ``position_ids``, ``labels``; no ``attention_mask``. Pass ``use_cache=False`` to the model.

    Rows are padded to ``width`` (default: the longest row) with ``pad_token_id``, label -100 and positions
    restarting at 0, so the padding is a separate pseudo-sequence that attends to nothing real.
    """
    import torch

    if not items:
        raise UsageError("cannot lay out an empty batch")
    lengths = [len(item["input_ids"]) for item in items]
    width = max(lengths) if width is None else width
    if max(lengths) > width:
        raise UsageError(f"a row of {max(lengths)} tokens does not fit width {width}")
    input_ids = np.full((len(items), width), pad_token_id, dtype=np.int64)
    labels = np.full((len(items), width), HF_IGNORE_INDEX, dtype=np.int64)
    positions = np.zeros((len(items), width), dtype=np.int64)
    for i, item in enumerate(items):
        ids = np.asarray(item["input_ids"], dtype=np.int64)
        bounds = np.asarray(item["seq_boundaries"], dtype=np.int64)
        mask = np.asarray(item["loss_mask"]).astype(bool)
        n = ids.size
        stored = np.diff(bounds)
        input_ids[i, :n] = ids
        positions[i, :n] = np.arange(n) - np.repeat(bounds[:-1], stored)
        positions[i, n:] = np.arange(width - n)
        # Stored mask[j] supervises token j+1, which HF expects as labels[j+1].
        supervised = np.zeros(n, dtype=bool)
        supervised[1:] = mask[:-1]
        supervised[bounds[:-1]] = False  # a sequence's first token is never predicted from the previous one
        labels[i, :n] = np.where(supervised, ids, HF_IGNORE_INDEX)
    return {
        "input_ids": torch.from_numpy(input_ids),
        "position_ids": torch.from_numpy(positions),
        "labels": torch.from_numpy(labels),
    }
