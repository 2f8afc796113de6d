"""The triggers of the known-defect atlas: small named predicates on a :class:`DefectContext`.

Each trigger is named for the condition it tests, so an entry reads ``trigger=cp_packing`` and a reviewer
checks the condition once. The features they combine (packing, FP8 attention, MLA, ...) are read every way
a config can express them in ``_defect_config``.
"""

from __future__ import annotations

from bridgepack._bridge_keys import CHAT, LOSS_MODE
from bridgepack.doctor._defect_config import (
    cp,
    cp_comm,
    field,
    fp8,
    fp8_attention,
    gdn,
    head_dim_v,
    hybrid,
    is_true,
    mla,
    moe,
    mrope,
    names,
    offline,
    pack_rows,
    packing,
    pad_multiple,
    padded_packs,
    rope_fused,
    softmax_type,
    variable_packs,
    window,
)
from bridgepack.doctor._defect_facts import MLM_LAUNCHER, DefectContext
from bridgepack.doctor._rules import _full_iteration_graph

# ---------------------------------------------------------------- pieces


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


def _pp(d: DefectContext) -> int:
    return d.ctx.view.model.pipeline_model_parallel_size


def _sinks(d: DefectContext) -> bool:
    return softmax_type(d) in ("off-by-one", "learnable")


# ---------------------------------------------------------------- Bridge's step and data


def middle_stage_packing(d: DefectContext) -> bool:
    return _pp(d) > 2 and d.ctx.view.packing


def cp_offline_packing(d: DefectContext) -> bool:
    return offline(d) and cp(d) > 1


def eos_in_trained_spans(d: DefectContext) -> bool:
    if not (offline(d) and _chat(d)):
        return False
    scan = d.eos_scan()
    return scan.hits > 0 if scan is not None else _full_loss(d)


def chat_data(d: DefectContext) -> bool:
    return _chat(d)


def cp_mask_from_data(d: DefectContext) -> bool:
    """Packed CP with the dataset's attention mask loaded (``skip_getting_attention_mask_from_dataset``
    false): the packed collate's placeholder mask reaches the CP partitioning on every stage."""
    return cp_offline_packing(d) and d.get("dataset.skip_getting_attention_mask_from_dataset", True) is False


def cp_middle_stages(d: DefectContext) -> bool:
    """Packed CP with middle pipeline stages, which load the whole batch (the mask included) from 0.5.0."""
    return cp_offline_packing(d) and _pp(d) > 2


def mxfp8_full_graph(d: DefectContext) -> bool:
    setting = fp8(d)
    return (
        _full_iteration_graph(d.ctx)
        and setting is not None
        and setting.recipe == "mxfp8"
        and setting.param_gather
    )


def moe_packed_padding(d: DefectContext) -> bool:
    ds = d.ctx.view.dataset
    padded = (offline(d) and (pad_multiple(d) > 1 or ds.fixed_width)) or (
        ds.enable_in_batch_packing and ds.in_batch_packing_pad_to_multiple_of > 1
    )
    return moe(d) and padded


def in_batch_packing(d: DefectContext) -> bool:
    return d.ctx.view.dataset.enable_in_batch_packing


def chat_prepadding(d: DefectContext) -> bool:
    return offline(d) and _chat(d) and (pad_multiple(d) > 1 or cp(d) > 1)


def qwen3_vl_cp_packing(d: DefectContext) -> bool:
    flat = names(d)
    model = any(key in flat for key in ("qwen3vl", "exaone45"))
    return model and cp(d) > 1 and d.ctx.view.packing


def qwen3_vl_fused_rope_packing(d: DefectContext) -> bool:
    """Qwen3-VL packed with RoPE fusion asked for explicitly (its provider's default is off)."""
    return "qwen3vl" in names(d) and d.ctx.view.packing and is_true(d.get("model.apply_rope_fusion"))


def a2a_p2p_without_hierarchy(d: DefectContext) -> bool:
    return cp(d) > 1 and "a2a+p2p" in cp_comm(d) and not d.get("model.hierarchical_context_parallel_sizes")


def evaluation_on_packed_data(d: DefectContext) -> bool:
    """Offline-packed data with validation on (``train.eval_iters`` not set to 0)."""
    return offline(d) and d.get("train.eval_iters", 1) != 0


def mimo_dataset(d: DefectContext) -> bool:
    target = str(d.get("dataset._target_", "")) + str(d.get("dataset.dataset_type", ""))
    return "mimo" in target.lower()


def epoch_padding_rows(d: DefectContext) -> bool:
    """Epoch-based training over a sample mapping: the last global batch is padded with sentinel rows."""
    return d.get("train.num_epochs") is not None and d.get("dataset.max_train_samples") is not None


def nemotron_omni_in_batch(d: DefectContext) -> bool:
    flat = names(d)
    return "nemotron" in flat and "omni" in flat and d.ctx.view.dataset.enable_in_batch_packing


def vlm_cp_sp_wide_tp(d: DefectContext) -> bool:
    """In-batch packing with CP and SP where ``2*CP`` is not a multiple of ``CP*TP`` (TP > 2)."""
    m = d.ctx.view.model
    return (
        d.ctx.view.dataset.enable_in_batch_packing
        and cp(d) > 1
        and m.sequence_parallel
        and m.tensor_model_parallel_size > 2
    )


def ministral_gemma_vl_cp_sp(d: DefectContext) -> bool:
    flat = names(d)
    model = "ministral3" in flat or ("gemma3" in flat and "vl" in flat)
    return model and cp(d) > 1 and d.ctx.view.model.sequence_parallel


def in_batch_packing_pp(d: DefectContext) -> bool:
    return d.ctx.view.dataset.enable_in_batch_packing and _pp(d) > 1


def prepadded_offline_packing(d: DefectContext) -> bool:
    """Offline packing that pre-pads each document (CP, or ``pad_seq_to_mult`` > 1)."""
    return offline(d) and (cp(d) > 1 or pad_multiple(d) > 1)


# ---------------------------------------------------------------- Megatron-LM's training loop


def mlm_middle_stage_tp(d: DefectContext) -> bool:
    m = d.ctx.view.model
    return m.pipeline_model_parallel_size > 2 and m.tensor_model_parallel_size > 1 and pack_rows(d)


def mlm_packing_mbs_above_one(d: DefectContext) -> bool:
    return pack_rows(d) and (d.ctx.view.train.micro_batch_size or 1) > 1


def mlm_inter_document_cp(d: DefectContext) -> bool:
    """Inter-document masking (not ``--sft``) with CP: Megatron-LM shards the row as one sequence."""
    return cp(d) > 1 and bool(d.flag("--dataloader-inter-document-masking")) and not d.flag("--sft")


# ---------------------------------------------------------------- Megatron-Core


def mtp_cp_packing(d: DefectContext) -> bool:
    return _mtp(d) and cp(d) > 1 and packing(d)


def mtp_cp(d: DefectContext) -> bool:
    return _mtp(d) and cp(d) > 1


def mtp_full_recompute_packing(d: DefectContext) -> bool:
    return _mtp(d) and packing(d) and d.get("model.recompute_granularity") == "full"


def mla_packing(d: DefectContext) -> bool:
    return mla(d) and packing(d)


def gdn_packing(d: DefectContext) -> bool:
    """Gated DeltaNet layers (Qwen3-Next, Qwen3.5) with packed sequences."""
    return gdn(d) and packing(d)


def gdn_cp(d: DefectContext) -> bool:
    return gdn(d) and cp(d) > 1


def gdn_cp_with_comm_type(d: DefectContext) -> bool:
    """GDN with CP where ``TransformerLayer`` hands the mixer a ``cp_comm_type`` (set in the config, or
    Megatron-LM's default ``p2p``)."""
    return gdn_cp(d) and (d.get("model.cp_comm_type") is not None or d.launcher == MLM_LAUNCHER)


def hybrid_packing(d: DefectContext) -> bool:
    return hybrid(d) and packing(d)


def mrope_unfused_packing(d: DefectContext) -> bool:
    return mrope(d) and packing(d) and not rope_fused(d)


def seq_aux_loss_packing(d: DefectContext) -> bool:
    balancing = d.get("model.moe_router_load_balancing_type", "")
    text = " ".join(map(str, balancing)) if isinstance(balancing, list) else str(balancing)
    return moe(d) and "seq_aux_loss" in text and packing(d)


def capacity_with_padded_packs(d: DefectContext) -> bool:
    return moe(d) and d.get("model.moe_expert_capacity_factor") is not None and padded_packs(d)


def hybridep_variable_packing(d: DefectContext) -> bool:
    """HybridEP dispatch (flex dispatcher, hybridep backend) with packed rows whose token counts differ
    across ranks, without the uneven-input padding megatron-core 0.19 added as an opt-in."""
    return (
        str(d.get("model.moe_token_dispatcher_type", "")).lower() == "flex"
        and str(d.get("model.moe_flex_dispatcher_backend", "")).lower() == "hybridep"
        and variable_packs(d)
        and not d.truthy("model.moe_hybridep_pad_uneven_dispatch_inputs")
    )


def pp4_variable_lengths_batched_p2p(d: DefectContext) -> bool:
    """PP >= 4 exchanging shapes (variable sequence lengths: set, or Bridge's in-batch packing with PP)
    with batched P2P (Megatron-Core's default unless P2P overlap is on)."""
    variable = d.truthy("model.variable_seq_lengths") or d.ctx.view.dataset.enable_in_batch_packing
    batched = d.get("model.batch_p2p_comm", True) is not False and not d.truthy("model.overlap_p2p_comm")
    return _pp(d) >= 4 and variable and batched


def cp_masked_loss_per_microbatch(d: DefectContext) -> bool:
    """CP with packed (masked) SFT losses averaged per micro-batch (``calculate_per_token_loss`` off)."""
    return cp(d) > 1 and packing(d) and not d.ctx.view.model.calculate_per_token_loss


# ---------------------------------------------------------------- Transformer Engine and cuDNN


def thd_packing(d: DefectContext) -> bool:
    return packing(d)


def cp_packing(d: DefectContext) -> bool:
    return cp(d) > 1 and packing(d)


def p2p_cp_packing(d: DefectContext) -> bool:
    """Packed CP with point-to-point communication (Megatron-Core's default ``cp_comm_type``)."""
    return cp_packing(d) and cp_comm(d) == "p2p"


def attention_sink_packing(d: DefectContext) -> bool:
    return _sinks(d) and packing(d)


def sink_cp_outside_a2a(d: DefectContext) -> bool:
    return _sinks(d) and cp(d) > 1 and cp_comm(d) != "a2a"


#: Value head widths cuDNN's specialised sink-backward kernels cover (TE PR #3470).
SINK_KERNEL_HEAD_DIMS = (64, 128, 256)


def learnable_sink_generic_head_dim(d: DefectContext) -> bool:
    """Learnable sinks on packed sequences with a value head width outside :data:`SINK_KERNEL_HEAD_DIMS`
    (or one the config does not give)."""
    return softmax_type(d) == "learnable" and packing(d) and head_dim_v(d) not in SINK_KERNEL_HEAD_DIMS


def hierarchical_cp_packing(d: DefectContext) -> bool:
    return cp(d) > 1 and "a2a+p2p" in cp_comm(d) and packing(d)


def allgather_cp_packing(d: DefectContext) -> bool:
    return cp(d) > 1 and "allgather" in cp_comm(d).replace("_", "") and packing(d)


def swa_cp_packing(d: DefectContext) -> bool:
    return window(d) and cp(d) > 1 and packing(d)


def swa_cp_packing_outside_a2a(d: DefectContext) -> bool:
    return swa_cp_packing(d) and cp_comm(d) != "a2a"


def fp8_attention_padded_packs(d: DefectContext) -> bool:
    setting = fp8_attention(d)
    return setting is not None and setting.recipe in ("delayed", "blockwise") and padded_packs(d)


def fp8_attention_thd_without_kernel(d: DefectContext) -> bool:
    """FP8 attention on packed sequences where Transformer Engine has no FP8 THD kernel: with CP, or
    with MXFP8."""
    setting = fp8_attention(d)
    return setting is not None and packing(d) and (cp(d) > 1 or setting.recipe == "mxfp8")


def wide_head_packing(d: DefectContext) -> bool:
    """Head dimensions above 256, outside the fused and flash kernels' list (Gemma 4's 512)."""
    kv = field(d, "model.kv_channels")
    return isinstance(kv, int) and kv > 256 and packing(d)


def mla_cp_p2p(d: DefectContext) -> bool:
    return mla_packing(d) and cp(d) > 1 and cp_comm(d) == "p2p"
