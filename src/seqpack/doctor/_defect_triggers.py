"""The triggers of the known-defect atlas: small named predicates on a :class:`DefectContext`.

Pieces first (what packing, CP, chat data ... mean in a config), then one trigger per entry, named for
the condition it tests, so an entry reads ``trigger=cp_packing`` and a reviewer checks the condition once.
"""

from __future__ import annotations

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
