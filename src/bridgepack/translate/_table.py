"""The one mapping table between Megatron-LM flags and Megatron-Bridge override keys (bridge-format §12).

Each :class:`FlagMapping` says how one Megatron-LM flag becomes Bridge overrides and back:

* ``value``: ``--num-layers 12`` -> ``model.num_layers=12``; several keys get the same value
  (``--seq-length 4096`` -> ``dataset.seq_length=4096 model.seq_length=4096``, a *dual mapping*);
* ``switch``: ``--sequence-parallel`` -> ``model.sequence_parallel=true``; an *inverted switch* sets false
  (``--disable-bias-linear`` -> ``model.add_bias_linear=false``); a *multi-field switch* sets several keys
  (``--swiglu`` -> ``model.gated_linear_unit=true model.activation_func=silu``); a *value conversion* sets
  a preset (``--bf16`` -> ``mixed_precision=bf16_mixed``).

Flags that Bridge 0.6.2 has no field for are listed in :data:`NO_BRIDGE_EQUIVALENT` with the reason, so a
translation names them instead of dropping them. Field names were checked against the 0.6.2 wheel
(``training/config.py``, ``models/gpt_provider.py``) and Megatron-Core 0.16 dataclasses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Scalar = int | float | str | bool

#: Bridge's mixed-precision presets for the two MLM precision switches (training/mixed_precision.py).
BF16_PRESET = "bf16_mixed"
FP16_PRESET = "fp16_mixed"


@dataclass(frozen=True)
class FlagMapping:
    """How one Megatron-LM flag maps to Bridge override keys.

    ``kind="value"``: the flag takes a value, copied to every key in ``keys``.
    ``kind="switch"``: the flag takes no value; ``sets`` holds the fixed ``key -> value`` it implies.
    """

    flag: str
    kind: Literal["value", "switch"]
    keys: tuple[str, ...] = ()
    sets: tuple[tuple[str, Scalar], ...] = ()

    #: The flag takes several values (``--data-path 0.3 A 0.7 B``), written as one space-joined string.
    nargs: bool = False

    def targets(self) -> tuple[str, ...]:
        """Every Bridge key this flag writes."""
        return self.keys if self.kind == "value" else tuple(key for key, _ in self.sets)


def _v(flag: str, *keys: str) -> FlagMapping:
    return FlagMapping(flag, "value", keys=keys)


def _s(flag: str, **sets: Scalar) -> FlagMapping:
    # keyword names cannot hold dots; "__" stands for "." (model__x -> model.x)
    return FlagMapping(flag, "switch", sets=tuple((k.replace("__", "."), v) for k, v in sets.items()))


def _model_values(*names: str) -> list[FlagMapping]:
    """``--foo-bar`` -> ``model.foo_bar`` for flags whose Bridge field has the same name."""
    return [_v("--" + name.replace("_", "-"), "model." + name) for name in names]


FLAG_TABLE: tuple[FlagMapping, ...] = (
    # -- model shape
    *_model_values(
        "num_layers",
        "hidden_size",
        "ffn_hidden_size",
        "num_attention_heads",
        "num_query_groups",
        "kv_channels",
        "normalization",
        "init_method_std",
        "hidden_dropout",
        "attention_dropout",
        "position_embedding_type",
        "rotary_percent",
        "rotary_base",
        "make_vocab_size_divisible_by",
        "attention_backend",
    ),
    _v("--seq-length", "dataset.seq_length", "model.seq_length"),
    _v("--norm-epsilon", "model.layernorm_epsilon"),
    _v("--rotary-seq-len-interpolation-factor", "model.seq_len_interpolation_factor"),
    _s("--swiglu", model__gated_linear_unit=True, model__activation_func="silu"),
    _s("--group-query-attention"),  # sets model.num_query_groups with --num-query-groups (_model.py)
    _s("--disable-bias-linear", model__add_bias_linear=False),
    _s("--untie-embeddings-and-output-weights", model__share_embeddings_and_output_weights=False),
    _s("--qk-layernorm", model__qk_layernorm=True),
    _s("--attention-softmax-in-fp32", model__attention_softmax_in_fp32=True),
    _s("--apply-query-key-layer-scaling", model__apply_query_key_layer_scaling=True),
    _s("--no-gradient-accumulation-fusion", model__gradient_accumulation_fusion=False),
    _s("--no-bias-gelu-fusion", model__bias_activation_fusion=False),
    _s("--no-masked-softmax-fusion", model__masked_softmax_fusion=False),
    _s("--no-bias-dropout-fusion", model__bias_dropout_fusion=False),
    _s("--no-rope-fusion", model__apply_rope_fusion=False),
    _s("--cross-entropy-loss-fusion", model__cross_entropy_loss_fusion=True),
    _v("--cross-entropy-fusion-impl", "model.cross_entropy_fusion_impl"),
    _s("--squared-relu", model__activation_func="squared_relu"),
    _s("--add-qkv-bias", model__add_qkv_bias=True),
    _s("--fp16-lm-cross-entropy", model__fp16_lm_cross_entropy=True),
    # -- multi-latent attention
    _s("--multi-latent-attention", model__multi_latent_attention=True),
    *_model_values(
        "q_lora_rank",
        "kv_lora_rank",
        "qk_head_dim",
        "qk_pos_emb_head_dim",
        "v_head_dim",
        "rotary_scaling_factor",
        "mscale",
        "mscale_all_dim",
    ),
    _s("--deterministic-mode", model__deterministic_mode=True),
    _s("--calculate-per-token-loss", model__calculate_per_token_loss=True),
    # -- parallelism
    *_model_values(
        "tensor_model_parallel_size",
        "pipeline_model_parallel_size",
        "context_parallel_size",
        "expert_model_parallel_size",
        "expert_tensor_parallel_size",
    ),
    _s("--sequence-parallel", model__sequence_parallel=True),
    _v("--pipeline-model-parallel-layout", "model.pipeline_model_parallel_layout"),
    # model.virtual_pipeline_model_parallel_size = layers per stage / this value (_model.py)
    _v("--num-layers-per-virtual-pipeline-stage"),
    _v("--num-virtual-stages-per-pipeline-rank", "model.virtual_pipeline_model_parallel_size"),
    _s("--account-for-embedding-in-pipeline-split", model__account_for_embedding_in_pipeline_split=True),
    _s("--account-for-loss-in-pipeline-split", model__account_for_loss_in_pipeline_split=True),
    _v("--cp-comm-type", "model.cp_comm_type"),
    # -- MoE and MTP
    _v("--num-experts", "model.num_moe_experts"),
    *_model_values(
        "moe_ffn_hidden_size",
        "moe_router_load_balancing_type",
        "moe_router_topk",
        "moe_aux_loss_coeff",
        "moe_token_dispatcher_type",
        "moe_router_dtype",
        "moe_layer_freq",
        "moe_shared_expert_intermediate_size",
        "moe_router_group_topk",
        "moe_router_num_groups",
        "moe_router_topk_scaling_factor",
        "moe_router_score_function",
        "moe_router_bias_update_rate",
        "mtp_num_layers",
        "mtp_loss_scaling_factor",
    ),
    _s("--moe-router-enable-expert-bias", model__moe_router_enable_expert_bias=True),
    _s("--moe-router-fusion", model__moe_router_fusion=True),
    _s("--moe-grouped-gemm", model__moe_grouped_gemm=True),
    _s("--moe-router-pre-softmax", model__moe_router_pre_softmax=True),
    _s("--moe-permute-fusion", model__moe_permute_fusion=True),
    # -- recompute and CUDA graphs
    *_model_values("recompute_granularity", "recompute_method", "recompute_num_layers", "cuda_graph_impl"),
    # -- precision (value conversions to Bridge presets)
    _s("--bf16", mixed_precision=BF16_PRESET),
    _s("--fp16", mixed_precision=FP16_PRESET),
    # -- training loop
    _v("--micro-batch-size", "train.micro_batch_size"),
    _v("--global-batch-size", "train.global_batch_size"),
    _v("--train-iters", "train.train_iters"),
    _v("--train-samples", "train.train_samples"),
    _v("--exit-interval", "train.exit_interval"),
    _v("--exit-duration-in-mins", "train.exit_duration_in_mins"),
    _s("--manual-gc", train__manual_gc=True),
    _v("--manual-gc-interval", "train.manual_gc_interval"),
    _v("--empty-unused-memory-level", "train.empty_unused_memory_level"),
    _v("--eval-iters", "validation.eval_iters"),
    _v("--eval-interval", "validation.eval_interval"),
    _s("--skip-train", validation__skip_train=True),
    # -- optimizer
    _v("--optimizer", "optimizer.optimizer"),
    _v("--lr", "optimizer.lr"),
    _v("--min-lr", "optimizer.min_lr"),
    _v("--weight-decay", "optimizer.weight_decay"),
    _v("--clip-grad", "optimizer.clip_grad"),
    _v("--adam-beta1", "optimizer.adam_beta1"),
    _v("--adam-beta2", "optimizer.adam_beta2"),
    _v("--adam-eps", "optimizer.adam_eps"),
    _v("--sgd-momentum", "optimizer.sgd_momentum"),
    _v("--decoupled-lr", "optimizer.decoupled_lr"),
    _v("--decoupled-min-lr", "optimizer.decoupled_min_lr"),
    _s("--log-num-zeros-in-grad", optimizer__log_num_zeros_in_grad=True),
    # -- scheduler
    _v("--lr-decay-style", "scheduler.lr_decay_style"),
    _v("--lr-decay-iters", "scheduler.lr_decay_iters"),
    _v("--lr-decay-samples", "scheduler.lr_decay_samples"),
    _v("--lr-warmup-iters", "scheduler.lr_warmup_iters"),
    _v("--lr-warmup-samples", "scheduler.lr_warmup_samples"),
    _v("--lr-warmup-fraction", "scheduler.lr_warmup_fraction"),
    _v("--lr-warmup-init", "scheduler.lr_warmup_init"),
    _v("--lr-wsd-decay-style", "scheduler.lr_wsd_decay_style"),
    _v("--lr-wsd-decay-iters", "scheduler.lr_wsd_decay_iters"),
    _v("--lr-wsd-decay-samples", "scheduler.lr_wsd_decay_samples"),
    _v("--start-weight-decay", "scheduler.start_weight_decay"),
    _v("--end-weight-decay", "scheduler.end_weight_decay"),
    _v("--weight-decay-incr-style", "scheduler.weight_decay_incr_style"),
    _s("--use-checkpoint-opt_param-scheduler", scheduler__use_checkpoint_opt_param_scheduler=True),
    _s("--override-opt_param-scheduler", scheduler__override_opt_param_scheduler=True),
    # -- DDP
    _s(
        "--use-distributed-optimizer",
        ddp__use_distributed_optimizer=True,
        optimizer__use_distributed_optimizer=True,
    ),
    _s("--overlap-grad-reduce", ddp__overlap_grad_reduce=True),
    _s("--overlap-param-gather", ddp__overlap_param_gather=True),
    _s("--ddp-average-in-collective", ddp__average_in_collective=True),
    _s("--accumulate-allreduce-grads-in-fp32", ddp__grad_reduce_in_fp32=True),
    _s(
        "--no-check-for-nan-in-loss-and-grad",
        ddp__check_for_nan_in_grad=False,
        rerun_state_machine__check_for_nan_in_loss=False,
    ),
    # -- data
    FlagMapping("--data-path", "value", keys=("dataset.data_path",), nargs=True),
    _v("--split", "dataset.split"),
    _v("--data-cache-path", "dataset.path_to_cache"),
    _s("--mock-data", dataset__mock=True),
    _v("--num-workers", "dataset.num_workers"),
    _v("--dataloader-type", "dataset.dataloader_type"),
    _v("--num-dataset-builder-threads", "dataset.num_dataset_builder_threads"),
    _s("--no-mmap-bin-files", dataset__mmap_bin_files=False),
    _s("--reset-position-ids", dataset__reset_position_ids=True),
    _s("--reset-attention-mask", dataset__reset_attention_mask=True),
    _s("--eod-mask-loss", dataset__eod_mask_loss=True),
    # -- tokenizer
    _v("--tokenizer-type", "tokenizer.tokenizer_type"),
    _v("--tokenizer-model", "tokenizer.tokenizer_model"),
    _v("--vocab-file", "tokenizer.vocab_file"),
    _v("--merge-file", "tokenizer.merge_file"),
    _v("--vocab-size", "tokenizer.vocab_size"),
    # -- RNG and distributed init
    _v("--seed", "rng.seed", "dataset.random_seed"),
    _v("--distributed-backend", "dist.distributed_backend"),
    _v("--distributed-timeout-minutes", "dist.distributed_timeout_minutes"),
    # -- checkpointing
    _v("--save", "checkpoint.save"),
    _v("--load", "checkpoint.load"),
    _v("--save-interval", "checkpoint.save_interval"),
    _v("--pretrained-checkpoint", "checkpoint.pretrained_checkpoint"),
    _v("--ckpt-format", "checkpoint.ckpt_format"),
    _v("--dist-ckpt-strictness", "checkpoint.dist_ckpt_strictness"),
    _s("--finetune", checkpoint__finetune=True),
    _s("--exit-on-missing-checkpoint", checkpoint__exit_on_missing_checkpoint=True),
    _s("--use-checkpoint-args", checkpoint__use_checkpoint_args=True),
    _v("--ckpt-step", "checkpoint.ckpt_step"),
    _s("--async-save", checkpoint__async_save=True),
    _s("--use-persistent-ckpt-worker", checkpoint__use_persistent_ckpt_worker=True),
    _s("--no-ckpt-fully-parallel-save", checkpoint__fully_parallel_save=False),
    _s("--ckpt-fully-parallel-load", checkpoint__fully_parallel_load=True),
    _s("--dist-ckpt-optim-fully-reshardable", checkpoint__dist_ckpt_optim_fully_reshardable=True),
    _s("--no-save-optim", checkpoint__save_optim=False),
    _s("--no-load-optim", checkpoint__load_optim=False),
    _s("--no-save-rng", checkpoint__save_rng=False),
    _s("--no-load-rng", checkpoint__load_rng=False),
    # -- logging
    _v("--log-interval", "logger.log_interval"),
    _v("--tensorboard-dir", "logger.tensorboard_dir"),
    _v("--tensorboard-log-interval", "logger.tensorboard_log_interval"),
    _v("--timing-log-level", "logger.timing_log_level"),
    _v("--timing-log-option", "logger.timing_log_option"),
    _v("--wandb-project", "logger.wandb_project"),
    _v("--wandb-exp-name", "logger.wandb_exp_name"),
    _v("--wandb-entity", "logger.wandb_entity"),
    _v("--logging-level", "logger.logging_level"),
    _s("--log-params-norm", logger__log_params_norm=True),
    _s("--log-throughput", logger__log_throughput=True),
    _s("--log-timers-to-tensorboard", logger__log_timers_to_tensorboard=True),
    _s("--log-validation-ppl-to-tensorboard", logger__log_validation_ppl_to_tensorboard=True),
    _s("--log-memory-to-tensorboard", logger__log_memory_to_tensorboard=True),
    _s("--log-world-size-to-tensorboard", logger__log_world_size_to_tensorboard=True),
    _s("--no-log-loss-scale-to-tensorboard", logger__log_loss_scale_to_tensorboard=False),
)

#: Megatron-LM flags with no Bridge 0.6.2 field, and why (listed in every translation, never dropped).
NO_BRIDGE_EQUIVALENT: Mapping[str, str] = {
    "--use-mcore-models": "Bridge always builds Megatron-Core models",
    "--transformer-impl": "the model provider picks the layer spec (model.transformer_layer_spec)",
    "--use-flash-attn": "set model.attention_backend=flash instead",
    "--max-position-embeddings": (
        "Bridge 0.6.2's GPTModelProvider has no max_position_embeddings; "
        "position tables follow model.seq_length"
    ),
    "--verify-integrity": "no Bridge equivalent (checkpoint integrity checks are Megatron-LM only)",
    **dict.fromkeys(
        ("--loss-scale", "--initial-loss-scale", "--min-loss-scale", "--loss-scale-window", "--hysteresis"),
        "the mixed_precision preset overwrites the loss-scale fields of optimizer/model after the overrides"
        " (no flat override reaches them)",
    ),
    "--grad-reduce-in-bf16": (
        "the bf16_mixed preset sets ddp.grad_reduce_in_fp32=true after the overrides (no flat override)"
    ),
}

#: Flags of multi-latent attention: fields of Megatron-Core's MLATransformerConfig, which a GPT provider
#: lacks.
MLA_FLAGS = (
    "--multi-latent-attention",
    "--q-lora-rank",
    "--kv-lora-rank",
    "--qk-head-dim",
    "--qk-pos-emb-head-dim",
    "--v-head-dim",
    "--rotary-scaling-factor",
    "--mscale",
    "--mscale-all-dim",
)


#: Rows whose resolved-config test cannot run here, and why (docs/translate.md's table shows it); every other
#: row is proven on both frameworks' own config code (tests/translate/test_resolved.py).
NOT_PROVEN: Mapping[str, str] = {
    **dict.fromkeys(
        MLA_FLAGS,
        "untranslated on the default recipe (its GPT provider has no MLA fields); an MLA model's recipe"
        " does not import without a GPU stack",
    ),
    "--moe-grouped-gemm": "Megatron-LM's validate_args asks the GPU about grouped GEMM (no GPU here)",
    "--moe-permute-fusion": (
        "both frameworks refuse it without Transformer Engine >= 2.1 (not installed here)"
    ),
}

#: Value flags Megatron-LM types as ``int`` / ``float`` (megatron/training/arguments.py); a value of another
#: type is refused instead of being passed on as a string.
INT_FLAGS: frozenset[str] = frozenset(
    [
        "--num-layers",
        "--hidden-size",
        "--ffn-hidden-size",
        "--num-attention-heads",
        "--num-query-groups",
        "--kv-channels",
        "--make-vocab-size-divisible-by",
        "--seq-length",
        "--tensor-model-parallel-size",
        "--pipeline-model-parallel-size",
        "--context-parallel-size",
        "--expert-model-parallel-size",
        "--expert-tensor-parallel-size",
        "--num-experts",
        "--moe-ffn-hidden-size",
        "--moe-router-topk",
        "--mtp-num-layers",
        "--ckpt-step",
        "--q-lora-rank",
        "--kv-lora-rank",
        "--qk-head-dim",
        "--qk-pos-emb-head-dim",
        "--v-head-dim",
        "--moe-shared-expert-intermediate-size",
        "--moe-router-group-topk",
        "--moe-router-num-groups",
        "--num-dataset-builder-threads",
        "--lr-wsd-decay-samples",
        "--logging-level",
        "--recompute-num-layers",
        "--micro-batch-size",
        "--global-batch-size",
        "--train-iters",
        "--train-samples",
        "--exit-interval",
        "--manual-gc-interval",
        "--empty-unused-memory-level",
        "--eval-iters",
        "--eval-interval",
        "--lr-decay-iters",
        "--lr-decay-samples",
        "--lr-warmup-iters",
        "--lr-warmup-samples",
        "--lr-wsd-decay-iters",
        "--num-workers",
        "--vocab-size",
        "--seed",
        "--num-layers-per-virtual-pipeline-stage",
        "--num-virtual-stages-per-pipeline-rank",
        "--distributed-timeout-minutes",
        "--save-interval",
        "--log-interval",
        "--tensorboard-log-interval",
        "--timing-log-level",
        "--rotary-base",
    ]
)
FLOAT_FLAGS: frozenset[str] = frozenset(
    [
        "--init-method-std",
        "--hidden-dropout",
        "--attention-dropout",
        "--rotary-percent",
        "--norm-epsilon",
        "--rotary-seq-len-interpolation-factor",
        "--moe-aux-loss-coeff",
        "--lr",
        "--rotary-scaling-factor",
        "--mscale",
        "--mscale-all-dim",
        "--moe-router-topk-scaling-factor",
        "--moe-router-bias-update-rate",
        "--mtp-loss-scaling-factor",
        "--decoupled-lr",
        "--decoupled-min-lr",
        "--min-lr",
        "--weight-decay",
        "--clip-grad",
        "--adam-beta1",
        "--adam-beta2",
        "--adam-eps",
        "--sgd-momentum",
        "--lr-warmup-fraction",
        "--lr-warmup-init",
        "--start-weight-decay",
        "--end-weight-decay",
        "--exit-duration-in-mins",
    ]
)

#: flag -> mapping, the lookup the translators use.
BY_FLAG: Mapping[str, FlagMapping] = {m.flag: m for m in FLAG_TABLE}
