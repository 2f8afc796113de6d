"""What the known-defect triggers read: the rule context, the raw config, packed-data scans; launcher names.

The typed :class:`ConfigView` covers the fields the rules read; several upstream defects hinge on fields
it does not model (``dataset.preprocessing.loss_mode``, ``model.recompute_granularity``,
``model.num_moe_experts`` ...), so triggers read those from the merged raw config by dotted name, with
the upstream default when unset.

One trigger looks at the packed data itself (Bridge PR #5213): an EOS token that sits *inside* a trained span.
In Bridge's packed layout a sequence ``[s, e)`` feeds inputs ``ids[s:e-1]`` and trains the label of input
``j`` when ``loss_mask[j]`` is set; an EOS at input ``j`` with ``loss_mask[j] == 1`` is exactly what the
affected collate silently drops::

    ids        a  b  EOS  c  d  EOS      (one sequence; the last EOS is only a label)
    loss_mask  0  1  1    1  1  0
    inputs     a  b  EOS  c  d
    hit              ^ input EOS whose next-token loss is trained

The scan runs over the packed split one row group at a time, vectorised (no Python loop per token).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seqpack.data.packed import PackedReader
from seqpack.doctor._context import Context

#: Launchers a defect can be specific to: Bridge's own training step, or Megatron-LM's ``pretrain_gpt.py``.
BRIDGE_LAUNCHER = "bridge"
MLM_LAUNCHER = "mlm"


@dataclass
class EosScan:
    """EOS inputs inside trained spans: how many, and where the first one is."""

    eos_id: int
    hits: int = 0
    first: str | None = None


@dataclass
class DefectContext:
    """Everything a defect trigger may read."""

    ctx: Context
    raw: dict[str, Any] = field(default_factory=dict)
    _eos: EosScan | None = None
    _eos_done: bool = False

    def get(self, dotted: str, default: Any = None) -> Any:
        """A raw config value by dotted name (``dataset.dataset_kwargs.chat``), ``default`` when absent."""
        node: Any = self.raw
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return default if node is None else node

    def truthy(self, *names: str) -> bool:
        """Whether any of the raw fields is set to true (``"true"`` strings count)."""
        return any(self.get(n) is True or str(self.get(n)).lower() == "true" for n in names)

    def eos_scan(self) -> EosScan | None:
        """The EOS-in-trained-span scan of the packed split, or ``None`` without data or a known EOS id."""
        if not self._eos_done:
            self._eos_done = True
            self._eos = _scan_packed(self.ctx)
        return self._eos


def _eos_id(ctx: Context) -> int | None:
    """The EOS id seqpack recorded in the packed split's metadata (one value for all entries) or ``None``."""
    if ctx.facts is None:
        return None
    values = ctx.facts.record_values("eos_id")
    if len(values) != 1:
        return None
    (value,) = values
    return int(value) if value.lstrip("-").isdigit() else None


def eos_inside_trained_spans(
    ids: np.ndarray, loss_mask: np.ndarray, starts: np.ndarray, lengths: np.ndarray, eos_id: int
) -> np.ndarray:
    """Flat positions ``j`` with ``ids[j] == eos_id`` and ``loss_mask[j] != 0`` that are not the last token
    of their sequence (``starts``/``lengths``: flat start and stored length of every sequence)."""
    hit = (ids == eos_id) & (loss_mask != 0)
    last = (starts + lengths - 1)[lengths > 0]
    hit[last] = False
    return np.flatnonzero(hit)


def _scan_packed(ctx: Context) -> EosScan | None:
    eos_id = _eos_id(ctx)
    if ctx.packed_path is None or eos_id is None:
        return None
    scan = EosScan(eos_id)
    reader = PackedReader(ctx.packed_path)
    try:
        for block in reader.iter_blocks():
            rows = np.repeat(np.arange(block.num_rows), block.sequences_per_row())
            starts = block.input_offsets[rows] + block.seq_start_id.astype(np.int64, copy=False)
            found = eos_inside_trained_spans(
                block.input_ids, block.loss_mask, starts, block.sequence_lengths(), eos_id
            )
            if len(found) and scan.first is None:
                row = int(np.searchsorted(block.input_offsets, found[0], side="right")) - 1
                column = int(found[0] - block.input_offsets[row])
                scan.first = f"{block.path} row {block.first_row + row}, token {column}"
            scan.hits += len(found)
    finally:
        reader.close()
    return scan
