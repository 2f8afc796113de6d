"""What each side *resolves*, beyond the one-key-per-flag table: couplings, conditions and defaults.

Megatron-LM's ``validate_args`` and Bridge's ``finalize()``/``validate()`` do not read a flag alone. The table
(:mod:`._table`) says which Bridge key a flag names; the rules here say what else must be written so that the
two resolved configs train alike (every rule is proven on both frameworks' own code, tests/translate):

* :data:`RULES`: functions of the whole flag set, run after the table (``--weight-decay`` is what the
  scheduler applies, ``--num-query-groups`` only counts with ``--group-query-attention``, ...);
* :data:`MLM_DEFAULTS`: what ``pretrain_gpt.py`` uses for a flag that is not given, written when the flags
  are the whole launch (``--model-config``, ``--full``) wherever the recipe holds another value;
  :data:`VANILLA_RECIPE` holds the values of Bridge 0.6.2's ``vanilla_gpt_pretrain_config`` (every other
  recipe gets every default written, as its values are not known here).

Worked example: ``--hidden-size 1024 --swiglu`` -> Megatron-LM sizes the FFN ``int(8 * 1024 / 3 / 64) * 64 =
2688``, Bridge's provider ``4 * 1024``: the rule writes ``model.ffn_hidden_size=2688``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bridgepack.translate._table import BF16_PRESET, BY_FLAG, MLA_FLAGS

#: Bridge's recipe run_recipe.py starts from when none is named: the one meant to mirror pretrain_gpt.py.
DEFAULT_RECIPE = "vanilla_gpt_pretrain_config"
#: Megatron-LM's weight decay without --weight-decay (arguments.py).
MLM_WEIGHT_DECAY = 0.01
#: ``pretrain_gpt.py``'s ``args_defaults``: the tokenizer without --tokenizer-type.
MLM_TOKENIZER = "GPT2BPETokenizer"
#: ``validate_args``: the split of a --data-path run without --split.
MLM_LEGACY_SPLIT = "969, 30, 1"


@dataclass
class Resolution:
    """The overrides being built for one flag set, and what a rule found it cannot write."""

    given: dict[str, Any]
    recipe: str = "vanilla_gpt_pretrain_config"
    overrides: dict[str, Any] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    untranslated: dict[str, str] = field(default_factory=dict)  # flag -> reason
    notes: list[str] = field(default_factory=list)

    def set(self, key: str, value: Any, because: str) -> None:
        self.overrides[key] = value
        self.origin[key] = because

    def drop(self, key: str) -> None:
        self.overrides.pop(key, None)
        self.origin.pop(key, None)

    def value(self, flag: str, default: Any = None) -> Any:
        return self.given.get(flag, default)


def swiglu_ffn_size(hidden_size: int) -> int:
    """Megatron-LM's FFN size for SwiGLU without --ffn-hidden-size (``validate_args``): 8h/3 rounded down to
    a multiple of 64, so the two gated projections hold about as many weights as a 4h MLP."""
    return int((4 * hidden_size * 2 / 3) / 64) * 64


def precision(given: Mapping[str, Any]) -> str:
    """``bf16``, ``fp16`` or ``fp32``: what the precision switches select (none: fp32)."""
    return "bf16" if "--bf16" in given else "fp16" if "--fp16" in given else "fp32"


def _weight_decay(r: Resolution) -> None:
    """Bridge's scheduler sets every parameter group's weight decay from scheduler.start/end_weight_decay each
    step (the recipes set 0.033); Megatron-LM's constant style takes them from --weight-decay."""
    if r.value("--weight-decay-incr-style", "constant") != "constant":
        return  # linear/cosine: Megatron-LM requires --start/--end-weight-decay, mapped one to one
    for flag in ("--start-weight-decay", "--end-weight-decay"):
        if flag in r.given:
            r.untranslated[flag] = (
                "Megatron-LM asserts it is unset with the constant weight-decay style; use --weight-decay"
            )
            r.drop(f"scheduler.{flag[2:].replace('-', '_')}")
    if "--weight-decay" in r.given:
        for key in ("scheduler.start_weight_decay", "scheduler.end_weight_decay"):
            r.set(key, float(r.given["--weight-decay"]), "--weight-decay")


def _query_groups(r: Resolution) -> None:
    """``--num-query-groups`` counts only with ``--group-query-attention`` (alone it means 1 group, MQA);
    Bridge has no switch: a set ``model.num_query_groups`` is grouped-query attention."""
    r.drop("model.num_query_groups")
    if "--group-query-attention" in r.given:
        r.set("model.num_query_groups", int(r.value("--num-query-groups", 1)), "--group-query-attention")
    elif "--num-query-groups" in r.given:
        r.notes.append(
            "--num-query-groups: ignored by Megatron-LM without --group-query-attention"
            " (multi-head attention)"
        )


def _swiglu_ffn(r: Resolution) -> None:
    if "--swiglu" not in r.given or "--ffn-hidden-size" in r.given:
        return
    if "--hidden-size" not in r.given:
        r.untranslated["--swiglu"] = (
            "Megatron-LM sizes the SwiGLU FFN from --hidden-size (int(8h/3/64)*64); give --hidden-size or"
            " --ffn-hidden-size"
        )
        return
    r.set("model.ffn_hidden_size", swiglu_ffn_size(int(r.given["--hidden-size"])), "--swiglu")


def _sequence_parallel(r: Resolution) -> None:
    """Megatron-LM turns sequence parallelism off when TP is 1; Megatron-Core refuses it with TP 1."""
    if "--sequence-parallel" in r.given and int(r.value("--tensor-model-parallel-size", 1)) == 1:
        r.drop("model.sequence_parallel")
        r.notes.append("--sequence-parallel: Megatron-LM turns it off with tensor parallel size 1")


def _fp16_nan_checks(r: Resolution) -> None:
    """With --fp16 and dynamic loss scaling Megatron-LM stops checking loss and gradients for NaN (they are
    the loss scaler's signal); Bridge keeps both checks on unless told."""
    if "--fp16" in r.given and not r.value("--loss-scale"):
        r.set("ddp.check_for_nan_in_grad", False, "--fp16")
        r.set("rerun_state_machine.check_for_nan_in_loss", False, "--fp16")


def _grad_reduce_precision(r: Resolution) -> None:
    """The precision preset overwrites ddp.grad_reduce_in_fp32 after the overrides (bf16_mixed: on, which is
    what Megatron-LM's --bf16 forces too; fp16_mixed: off)."""
    flag = "--accumulate-allreduce-grads-in-fp32"
    if flag not in r.given:
        return
    if precision(r.given) == "fp16":
        r.drop("ddp.grad_reduce_in_fp32")
        r.untranslated[flag] = (
            "the fp16_mixed preset sets ddp.grad_reduce_in_fp32=false after the overrides; no flat override"
            " keeps fp32 gradient reduction under fp16"
        )


def _schedule_kind(r: Resolution) -> None:
    """Flags that make Bridge assert on top of a recipe unless the recipe's own fields are cleared."""
    samples = any(f in r.given for f in ("--train-samples", "--lr-decay-samples", "--lr-warmup-samples"))
    if samples:
        r.set("train.train_iters", None, "--train-samples")
        r.set("scheduler.lr_decay_iters", None, "--train-samples")
    if (samples or "--lr-warmup-fraction" in r.given) and "--lr-warmup-iters" not in r.given:
        r.set("scheduler.lr_warmup_iters", 0, "--lr-warmup-fraction" if not samples else "--train-samples")
    if "--use-checkpoint-opt_param-scheduler" in r.given and "--override-opt_param-scheduler" not in r.given:
        r.set("scheduler.override_opt_param_scheduler", False, "--use-checkpoint-opt_param-scheduler")


def _virtual_pipeline(r: Resolution) -> None:
    """Megatron-LM's virtual pipeline size: ``--num-virtual-stages-per-pipeline-rank``, or the layers per
    stage / ``--num-layers-per-virtual-pipeline-stage``; a size of 1 is none (``None``), as in
    ``validate_args``."""
    stages = "--num-virtual-stages-per-pipeline-rank"
    flag = "--num-layers-per-virtual-pipeline-stage"
    if stages in r.given:
        size = int(r.given[stages])
        r.set("model.virtual_pipeline_model_parallel_size", size if size > 1 else None, stages)
    if flag not in r.given:
        return
    if "--num-layers" not in r.given:
        r.untranslated[flag] = "the virtual pipeline size is computed from --num-layers; give it"
        return
    layers = int(r.given["--num-layers"])
    layers += int("--account-for-embedding-in-pipeline-split" in r.given)
    layers += int("--account-for-loss-in-pipeline-split" in r.given)
    per_stage = layers // int(r.value("--pipeline-model-parallel-size", 1))
    size = per_stage // int(r.given[flag])
    r.set("model.virtual_pipeline_model_parallel_size", size if size > 1 else None, flag)


def _yarn(r: Resolution) -> None:
    """YaRN outside multi-latent attention: Bridge's GPT provider reads its own ``yarn_*`` fields."""
    if r.value("--position-embedding-type") != "yarn" or "--multi-latent-attention" in r.given:
        return
    for flag, key in (
        ("--rotary-scaling-factor", "rotary_scaling_factor"),
        ("--mscale", "mscale"),
        ("--mscale-all-dim", "mscale_all_dim"),
    ):
        if flag in r.given:
            r.drop(f"model.{key}")
            r.set(f"model.yarn_{key}", r.given[flag], flag)


def _async_save(r: Resolution) -> None:
    """Megatron-LM turns --async-save off for distributed checkpoints without --use-persistent-ckpt-worker."""
    torch_dist = r.value("--ckpt-format", "torch_dist") == "torch_dist"
    if "--async-save" in r.given and torch_dist and "--use-persistent-ckpt-worker" not in r.given:
        r.drop("checkpoint.async_save")
        r.notes.append("--async-save: Megatron-LM turns it off without --use-persistent-ckpt-worker")


def _cross_entropy_fusion(r: Resolution) -> None:
    """Megatron-LM fuses the cross-entropy loss only with ``--cross-entropy-loss-fusion``; the recipe's GPT
    provider fuses it by default, and Bridge refuses the fusion with deterministic mode (not deterministic)
    and with the ``te`` implementation (unstable): with either, the translation turns the fusion off, as
    Megatron-LM has it."""
    if "--cross-entropy-loss-fusion" in r.given:
        return
    for flag, value in (("--deterministic-mode", True), ("--cross-entropy-fusion-impl", "te")):
        if r.value(flag) == value:
            r.set("model.cross_entropy_loss_fusion", False, flag)


def _mla_on_gpt(r: Resolution) -> None:
    """Multi-latent attention needs an MLA model provider's recipe (e.g. a DeepSeek one): the default
    recipe's GPTModelProvider has no such fields, and run_recipe.py refuses keys a config lacks."""
    if r.recipe != DEFAULT_RECIPE or "--multi-latent-attention" not in r.given:
        return
    for flag in MLA_FLAGS:
        if flag in r.given:
            r.untranslated[flag] = (
                f"{DEFAULT_RECIPE}'s GPTModelProvider has no multi-latent-attention fields; start from an"
                " MLA model's recipe (--recipe)"
            )
            for key in BY_FLAG[flag].targets():
                r.drop(key)


#: Every rule, in the order it runs (after the table). Each names the Megatron-LM behaviour it mirrors.
RULES: tuple[Callable[[Resolution], None], ...] = (
    _weight_decay,
    _query_groups,
    _swiglu_ffn,
    _sequence_parallel,
    _fp16_nan_checks,
    _grad_reduce_precision,
    _schedule_kind,
    _virtual_pipeline,
    _yarn,
    _async_save,
    _cross_entropy_fusion,
    _mla_on_gpt,
)


#: What a :class:`Default`'s value function returns where Megatron-LM has no value to write.
SKIP = object()


@dataclass(frozen=True)
class Default:
    """A Megatron-LM default written on a full launch: ``key`` takes ``value`` unless one of ``unless``
    (flags, or keys already written) is there; ``value`` may be a function of the given flags."""

    key: str
    value: Any
    unless: tuple[str, ...] = ()

    def resolve(self, given: Mapping[str, Any]) -> Any:
        return self.value(given) if callable(self.value) else self.value


def _ffn(given: Mapping[str, Any]) -> Any:
    hidden = int(given["--hidden-size"])
    return swiglu_ffn_size(hidden) if "--swiglu" in given else 4 * hidden


def _split(given: Mapping[str, Any]) -> Any:
    return MLM_LEGACY_SPLIT if "--data-path" in given else None


def _cp_comm_type(given: Mapping[str, Any]) -> Any:
    """Megatron-LM's --cp-comm-type default (p2p); Bridge's provider leaves it unset."""
    return "p2p" if int(given.get("--context-parallel-size", 1)) > 1 else SKIP


def _wsd_style(given: Mapping[str, Any]) -> Any:
    """Megatron-LM's --lr-wsd-decay-style default (exponential); Bridge's scheduler says minus_sqrt."""
    return "exponential" if given.get("--lr-decay-style") == "WSD" else SKIP


_WD = MLM_WEIGHT_DECAY

#: Megatron-LM's value for what a full launch leaves out (``arguments.py``, ``pretrain_gpt.py``), as Bridge
#: overrides. A value of ``None`` is written ``null``.
MLM_DEFAULTS: tuple[Default, ...] = (
    Default("mixed_precision", None, ("--bf16", "--fp16")),  # fp32: no preset
    Default("model.ffn_hidden_size", _ffn, ("--ffn-hidden-size", "model.ffn_hidden_size")),
    Default("model.num_query_groups", None, ("--group-query-attention",)),
    Default("model.gated_linear_unit", False, ("--swiglu",)),
    Default("model.activation_func", "gelu", ("--swiglu", "--squared-relu")),
    Default("model.normalization", "LayerNorm", ("--normalization",)),
    Default("model.position_embedding_type", "learned_absolute", ("--position-embedding-type",)),
    Default("model.add_bias_linear", True, ("--disable-bias-linear",)),
    Default("model.share_embeddings_and_output_weights", True, ("--untie-embeddings-and-output-weights",)),
    Default("model.hidden_dropout", 0.1, ("--hidden-dropout",)),
    Default("model.attention_dropout", 0.1, ("--attention-dropout",)),
    Default("model.init_method_std", 0.02, ("--init-method-std",)),
    Default("model.sequence_parallel", False, ("model.sequence_parallel",)),
    Default("model.cross_entropy_loss_fusion", False, ("--cross-entropy-loss-fusion",)),
    Default("model.cp_comm_type", _cp_comm_type, ("--cp-comm-type",)),
    Default("scheduler.lr_wsd_decay_style", _wsd_style, ("--lr-wsd-decay-style",)),
    Default("optimizer.bf16", False, ("--bf16", "--fp16")),  # the recipe's optimizer is set up for bf16
    Default("ddp.grad_reduce_in_fp32", False, ("--bf16", "--fp16", "--accumulate-allreduce-grads-in-fp32")),
    Default("optimizer.min_lr", 0.0, ("--min-lr",)),
    Default("optimizer.adam_beta1", 0.9, ("--adam-beta1",)),
    Default("optimizer.adam_beta2", 0.999, ("--adam-beta2",)),
    Default("optimizer.adam_eps", 1e-08, ("--adam-eps",)),
    Default("optimizer.clip_grad", 1.0, ("--clip-grad",)),
    Default("optimizer.weight_decay", _WD, ("--weight-decay",)),
    Default("optimizer.use_distributed_optimizer", False, ("--use-distributed-optimizer",)),
    Default("ddp.use_distributed_optimizer", False, ("--use-distributed-optimizer",)),
    Default("scheduler.lr_decay_style", "linear", ("--lr-decay-style",)),
    Default("scheduler.lr_warmup_iters", 0, ("--lr-warmup-iters", "scheduler.lr_warmup_iters")),
    Default("scheduler.lr_warmup_init", 0.0, ("--lr-warmup-init",)),
    Default("scheduler.start_weight_decay", _WD, ("--weight-decay", "--start-weight-decay")),
    Default("scheduler.end_weight_decay", _WD, ("--weight-decay", "--end-weight-decay")),
    Default("scheduler.weight_decay_incr_style", "constant", ("--weight-decay-incr-style",)),
    Default("scheduler.override_opt_param_scheduler", False, ("scheduler.override_opt_param_scheduler",)),
    Default("train.micro_batch_size", 1, ("--micro-batch-size",)),
    Default("validation.eval_iters", 100, ("--eval-iters",)),
    Default("validation.eval_interval", 1000, ("--eval-interval",)),
    Default("logger.log_interval", 100, ("--log-interval",)),
    Default("dataset.split", _split, ("--split",)),
    Default("tokenizer.tokenizer_type", MLM_TOKENIZER, ("--tokenizer-type",)),
    Default("tokenizer.vocab_size", None, ("--vocab-size",)),
    Default("checkpoint.save", None, ("--save",)),
    Default("checkpoint.save_interval", None, ("--save-interval",)),
    Default("logger.tensorboard_dir", None, ("--tensorboard-dir",)),
)

#: Bridge 0.6.2's ``vanilla_gpt_pretrain_config`` (``recipes/gpt/h100/vanilla_gpt.py``, its optimizer from
#: ``recipes/utils/optimizer_utils.py``) for the keys :data:`MLM_DEFAULTS` writes: where the recipe already
#: holds Megatron-LM's value, nothing is written.
VANILLA_RECIPE: Mapping[str, Any] = {
    "mixed_precision": BF16_PRESET,
    "model.num_query_groups": None,
    "model.gated_linear_unit": False,
    "model.normalization": "LayerNorm",
    "model.position_embedding_type": "learned_absolute",
    "model.add_bias_linear": True,
    "model.share_embeddings_and_output_weights": True,
    "model.hidden_dropout": 0.1,
    "model.attention_dropout": 0.1,
    "model.init_method_std": 0.02,
    "model.sequence_parallel": False,
    "model.cross_entropy_loss_fusion": True,
    "optimizer.bf16": True,
    "ddp.grad_reduce_in_fp32": True,
    "optimizer.min_lr": 3e-05,
    "optimizer.adam_beta1": 0.9,
    "optimizer.adam_beta2": 0.95,
    "optimizer.adam_eps": 1e-08,
    "optimizer.clip_grad": 1.0,
    "optimizer.weight_decay": 0.1,
    "optimizer.use_distributed_optimizer": True,
    "ddp.use_distributed_optimizer": False,
    "scheduler.lr_decay_style": "cosine",
    "scheduler.lr_warmup_iters": 500,
    "scheduler.lr_warmup_init": 0.0,
    "scheduler.start_weight_decay": 0.033,
    "scheduler.end_weight_decay": 0.033,
    "scheduler.weight_decay_incr_style": "constant",
    "scheduler.override_opt_param_scheduler": True,
    "train.micro_batch_size": 2,
    "validation.eval_iters": 32,
    "validation.eval_interval": 500,
    "logger.log_interval": 10,
    "dataset.split": "9999,8,2",
    "tokenizer.tokenizer_type": "NullTokenizer",
    "tokenizer.vocab_size": 32000,
}
#: Keys whose recipe value is a path under the working directory (``nemo_experiments/default/...``): never
#: Megatron-LM's, always written on a full launch (Bridge resumes from a checkpoint it finds there).
RECIPE_OUTPUT_KEYS = ("checkpoint.save", "logger.tensorboard_dir")
#: Keys a full launch must give, because Megatron-LM has no default for them: flag -> why.
MLM_REQUIRED: Mapping[str, str] = {
    "--global-batch-size": (
        "Megatron-LM's default is micro batch x data-parallel size, which needs the world size"
    ),
    "--lr": "Megatron-LM has no default learning rate",
}


def full_launch_defaults(r: Resolution, recipe: str) -> None:
    """Write Megatron-LM's default wherever the flags leave a knob out and the recipe may hold another
    value."""
    known = VANILLA_RECIPE if recipe == DEFAULT_RECIPE else {}
    for default in MLM_DEFAULTS:
        if any(name in r.given or name in r.overrides for name in (*default.unless, default.key)):
            continue
        if default.key == "model.ffn_hidden_size" and "--hidden-size" not in r.given:
            continue
        value = default.resolve(r.given)
        if value is SKIP:
            continue
        if default.key in known and known[default.key] == value and default.key not in RECIPE_OUTPUT_KEYS:
            continue
        r.set(default.key, value, "Megatron-LM default")
    if not any(f in r.given for f in ("--train-iters", "--train-samples")):
        r.untranslated["--train-iters"] = "not given: Megatron-LM needs --train-iters or --train-samples"
    for flag, why in MLM_REQUIRED.items():
        if flag not in r.given:
            r.untranslated[flag] = f"not given: {why}"
