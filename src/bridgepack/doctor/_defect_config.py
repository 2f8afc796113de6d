"""What a config says about the features the known defects hinge on, read every way a config can say it.

A trigger that reads one spelling misses the others (FP8 attention given as ``model.fp8`` instead of a
mixed-precision preset; packing given as Megatron-LM's ``--sft`` instead of a Bridge key), or fires where
the feature is off (a preset that overwrites ``model.fp8``). One function per feature, each reading every
spelling and following what the launcher does with them::

    feature          Bridge config                                 Megatron-LM flags         model names
    packing          enable_offline_packing, packed_sequence_specs,  --sft, --dataloader-     -
                     enable_in_batch_packing, pack_sequences_in_     inter-document-masking
                     batch, defer_in_batch_packing_to_step,
                     packing_buffer_size
    FP8 (recipe,     mixed_precision: preset or mapping, which       --fp8-format,            -
    FP8 attention)   overwrites model.fp8*; else model.fp8,          --fp8-recipe, --fp8-dot-
                     model.fp8_recipe, model.fp8_dot_product_attn.   product-attention
    MLA, GDN,        model.multi_latent_attention, experimental_     the same fields as       DeepSeek-V2/V3,
    hybrid, MRoPE,   attention_variant, hybrid_override_pattern,     flags                    Kimi K2,
    sinks, window    position_embedding_type, softmax_type,                                   Qwen3-Next,
                     window_size                                                              Qwen3.5,
                                                                                              Qwen-VL,
                                                                                              Nemotron-H,
                                                                                              GPT-OSS, Gemma

A model name stands in for a field only when the config leaves that field unset (a recipe dump writes the
field itself). Bridge facts: ``training/mixed_precision.py`` and ``training/config.py`` of the 0.6.2 wheel
(a ``mixed_precision`` preset is applied to the model config after the overrides, field by field);
Megatron-LM facts: ``megatron/training/arguments.py`` of the megatron-core 0.19.2 wheel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bridgepack.doctor._defect_facts import MLM_LAUNCHER, DefectContext

# ---------------------------------------------------------------- names and the fields they imply


def names(d: DefectContext) -> str:
    """The model's names (target, HF id, inferred family, tokenizer) lower-cased with punctuation removed."""
    view = d.ctx.view
    text = " ".join(
        str(n or "")
        for n in (view.model.target, view.model.hf_model_id, d.ctx.family, view.tokenizer.tokenizer_model)
    )
    return re.sub(r"[^a-z0-9]", "", text.lower())


#: Model families whose architecture implies a field a partial config may leave unset: (name patterns,
#: field, value). GPT-OSS: learnable sinks, alternating 128-token windows, head dim 64; Qwen-VL: 3-axis
#: MRoPE; Qwen3-Next / Qwen3.5: Gated DeltaNet layers; DeepSeek-V2/V3, Kimi K2, Moonlight: MLA;
#: Nemotron-H / Nemotron 3: Mamba hybrids; Gemma 2/3: sliding-window layers.
FAMILY_FIELDS: tuple[tuple[tuple[str, ...], str, Any], ...] = (
    (("gptoss",), "model.softmax_type", "learnable"),
    (("gptoss",), "model.window_size", [128, 0]),
    (("gptoss",), "model.kv_channels", 64),
    (("qwen2vl", "qwen25vl", "qwen3vl", "qwen35vl"), "model.position_embedding_type", "mrope"),
    (("qwen3next", "qwen35"), "model.experimental_attention_variant", "gated_delta_net"),
    (("deepseekv2", "deepseekv3", "deepseekr1", "kimik2", "moonlight"), "model.multi_latent_attention", True),
    (("nemotronh", "nemotron3", "mamba"), "model.hybrid_override_pattern", "M*"),
    (("gemma2",), "model.window_size", [4096, 0]),
    (("gemma3",), "model.window_size", [1024, 0]),
)


def field(d: DefectContext, dotted: str, default: Any = None) -> Any:
    """A model field as the config sets it (Bridge key or Megatron-LM flag), else as its model family implies
    (:data:`FAMILY_FIELDS`), else ``default``."""
    value = d.get(dotted)
    if value is not None:
        return value
    flat = names(d)
    for patterns, name, implied in FAMILY_FIELDS:
        if name == dotted and any(p in flat for p in patterns):
            return implied
    return default


def is_true(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


# ---------------------------------------------------------------- packing


def mlm_packing(d: DefectContext) -> bool:
    """Megatron-LM's own THD packing: ``--sft`` (packed SFT rows), or ``--dataloader-inter-document-masking``
    (megatron-core >= 0.19: documents of a pretraining row attend only to themselves)."""
    return bool(d.flag("--sft") or d.flag("--dataloader-inter-document-masking"))


def offline(d: DefectContext) -> bool:
    ds = d.ctx.view.dataset
    return ds.enable_offline_packing or ds.offline_packing_specs is not None


def packing(d: DefectContext) -> bool:
    """Any THD packing: Bridge's offline, in-batch, deferred or Energon packing, or Megatron-LM's."""
    return d.ctx.view.packing or mlm_packing(d)


def pack_rows(d: DefectContext) -> bool:
    """Packing whose packed rows reach Megatron-LM's ``get_batch`` (never in-batch packing: a Bridge VLM
    step feature): Megatron-LM's own, or offline packed data."""
    return mlm_packing(d) or offline(d)


def variable_packs(d: DefectContext) -> bool:
    """Packing whose rows differ in token count across ranks (not padded to the pack size)."""
    return packing(d) and not (offline(d) and d.ctx.view.dataset.fixed_width)


def cp(d: DefectContext) -> int:
    return d.ctx.view.model.context_parallel_size


def cp_comm(d: DefectContext) -> str:
    """``model.cp_comm_type`` as one lower-case string (a per-layer list is joined), ``p2p`` when unset."""
    value = d.get("model.cp_comm_type", "p2p")
    return " ".join(map(str, value)).lower() if isinstance(value, list) else str(value).lower()


def pad_multiple(d: DefectContext) -> int:
    pad = d.ctx.view.offline_specs.pad_seq_to_mult
    return pad if isinstance(pad, int) else 1


def padded_packs(d: DefectContext) -> bool:
    """Packs whose sequences carry alignment padding (pre-padding for CP or ``pad_seq_to_mult``)."""
    ds = d.ctx.view.dataset
    return packing(d) and (
        cp(d) > 1
        or pad_multiple(d) > 1
        or (ds.enable_in_batch_packing and ds.in_batch_packing_pad_to_multiple_of > 1)
    )


# ---------------------------------------------------------------- precision

#: Bridge 0.6.2's mixed-precision presets that turn FP8 on -> (``fp8_recipe``, ``fp8_param_gather``); none
#: sets ``fp8_dot_product_attention``. Hyphenated names are registered too.
FP8_PRESETS: dict[str, tuple[str, bool]] = {
    "bf16_with_fp8_delayed_scaling_mixed": ("delayed", True),
    "fp16_with_fp8_delayed_scaling_mixed": ("delayed", True),
    "bf16_with_mxfp8_mixed": ("mxfp8", True),
    "fp16_with_mxfp8_mixed": ("mxfp8", True),
    "bf16_with_fp8_current_scaling_mixed": ("tensorwise", True),
    "nemotron_h_bf16_with_fp8_current_scaling_mixed": ("tensorwise", True),
    "nanov2_bf16_with_fp8_current_scaling_mixed": ("blockwise", True),
    "fp16_with_fp8_current_scaling_mixed": ("tensorwise", True),
    "bf16_with_fp8_subchannel_scaling_mixed": ("blockwise", False),
    "fp16_with_fp8_subchannel_scaling_mixed": ("blockwise", False),
}
#: The ``fp8_recipe`` defaults: ``MixedPrecisionConfig``'s (Bridge), ``TransformerConfig``'s (Megatron-LM).
BRIDGE_FP8_RECIPE = "tensorwise"
MCORE_FP8_RECIPE = "delayed"


@dataclass(frozen=True)
class Fp8:
    """FP8 as the run will have it: the scaling recipe, whether attention (DPA) runs in FP8, and whether
    parameters are all-gathered in FP8."""

    recipe: str
    attention: bool
    param_gather: bool


def fp8(d: DefectContext) -> Fp8 | None:
    """FP8 training as the launcher resolves it, ``None`` when off.

    Megatron-LM reads its flags (``--fp8-format`` turns FP8 on whatever ``--bf16`` translates to). Bridge
    applies ``mixed_precision`` (a preset name or a mapping) to the model config field by field, so when it
    is set ``model.fp8*`` do not count; without it the model fields do.
    """
    if d.flag("--fp8-format"):
        recipe = str(d.flag("--fp8-recipe") or MCORE_FP8_RECIPE).lower()
        attention = d.flag("--fp8-dot-product-attention") is True
        return Fp8(recipe, attention, param_gather=d.flag("--fp8-param-gather") is True)
    mp = d.get("mixed_precision")
    gather = d.truthy("ddp.fp8_param_gather")
    if isinstance(mp, str):
        preset = FP8_PRESETS.get(mp.replace("-", "_"))
        if preset is None:
            return None
        return Fp8(preset[0], attention=False, param_gather=preset[1] or gather)
    if isinstance(mp, dict):
        if not mp.get("fp8"):
            return None
        recipe = str(mp.get("fp8_recipe") or BRIDGE_FP8_RECIPE).lower()
        gather = gather or is_true(mp.get("fp8_param_gather")) or is_true(mp.get("fp8_param"))
        return Fp8(recipe, is_true(mp.get("fp8_dot_product_attention")), gather)
    if not d.get("model.fp8"):
        return None
    recipe = str(d.get("model.fp8_recipe") or MCORE_FP8_RECIPE).lower()
    gather = gather or d.truthy("model.fp8_param", "model.fp8_param_gather")
    return Fp8(recipe, is_true(d.get("model.fp8_dot_product_attention")), gather)


def fp8_attention(d: DefectContext) -> Fp8 | None:
    """The FP8 setting when attention runs in FP8, else ``None``."""
    setting = fp8(d)
    return setting if setting is not None and setting.attention else None


# ---------------------------------------------------------------- model architecture


def mla(d: DefectContext) -> bool:
    target = str(d.ctx.view.model.target or "").lower()
    return is_true(field(d, "model.multi_latent_attention")) or "mla" in target


def gdn(d: DefectContext) -> bool:
    """Gated DeltaNet layers (Qwen3-Next, Qwen3.5)."""
    variant = " ".join(
        str(field(d, f"model.{key}", ""))
        for key in ("experimental_attention_variant", "linear_attention_type")
    )
    return "gated_delta_net" in variant


def hybrid(d: DefectContext) -> bool:
    """A Mamba hybrid (Nemotron-H, Nemotron 3): a layer pattern, or a Mamba model provider."""
    target = str(d.ctx.view.model.target or "").lower()
    return bool(field(d, "model.hybrid_override_pattern")) or "mamba" in target


def mrope(d: DefectContext) -> bool:
    """Multimodal RoPE: a per-token, 3-axis position table (Qwen2-VL to Qwen3.5-VL)."""
    return str(field(d, "model.position_embedding_type", "")).lower() == "mrope"


def rope_fused(d: DefectContext) -> bool:
    """Whether RoPE runs Transformer Engine's fused kernel: as set, else Megatron-LM's default (fused, unless
    ``--no-rope-fusion``) for a Megatron-LM launch and Megatron-Core's (unfused) otherwise."""
    value = d.get("model.apply_rope_fusion")
    if value is None:
        return d.launcher == MLM_LAUNCHER
    return is_true(value)


def softmax_type(d: DefectContext) -> str:
    return str(field(d, "model.softmax_type", "vanilla")).lower()


def window(d: DefectContext) -> bool:
    return field(d, "model.window_size") is not None


def head_dim_v(d: DefectContext) -> int | None:
    """The value head width attention kernels see: MLA's ``v_head_dim``, else ``kv_channels``, else
    ``hidden_size / num_attention_heads``; ``None`` when the config does not say."""
    if mla(d):
        return _int(field(d, "model.v_head_dim", 128))
    kv = _int(field(d, "model.kv_channels"))
    if kv is not None:
        return kv
    hidden, heads = _int(d.get("model.hidden_size")), _int(d.get("model.num_attention_heads"))
    return hidden // heads if hidden and heads else None


def moe(d: DefectContext) -> bool:
    return (_int(d.get("model.num_moe_experts")) or 0) > 0


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
