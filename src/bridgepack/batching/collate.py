"""``PackedCollator``: Bridge's packed THD batch, as ``GPTSFTPackedDataset.collate_fn`` builds it
(bridge-format §5).

The collate receives the whole global batch of one DP rank (GBS/DP packs; the training loop later cuts it
into micro-batches of one row). Per pack, with stored boundaries ``b = seq_start_id + [len]``:

    stored      [10 11 12 13 | 20 21 22 23]          two sequences, b = [0, 4, 8]
    tokens      [10 11 12    | 20 21 22   ] + tail    each sequence minus its last stored token
    labels      [11 12 13    | 21 22 23   ] + tail    each sequence minus its first
    position    [ 0  1  2    |  0  1  2   ] + 0s      restarting per sequence
    cu_seqlens  [0, 3, 6, W]                          the tail (EOS tokens, no loss) is a pseudo-sequence

Width ``W`` is ``max_seq_length`` with ``pad_to_max_length``, else the longest row rounded up to
``pad_seq_length_to_mult`` (16 by default) and capped at ``max_seq_length``. With ``pad_seq_to_mult`` P > 1
(CP/SP pre-padding) the physical offsets go to ``cu_seqlens_*_padded`` and ``cu_seqlens_*`` hold logical
ones, each sequence cut after its last non-EOS input token. Rows with fewer boundaries repeat their last one.

Three variants (``variant=``):

* ``"0.6.2"`` (default, the release users install): loss mask zeroed wherever the input token is EOS;
* ``"main"``: Bridge's main branch: masks kept as stored, plus a bool ``padding_mask`` [B, W];
* ``"legacy"``: Bridge <= 0.5 keys ``cu_seqlens`` (physical, padded with -1), ``cu_seqlens_argmin``,
  ``max_seqlen`` and, with P > 1, ``cu_seqlens_unpadded`` (+ ``_argmin``).

Work is on numpy arrays per row (no per-token Python objects); tensors are made once at the end.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from bridgepack._ranges import SIZE, TOKEN_ID
from bridgepack.data.packset import MetadataEntry, PackingMetadata, as_metadata
from bridgepack.errors import DataError, InputError, UsageError, param, shown
from bridgepack.packing import checked_multiple

#: Bridge's default ``pad_seq_length_to_mult`` for the packed collate width (``GPTSFTDataset``, bridge-format
#: §5).
DEFAULT_PAD_SEQ_LENGTH_TO_MULT = 16
Variant = Literal["0.6.2", "main", "legacy"]
VARIANTS: tuple[str, ...] = ("0.6.2", "main", "legacy")


@dataclass(frozen=True)
class _Row:
    inputs: np.ndarray
    labels: np.ndarray
    loss: np.ndarray
    positions: np.ndarray
    seq_lens: np.ndarray  # runtime (input) length per sequence: stored - 1
    logical_lens: np.ndarray  # input length up to the last non-EOS token


def _ceil(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def _split_row(item: Mapping[str, Any], index: int, eos_id: int, answer_only_loss: bool) -> _Row:
    ids = np.asarray(item["input_ids"], dtype=np.int64)
    bounds = np.asarray(item["seq_boundaries"], dtype=np.int64)
    mask = np.asarray(item["loss_mask"])
    stored = np.diff(bounds)
    if bounds.size < 2 or bounds[0] != 0 or bounds[-1] != ids.size or (stored < 1).any():
        raise DataError(
            f"batch row {index}: seq_boundaries {bounds.tolist()[:8]} do not cut {ids.size} tokens"
        )
    if mask.size != ids.size:
        raise DataError(f"batch row {index}: loss_mask has {mask.size} values for {ids.size} tokens")
    keep_input = np.ones(ids.size, dtype=bool)
    keep_input[bounds[1:] - 1] = False  # the last stored token of every sequence is never an input
    keep_label = np.ones(ids.size, dtype=bool)
    keep_label[bounds[:-1]] = False  # the first is never a label
    inputs = ids[keep_input]
    loss = mask[keep_input].astype(np.int64) if answer_only_loss else (inputs != eos_id).astype(np.int64)
    seq_lens = stored - 1
    seq_starts = np.cumsum(seq_lens) - seq_lens
    positions = np.arange(inputs.size, dtype=np.int64) - np.repeat(seq_starts, seq_lens)
    # Logical length: up to and including the last non-EOS input token of each sequence.
    last_real = np.where(inputs != eos_id, np.arange(inputs.size), -1)
    logical = np.zeros(seq_lens.size, dtype=np.int64)
    nonempty = seq_lens > 0
    if nonempty.any():
        last = np.maximum.reduceat(last_real, seq_starts[nonempty])
        logical[nonempty] = np.where(last >= seq_starts[nonempty], last - seq_starts[nonempty] + 1, 0)
    return _Row(inputs, ids[keep_label], loss, positions, seq_lens, logical)


def _as_tensor(rows: list[list[int]] | np.ndarray, dtype: Any) -> Any:
    import torch

    return torch.as_tensor(np.asarray(rows), dtype=dtype)


class PackedCollator:
    """Collate Bridge packed items (see :class:`~bridgepack.batching.PackedDataset`) into Bridge's batch dict.

    Args:
        eos_id: the tokenizer's EOS id (Bridge pads with it).
        max_seq_length: the pack size N (Bridge passes ``packed_sequence_size``).
        pad_to_max_length: fixed width N (needed for CUDA graphs and ``pad_cu_seqlens``).
        pad_seq_length_to_mult: width multiple when not fixed (Bridge's default 16).
        pad_seq_to_mult: P, the per-sequence pre-padding multiple the data was packed with.
        pad_cu_seqlens: pad every boundary list to ``max_samples_per_bin + 2`` entries (CUDA graphs).
        metadata: the ``{N}_metadata.jsonl`` path or its entries (required with ``pad_cu_seqlens``).
        answer_only_loss: use the stored mask (Bridge's default); else supervise every non-EOS input.
        return_cu_seqlen: THD keys (default); else a causal ``attention_mask`` [B, 1, W, W] (True = masked).
        variant: ``"0.6.2"``, ``"main"`` or ``"legacy"`` (see the module docstring).
    """

    def __init__(
        self,
        eos_id: int,
        max_seq_length: int,
        *,
        pad_to_max_length: bool = False,
        pad_seq_length_to_mult: int = DEFAULT_PAD_SEQ_LENGTH_TO_MULT,
        pad_seq_to_mult: int = 1,
        pad_cu_seqlens: bool = False,
        metadata: str | os.PathLike[str] | Sequence[Mapping[str, Any] | MetadataEntry] | None = None,
        answer_only_loss: bool = True,
        return_cu_seqlen: bool = True,
        variant: Variant = "0.6.2",
    ) -> None:
        if variant not in VARIANTS:
            raise UsageError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        # What the CLI refuses, refused here by parameter name: a float truncated, a bool taken for 1, a
        # multiple beyond bridgepack pack's bound (each pads every batch row up to it).
        self.eos_id = TOKEN_ID.checked_int(param("eos_id"), eos_id)
        self.max_seq_length = SIZE.checked_int(param("max_seq_length"), max_seq_length)
        for name, value in (("pad_to_max_length", pad_to_max_length), ("pad_cu_seqlens", pad_cu_seqlens)):
            if not isinstance(value, bool):
                raise UsageError(f"{param(name)}: expected True or False, found {shown(value)}")
        self.pad_to_max_length = pad_to_max_length
        self.pad_seq_length_to_mult = checked_multiple("pad_seq_length_to_mult", pad_seq_length_to_mult)
        self.pad_seq_to_mult = checked_multiple("pad_seq_to_mult", pad_seq_to_mult)
        self.pad_cu_seqlens = pad_cu_seqlens
        self.answer_only_loss = answer_only_loss
        self.return_cu_seqlen = return_cu_seqlen
        self.variant = variant
        if pad_cu_seqlens:
            if metadata is None:
                raise UsageError("pad_cu_seqlens needs the packing metadata file ({N}_metadata.jsonl)")
            if isinstance(metadata, (str, os.PathLike)) and not os.path.exists(metadata):
                raise InputError(
                    f"{os.fspath(metadata)}: no such file (pad_cu_seqlens needs the packing metadata)"
                )
            if not pad_to_max_length:
                raise UsageError("pad_cu_seqlens needs pad_to_max_length=True (a fixed width)")
        self.metadata: dict[str, int | float] | None = None
        if metadata is not None:
            sidecar = (
                PackingMetadata.read(metadata)
                if isinstance(metadata, (str, os.PathLike))
                else as_metadata(list(metadata))
            )
            self.metadata = sidecar.combined()

    def width(self, row_lengths: Sequence[int]) -> int:
        """The batch width W for rows of these input lengths (Bridge's rule)."""
        if self.pad_to_max_length:
            return self.max_seq_length
        return min(self.max_seq_length, _ceil(max(row_lengths), self.pad_seq_length_to_mult))

    def __call__(self, batch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        import torch

        if not batch:
            raise UsageError("cannot collate an empty batch")
        rows = [_split_row(item, i, self.eos_id, self.answer_only_loss) for i, item in enumerate(batch)]
        lengths = [row.inputs.size for row in rows]
        width = self.width(lengths)
        for i, n in enumerate(lengths):
            if n > width:
                raise DataError(f"batch row {i}: {n} input tokens exceed the width {width} (max_seq_length)")
        size = len(rows)
        tokens = np.full((size, width), self.eos_id, dtype=np.int64)
        labels = np.full((size, width), self.eos_id, dtype=np.int64)
        loss = np.zeros((size, width), dtype=np.int64)
        positions = np.zeros((size, width), dtype=np.int64)
        for i, row in enumerate(rows):
            n = row.inputs.size
            tokens[i, :n], labels[i, :n], loss[i, :n], positions[i, :n] = (
                row.inputs,
                row.labels,
                row.loss,
                row.positions,
            )
        if self.variant != "main":
            loss[tokens == self.eos_id] = 0  # 0.6.2 and earlier: EOS inputs never carry loss
        out: dict[str, Any] = {
            "tokens": torch.from_numpy(tokens),
            "labels": torch.from_numpy(labels),
            "loss_mask": torch.from_numpy(loss),
            "position_ids": torch.from_numpy(positions),
            "token_count": lengths,
        }
        if not self.return_cu_seqlen:
            causal = ~torch.tril(torch.ones((width, width), dtype=torch.bool))
            out["attention_mask"] = causal.expand(size, 1, width, width).clone()
            return out
        if self.variant == "legacy":
            out.update(self._legacy_boundaries(rows, width))
        else:
            out.update(self._boundaries(rows, width))
        return out

    def _pad_metadata(self) -> dict[str, int | float]:
        if self.metadata is None:  # guarded in __init__; kept for the type checker
            raise UsageError("pad_cu_seqlens needs the packing metadata")
        return self.metadata

    def _safe_max_seqlen(self, width: int) -> int:
        """``pad_cu_seqlens``: one max_seqlen for all batches, ``max(dataset_max_seqlen, W - min fill)``."""
        meta = self._pad_metadata()
        return int(max(meta["dataset_max_seqlen"], width - meta["min_packed_seqlen"]))

    def _boundaries(self, rows: list[_Row], width: int) -> dict[str, Any]:
        import torch

        padded_mode = self.pad_seq_to_mult > 1
        logical_rows: list[list[int]] = []
        physical_rows: list[list[int]] = []
        padding_masks = np.zeros((len(rows), width), dtype=bool)
        for i, row in enumerate(rows):
            physical = [0, *np.cumsum(row.seq_lens).tolist()]
            if physical[-1] != width:
                physical.append(width)  # the tail pseudo-sequence
            if padded_mode:
                logical = [0, *np.cumsum(row.logical_lens).tolist()]
                if len(physical) > len(logical):
                    logical.append(logical[-1])
                for ls, le, ps, pe in zip(
                    logical[:-1], logical[1:], physical[:-1], physical[1:], strict=True
                ):
                    padding_masks[i, ps + le - ls : pe] = True
            else:
                logical = physical
                padding_masks[i, row.inputs.size :] = True
            if self.pad_cu_seqlens:
                pad_num = int(self._pad_metadata()["max_samples_per_bin"]) - len(physical) + 2
                if padded_mode:
                    physical = physical + [width] * pad_num
                    logical = logical + [logical[-1]] * pad_num
                else:
                    physical = logical = physical + [width] * pad_num
            logical_rows.append(logical)
            if padded_mode:
                physical_rows.append(physical)
        # Ragged rows: repeat the last boundary so every list (logical and physical) has one length.
        longest = max(len(b) for b in logical_rows + physical_rows)
        logical_rows = [b + [b[-1]] * (longest - len(b)) for b in logical_rows]
        physical_rows = [b + [b[-1]] * (longest - len(b)) for b in physical_rows]
        cu = _as_tensor(logical_rows, torch.int32)
        spans = _as_tensor(physical_rows, torch.int32) if padded_mode else cu
        if self.pad_cu_seqlens:
            max_seqlen = torch.full((len(rows),), self._safe_max_seqlen(width), dtype=torch.int32)
        else:
            max_seqlen = (spans[:, 1:] - spans[:, :-1]).max(dim=1, keepdim=True).values
        out: dict[str, Any] = {
            "attention_mask": None,
            "cu_seqlens_q": cu,
            "max_seqlen_q": max_seqlen,
            "max_seqlen_kv": max_seqlen,
            "cu_seqlens_kv": cu,
        }
        if padded_mode:
            out["cu_seqlens_q_padded"] = spans
            out["cu_seqlens_kv_padded"] = spans
        if self.variant == "main":
            out["padding_mask"] = torch.from_numpy(padding_masks)
        return out

    def _legacy_boundaries(self, rows: list[_Row], width: int) -> dict[str, Any]:
        import torch

        physical_rows: list[list[int]] = []
        logical_rows: list[list[int]] = []
        for row in rows:
            physical = [0, *np.cumsum(row.seq_lens).tolist()]
            if physical[-1] != width:
                physical.append(width)
            if self.pad_seq_to_mult > 1:
                logical = [0, *np.cumsum(row.logical_lens).tolist()]
                if len(physical) > len(logical):
                    logical.append(logical[-1])
                logical_rows.append(logical)
            if self.pad_cu_seqlens:
                pad_num = int(self._pad_metadata()["max_samples_per_bin"]) - len(physical) + 2
                physical = physical + [width] * pad_num
            physical_rows.append(physical)

        def minus_one_padded(lists: list[list[int]]) -> Any:
            longest = max(len(b) for b in lists) + 1
            return _as_tensor([b + [-1] * (longest - len(b)) for b in lists], torch.int32)

        cu = minus_one_padded(physical_rows)
        if self.pad_cu_seqlens:
            max_seqlen = torch.full((len(rows),), self._safe_max_seqlen(width), dtype=torch.int32)
        else:
            max_seqlen = (cu[:, 1:] - cu[:, :-1]).max(dim=1, keepdim=True).values
        out: dict[str, Any] = {
            "attention_mask": None,
            "cu_seqlens": cu,
            "cu_seqlens_argmin": torch.argmin(cu, dim=1, keepdim=True),
            "max_seqlen": max_seqlen,
        }
        if logical_rows:
            unpadded = minus_one_padded(logical_rows)
            out["cu_seqlens_unpadded"] = unpadded
            out["cu_seqlens_unpadded_argmin"] = torch.argmin(unpadded, dim=1, keepdim=True)
        return out
