"""What the known-defect triggers read: the rule context, the raw config, the Megatron-LM flags, packed-data
scans; launcher names.

The typed :class:`ConfigView` covers the fields the rules read; several upstream defects hinge on fields
it does not model (``dataset.preprocessing.loss_mode``, ``model.recompute_granularity``,
``model.num_moe_experts`` ...), so triggers read those from the merged raw config by dotted name, with
the upstream default when unset.

Megatron-LM builds its ``TransformerConfig`` from the flags of the same name (``--softmax-type learnable``
-> ``softmax_type``), so a ``model.*`` field no Bridge key sets is read from the Megatron-LM flag
``bridgepack translate`` does not map (:data:`MLM_FLAG_OF`: the few whose name differs)::

    --mlm-args "--sft --fp8-format hybrid --fp8-dot-product-attention"
    get("model.fp8") -> "hybrid"    get("model.fp8_dot_product_attention") -> True    flag("--sft") -> True

One trigger looks at the packed data itself (Bridge PR #5213): an EOS token that sits *inside* a trained span.
In Bridge's packed layout a sequence ``[s, e)`` feeds inputs ``ids[s:e-1]`` and trains the label of input
``j`` when ``loss_mask[j]`` is set; an EOS at input ``j`` with ``loss_mask[j] == 1`` is exactly what the
affected collate silently drops::

    ids        a  b  EOS  c  d  EOS      (one sequence; the last EOS is only a label)
    loss_mask  0  1  1    1  1  0
    inputs     a  b  EOS  c  d
    hit              ^ input EOS whose next-token loss is trained

The count comes from the doctor's one scan of the packed split (:class:`bridgepack.data.packed.PackedScan`,
one row group at a time, vectorised: no Python loop per token).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bridgepack.doctor._config_facts import ConfigFacts

#: Launchers a defect can be specific to: Bridge's own training step, or Megatron-LM's ``pretrain_gpt.py``.
BRIDGE_LAUNCHER = "bridge"
MLM_LAUNCHER = "mlm"
#: ``TransformerConfig`` fields whose Megatron-LM flag is not ``--`` + the field name with dashes.
MLM_FLAG_OF = {"model.fp8": "--fp8-format"}


@dataclass
class EosScan:
    """EOS inputs inside trained spans: how many, and where the first one is."""

    eos_id: int
    hits: int = 0
    first: str | None = None


@dataclass
class DefectContext:
    """Everything a defect trigger may read."""

    ctx: ConfigFacts
    raw: dict[str, Any] = field(default_factory=dict)
    #: ``"bridge"``, ``"mlm"`` or ``None`` (either): defaults differ (Megatron-LM fuses RoPE by default).
    launcher: str | None = None
    #: The Megatron-LM flags ``bridgepack translate`` has no Bridge key for (``{"--sft": True, ...}``).
    mlm_flags: Mapping[str, Any] = field(default_factory=dict)
    _eos: EosScan | None = None
    _eos_done: bool = False

    def get(self, dotted: str, default: Any = None) -> Any:
        """A raw config value by dotted name (``dataset.dataset_kwargs.chat``), else for a ``model.*`` field
        its Megatron-LM flag (module docstring), else ``default``."""
        node: Any = self.raw
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                node = None
                break
            node = node[part]
        if node is None and dotted.startswith("model."):
            node = self.flag(MLM_FLAG_OF.get(dotted) or "--" + dotted[len("model.") :].replace("_", "-"))
        return default if node is None else node

    def flag(self, name: str) -> Any:
        """A Megatron-LM flag's value as given (``True`` for a switch), ``None`` when not given."""
        return self.mlm_flags.get(name)

    def truthy(self, *names: str) -> bool:
        """Whether any of the raw fields is set to true (``"true"`` strings count)."""
        return any(self.get(n) is True or str(self.get(n)).lower() == "true" for n in names)

    def eos_scan(self) -> EosScan | None:
        """The EOS-in-trained-span scan of the packed split, or ``None`` without data or a known EOS id."""
        if not self._eos_done:
            self._eos_done = True
            self._eos = _scan_packed(self.ctx)
        return self._eos


def _scan_packed(ctx: ConfigFacts) -> EosScan | None:
    """The EOS-in-trained-span counts of the packed split, from the doctor's one scan of it
    (:func:`~bridgepack.doctor._packed_facts.read_packed_facts`), when the metadata records the EOS id."""
    facts = ctx.facts
    if ctx.packed_path is None or facts is None or facts.eos_id is None:
        return None
    return EosScan(facts.eos_id, facts.eos_in_spans, facts.first_eos_in_span)
