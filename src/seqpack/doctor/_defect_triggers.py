"""The triggers of the known-defect atlas: small named predicates on a :class:`DefectContext`.

Pieces first (what packing, CP, chat data ... mean in a config), then one trigger per entry, named for
the condition it tests, so an entry reads ``trigger=cp_packing`` and a reviewer checks the condition once.
"""

from __future__ import annotations

import re

from seqpack._bridge_keys import CHAT, LOSS_MODE
from seqpack.doctor._defect_facts import DefectContext
from seqpack.doctor._rules import _full_iteration_graph

# ---------------------------------------------------------------- trigger pieces


def _offline(d: DefectContext) -> bool:
    ds = d.ctx.view.dataset
    return ds.enable_offline_packing or ds.offline_packing_specs is not None


def _cp(d: DefectContext) -> int:
    return d.ctx.view.model.context_parallel_size


def _chat(d: DefectContext) -> bool:
    """Chat-template SFT data: the v0.6 preprocessing config, the legacy ``dataset_kwargs.chat`` switch, or an
    HF dataset without preprocessing (Bridge 0.6 defaults those to chat)."""
    target = str(d.get("dataset.preprocessing._target_", ""))
    return (
        "Chat" in target
        or d.get(LOSS_MODE) in ("assistant", "last_turn")
        or d.truthy(CHAT, "dataset.dataset_kwargs.use_hf_tokenizer_chat_template")
        or (d.get("dataset.hf_dataset") is not None and d.get("dataset.preprocessing") is None)
    )


def _full_loss(d: DefectContext) -> bool:
    return "full" in (d.get(LOSS_MODE), d.get("dataset.dataset_kwargs.chat_loss_mode"))


def _mtp(d: DefectContext) -> bool:
    return (d.ctx.view.model.mtp_num_layers or 0) > 0


def _pad_multiple(d: DefectContext) -> int:
    pad = d.ctx.view.offline_specs.pad_seq_to_mult
    return pad if isinstance(pad, int) else 1


# ---------------------------------------------------------------- triggers, one per entry


def middle_stage_packing(d: DefectContext) -> bool:
    return d.ctx.view.model.pipeline_model_parallel_size > 2 and d.ctx.view.packing


def mlm_middle_stage_tp(d: DefectContext) -> bool:
    m = d.ctx.view.model
    return m.pipeline_model_parallel_size > 2 and m.tensor_model_parallel_size > 1 and d.ctx.view.packing


def cp_offline_packing(d: DefectContext) -> bool:
    return _offline(d) and _cp(d) > 1


def eos_in_trained_spans(d: DefectContext) -> bool:
    if not (_offline(d) and _chat(d)):
        return False
    scan = d.eos_scan()
    return scan.hits > 0 if scan is not None else _full_loss(d)


def chat_data(d: DefectContext) -> bool:
    return _chat(d)


def cp_dense_mask(d: DefectContext) -> bool:
    mask_from_data = d.get("dataset.skip_getting_attention_mask_from_dataset", True) is False
    return (
        _offline(d) and _cp(d) > 1 and (mask_from_data or d.ctx.view.model.pipeline_model_parallel_size > 2)
    )


def mxfp8_full_graph(d: DefectContext) -> bool:
    recipe = f"{d.ctx.view.mixed_precision or ''} {d.get('mixed_precision.fp8_recipe', '')}"
    param_gather = d.truthy(
        "mixed_precision.fp8_param_gather",
        "mixed_precision.fp8_param",
        "model.fp8_param",
        "ddp.fp8_param_gather",
    )
    return _full_iteration_graph(d.ctx) and "mxfp8" in recipe.lower() and param_gather


def moe_packed_padding(d: DefectContext) -> bool:
    ds = d.ctx.view.dataset
    moe = (d.get("model.num_moe_experts") or 0) > 0
    padded = (_offline(d) and (_pad_multiple(d) > 1 or ds.fixed_width)) or (
        ds.enable_in_batch_packing and ds.in_batch_packing_pad_to_multiple_of > 1
    )
    return moe and padded


def mtp_cp_packing(d: DefectContext) -> bool:
    return _mtp(d) and _cp(d) > 1 and d.ctx.view.packing


def in_batch_packing(d: DefectContext) -> bool:
    return d.ctx.view.dataset.enable_in_batch_packing


def mtp_full_recompute_packing(d: DefectContext) -> bool:
    return _mtp(d) and d.ctx.view.packing and d.get("model.recompute_granularity") == "full"


def cp_packing(d: DefectContext) -> bool:
    return _cp(d) > 1 and d.ctx.view.packing


def p2p_cp_packing(d: DefectContext) -> bool:
    """Packed CP with point-to-point communication (Megatron-Core's default ``cp_comm_type``)."""
    return cp_packing(d) and d.get("model.cp_comm_type", "p2p") == "p2p"


def chat_prepadding(d: DefectContext) -> bool:
    return _offline(d) and _chat(d) and (_pad_multiple(d) > 1 or _cp(d) > 1)


def qwen3_vl_cp_packing(d: DefectContext) -> bool:
    m = d.ctx.view.model
    names = f"{m.target or ''} {m.hf_model_id or ''} {d.ctx.family or ''}".lower().replace("-", "_")
    model = any(key in names for key in ("qwen3_vl", "qwen3vl", "exaone4_5", "exaone45"))
    return model and _cp(d) > 1 and d.ctx.view.packing


# ---------------------------------------------------------------- pieces of the surveyed entries (SP216 on)


def _packing(d: DefectContext) -> bool:
    return d.ctx.view.packing


def _comm(d: DefectContext) -> str:
    """``model.cp_comm_type`` as one lower-case string (a per-layer list is joined), ``p2p`` when unset."""
    value = d.get("model.cp_comm_type", "p2p")
    return " ".join(map(str, value)).lower() if isinstance(value, list) else str(value).lower()


def _names(d: DefectContext) -> str:
    """The model's names (target, HF id, inferred family) lower-cased with punctuation removed."""
    m = d.ctx.view.model
    return re.sub(r"[^a-z0-9]", "", f"{m.target or ''} {m.hf_model_id or ''} {d.ctx.family or ''}".lower())


def _padded_pack(d: DefectContext) -> bool:
    """Packs whose sequences carry alignment padding (pre-padding for CP or ``pad_seq_to_mult``)."""
    ds = d.ctx.view.dataset
    return _packing(d) and (
        _cp(d) > 1
        or _pad_multiple(d) > 1
        or (ds.enable_in_batch_packing and ds.in_batch_packing_pad_to_multiple_of > 1)
    )


def _moe(d: DefectContext) -> bool:
    return (d.get("model.num_moe_experts") or 0) > 0


# ---------------------------------------------------------------- triggers of the surveyed entries


def a2a_p2p_without_hierarchy(d: DefectContext) -> bool:
    return _cp(d) > 1 and "a2a+p2p" in _comm(d) and not d.get("model.hierarchical_context_parallel_sizes")


def evaluation_on_packed_data(d: DefectContext) -> bool:
    """Offline-packed data with validation on (``train.eval_iters`` not set to 0)."""
    return _offline(d) and d.get("train.eval_iters", 1) != 0


def mimo_dataset(d: DefectContext) -> bool:
    target = str(d.get("dataset._target_", "")) + str(d.get("dataset.dataset_type", ""))
    return "mimo" in target.lower()


def epoch_padding_rows(d: DefectContext) -> bool:
    """Epoch-based training over a sample mapping: the last global batch is padded with sentinel rows."""
    return d.get("train.num_epochs") is not None and d.get("dataset.max_train_samples") is not None


def nemotron_omni_in_batch(d: DefectContext) -> bool:
    names = _names(d)
    return "nemotron" in names and "omni" in names and d.ctx.view.dataset.enable_in_batch_packing


def vlm_cp_sp_wide_tp(d: DefectContext) -> bool:
    """In-batch packing with CP and SP where ``2*CP`` is not a multiple of ``CP*TP`` (TP > 2)."""
    m = d.ctx.view.model
    return (
        d.ctx.view.dataset.enable_in_batch_packing
        and _cp(d) > 1
        and m.sequence_parallel
        and m.tensor_model_parallel_size > 2
    )


def ministral_gemma_vl_cp_sp(d: DefectContext) -> bool:
    names = _names(d)
    model = "ministral3" in names or ("gemma3" in names and "vl" in names)
    return model and _cp(d) > 1 and d.ctx.view.model.sequence_parallel


def in_batch_packing_pp(d: DefectContext) -> bool:
    return d.ctx.view.dataset.enable_in_batch_packing and d.ctx.view.model.pipeline_model_parallel_size > 1


def qwen35_vl_in_batch(d: DefectContext) -> bool:
    names = _names(d)
    return ("qwen35" in names or "qwen3p5" in names) and d.ctx.view.dataset.enable_in_batch_packing


def mla_packing(d: DefectContext) -> bool:
    target = str(d.ctx.view.model.target or "").lower()
    return _packing(d) and (d.truthy("model.multi_latent_attention") or "mla" in target)


def gdn_packing(d: DefectContext) -> bool:
    """Gated DeltaNet layers (Qwen3-Next, Qwen3.5) with packed sequences."""
    variant = " ".join(
        str(d.get(f"model.{key}", "")) for key in ("experimental_attention_variant", "linear_attention_type")
    )
    names = _names(d)
    gdn = "gated_delta_net" in variant or "qwen3next" in names or "qwen35" in names
    return gdn and _packing(d)


def seq_aux_loss_packing(d: DefectContext) -> bool:
    balancing = d.get("model.moe_router_load_balancing_type", "")
    text = " ".join(map(str, balancing)) if isinstance(balancing, list) else str(balancing)
    return _moe(d) and "seq_aux_loss" in text and _packing(d)


def capacity_with_padded_packs(d: DefectContext) -> bool:
    return _moe(d) and d.get("model.moe_expert_capacity_factor") is not None and _padded_pack(d)


def attention_sink_packing(d: DefectContext) -> bool:
    return d.get("model.softmax_type", "vanilla") in ("off-by-one", "learnable") and _packing(d)


def hierarchical_cp_packing(d: DefectContext) -> bool:
    return _cp(d) > 1 and "a2a+p2p" in _comm(d) and _packing(d)


def allgather_cp_packing(d: DefectContext) -> bool:
    comm = _comm(d).replace("_", "")
    return _cp(d) > 1 and "allgather" in comm and _packing(d)


def swa_cp_packing(d: DefectContext) -> bool:
    return d.get("model.window_size") is not None and _cp(d) > 1 and _packing(d)


def swa_cp_packing_outside_a2a(d: DefectContext) -> bool:
    return swa_cp_packing(d) and _comm(d) != "a2a"


def fp8_attention_padded_packs(d: DefectContext) -> bool:
    recipe = f"{d.ctx.view.mixed_precision or ''} {d.get('mixed_precision.fp8_recipe', '')}".lower()
    scaled = any(key in recipe for key in ("delayed", "blockwise", "subchannel"))
    dpa = d.truthy("model.fp8_dot_product_attention", "mixed_precision.fp8_dot_product_attention")
    return scaled and dpa and _padded_pack(d)


def wide_head_packing(d: DefectContext) -> bool:
    """Head dimensions above 256, outside the fused and flash kernels' list (Gemma 4's 512)."""
    return (d.get("model.kv_channels") or 0) > 256 and _packing(d)


def unaligned_offline_packing(d: DefectContext) -> bool:
    """Offline packing with nothing padded for alignment (no CP, ``pad_seq_to_mult`` 1)."""
    return _offline(d) and _cp(d) <= 1 and _pad_multiple(d) <= 1


def mlm_packing_mbs_above_one(d: DefectContext) -> bool:
    return _packing(d) and (d.ctx.view.train.micro_batch_size or 1) > 1


def mla_cp_p2p(d: DefectContext) -> bool:
    return mla_packing(d) and _cp(d) > 1 and _comm(d) == "p2p"


def prepadded_offline_packing(d: DefectContext) -> bool:
    """Offline packing that pre-pads each document (CP, or ``pad_seq_to_mult`` > 1)."""
    return _offline(d) and (_cp(d) > 1 or _pad_multiple(d) > 1)
