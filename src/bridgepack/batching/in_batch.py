"""In-batch (VLM) packing: a right-padded micro-batch becomes one THD row, as Bridge 0.6.2 does (bridge-format
§6).

Bridge's ``pack_right_padded_sequence_batch_to_mcore_thd``. Each row's real length ``n_i`` comes from
``attention_mask`` when given, else from ``tokens != pad_token_id``; each sequence is padded to
``p_i = ceil(n_i / M) * M`` and the rows are concatenated. With rows of 3 and 6 tokens and M = 2::

    input_ids      [a a a _ | b b b b b b]          _ = pad id
    labels         [. . . -100 | . . . . . .]
    position_ids   [0 1 2 3 | 0 1 2 3 4 5]          gaps continue the positions
    cu_seqlens_q          [0, 3, 9]                 logical (int32, 1-D)
    cu_seqlens_q_padded   [0, 4, 10]                physical, present whenever M > 1
    max_seqlen_q = 6 (max p_i), total_tokens = 10, attention_mask = None

Gather indices are computed once for the whole batch; no per-token Python loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bridgepack.errors import DataError, UsageError
from bridgepack.packing import checked_multiple

#: Label value of padding inserted between sequences (Bridge's ``IGNORE_INDEX``).
IGNORE_INDEX = -100
_THD_KEYS = (
    "cu_seqlens_q",
    "cu_seqlens_kv",
    "cu_seqlens_q_padded",
    "cu_seqlens_kv_padded",
    "max_seqlen_q",
    "max_seqlen_kv",
    "total_tokens",
)


def _token_key(batch: Mapping[str, Any]) -> str:
    import torch

    for key in ("tokens", "input_ids"):
        if isinstance(batch.get(key), torch.Tensor):
            return key
    raise UsageError("in-batch packing needs a 2-D 'input_ids' or 'tokens' tensor")


def pack_in_batch(
    batch: Mapping[str, Any],
    pad_to_multiple_of: int = 1,
    pad_token_id: int = 0,
    sequence_length: int | None = None,
    *,
    sequence_tensor_pad_values: Mapping[str, int | float] | None = None,
    ignore_index: int = IGNORE_INDEX,
) -> dict[str, Any]:
    """Pack a right-padded micro-batch into one THD row; returns a new dict with Bridge's keys.

    ``batch`` holds 2-D tensors: ``input_ids`` or ``tokens`` and ``position_ids``, optionally
    ``attention_mask``, ``labels``, ``loss_mask`` and the extra per-token keys named in
    ``sequence_tensor_pad_values`` (key -> value for the gaps). Other keys pass through unchanged.
    Errors: an empty row, left padding (or holes), a row longer than ``sequence_length``, a shape mismatch.
    """
    import torch

    pad_to_multiple_of = checked_multiple("pad_to_multiple_of", pad_to_multiple_of)
    if sequence_length is not None and sequence_length < 1:
        raise UsageError(f"sequence_length must be >= 1, got {sequence_length}")
    extra = dict(sequence_tensor_pad_values or {})
    reserved = {"tokens", "input_ids", "position_ids", "labels", "loss_mask", "attention_mask"}
    if reserved & set(extra):
        raise UsageError(
            f"extra per-token keys may not replace standard ones: {sorted(reserved & set(extra))}"
        )
    token_key = _token_key(batch)
    tokens = batch[token_key]
    if tokens.dim() != 2:
        raise UsageError(f"'{token_key}' must be 2-D [batch, seq], got shape {tuple(tokens.shape)}")
    per_token: dict[str, Any] = {}
    for key in ("position_ids", "labels", "loss_mask", "attention_mask", *extra):
        value = batch.get(key)
        if value is None:
            if key == "position_ids":
                raise UsageError("in-batch packing needs 'position_ids' of the token shape")
            if key in extra:
                raise UsageError(f"extra per-token key '{key}' is not in the batch")
            continue
        if not isinstance(value, torch.Tensor) or value.shape != tokens.shape:
            raise UsageError(f"'{key}' must be a tensor of the token shape {tuple(tokens.shape)}")
        per_token[key] = value

    active = per_token["attention_mask"].bool() if "attention_mask" in per_token else tokens != pad_token_id
    lengths = active.sum(dim=1)
    columns = torch.arange(tokens.size(1), device=tokens.device)
    right_padded = columns.unsqueeze(0) < lengths.unsqueeze(1)
    if not torch.equal(active, right_padded):
        row = int((active != right_padded).any(dim=1).nonzero()[0])
        raise DataError(f"batch row {row}: not right-padded (real tokens after padding, or left padding)")
    if (lengths == 0).any():
        raise DataError(f"batch row {int((lengths == 0).nonzero()[0])}: empty (no real tokens)")
    if sequence_length is not None and (lengths > sequence_length).any():
        row = int((lengths > sequence_length).nonzero()[0])
        raise DataError(
            f"batch row {row}: {int(lengths[row])} tokens exceed sequence_length {sequence_length}"
        )

    m = pad_to_multiple_of
    padded = (lengths + m - 1) // m * m
    cu = torch.zeros(lengths.numel() + 1, dtype=torch.int64, device=tokens.device)
    cu_padded = torch.zeros_like(cu)
    cu[1:] = torch.cumsum(lengths, 0)
    cu_padded[1:] = torch.cumsum(padded, 0)
    total = int(cu_padded[-1])
    # For every output slot: its row, its offset in the row, and whether it is a real token or a gap.
    row_of = torch.repeat_interleave(torch.arange(lengths.numel(), device=tokens.device), padded)
    offset = torch.arange(total, device=tokens.device) - cu_padded[:-1][row_of]
    real = offset < lengths[row_of]
    src_col = torch.where(real, offset, 0)

    def gather(tensor: Any, fill: int | float) -> Any:
        out = torch.full((1, total), fill, dtype=tensor.dtype, device=tensor.device)
        out[0, real] = tensor[row_of[real], src_col[real]]
        return out

    out = dict(batch)
    packed_tokens = gather(tokens, pad_token_id)
    out[token_key] = packed_tokens
    if token_key == "input_ids" and "tokens" in out:
        out["tokens"] = packed_tokens
    elif token_key == "tokens" and "input_ids" in out:
        out["input_ids"] = packed_tokens
    positions = per_token["position_ids"]
    packed_positions = gather(positions, 0)
    gap = ~real
    if gap.any():
        last_position = positions[row_of, lengths[row_of] - 1]
        packed_positions[0, gap] = (last_position + 1 + offset - lengths[row_of])[gap].to(positions.dtype)
    out["position_ids"] = packed_positions
    fills: dict[str, int | float] = {"labels": ignore_index, "loss_mask": 0, **extra}
    for key, fill in fills.items():
        if key in per_token:
            out[key] = gather(per_token[key], fill)
    out["attention_mask"] = None
    for key in _THD_KEYS:
        out.pop(key, None)
    cu32 = cu.to(torch.int32)
    out["cu_seqlens_q"] = cu32
    out["cu_seqlens_kv"] = cu32
    if m > 1:
        cu_padded32 = cu_padded.to(torch.int32)
        out["cu_seqlens_q_padded"] = cu_padded32
        out["cu_seqlens_kv_padded"] = cu_padded32
    max_padded = torch.tensor(int(padded.max()), dtype=torch.int32)
    out["max_seqlen_q"] = max_padded
    out["max_seqlen_kv"] = max_padded.clone()
    out["total_tokens"] = total
    return out


def pack_rows(
    rows: Sequence[Mapping[str, Any]],
    pad_to_multiple_of: int = 1,
    pad_token_id: int = 0,
    sequence_length: int | None = None,
    *,
    token_key: str = "input_ids",
    sequence_tensor_pad_values: Mapping[str, int | float] | None = None,
    ignore_index: int = IGNORE_INDEX,
) -> dict[str, Any]:
    """Pack unpadded rows (dicts of 1-D tensors) into one THD row (Bridge's ``..._from_rows``).

    Every row needs ``token_key`` and ``position_ids``; ``labels``, ``loss_mask`` and extra keys must be in
    every row or in none (an error names the key and the first row without it).
    """
    import torch

    if not rows:
        raise UsageError("cannot pack an empty list of rows")
    optional = ("labels", "loss_mask", *(sequence_tensor_pad_values or {}))
    for key in optional:
        present = [key in row and row[key] is not None for row in rows]
        if any(present) and not all(present):
            raise DataError(f"row {present.index(False)}: '{key}' missing (present in other rows)")
    lengths = []
    for i, row in enumerate(rows):
        tokens = row.get(token_key)
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1:
            raise UsageError(f"row {i}: '{token_key}' must be a 1-D tensor")
        if tokens.numel() == 0:
            raise DataError(f"row {i}: empty (no tokens)")
        if "position_ids" not in row:
            raise UsageError(f"row {i}: 'position_ids' missing")
        mask = row.get("attention_mask")
        if mask is not None and not bool(torch.as_tensor(mask).bool().all()):
            raise DataError(f"row {i}: holds padding (attention_mask has zeros); pass unpadded rows")
        for key in ("position_ids", *[k for k in optional if k in row]):
            if row[key].dim() != 1 or row[key].numel() != tokens.numel():
                raise UsageError(f"row {i}: '{key}' must be 1-D with {tokens.numel()} values")
        lengths.append(tokens.numel())
    width = max(lengths)
    batch: dict[str, Any] = {}
    for key in (token_key, "position_ids", *[k for k in optional if k in rows[0]]):
        first = rows[0][key]
        stacked = torch.zeros((len(rows), width), dtype=first.dtype, device=first.device)
        for i, row in enumerate(rows):
            stacked[i, : lengths[i]] = row[key]
        batch[key] = stacked
    batch["attention_mask"] = torch.arange(width).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    return pack_in_batch(
        batch,
        pad_to_multiple_of,
        pad_token_id,
        sequence_length,
        sequence_tensor_pad_values=sequence_tensor_pad_values,
        ignore_index=ignore_index,
    )
