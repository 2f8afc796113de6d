"""Megatron-LM flags for a plan's Bridge overrides, and back: the only place a plan turns keys into flags.

INTERIM: ``seqpack.translate`` (the doctor branch) owns the one MLM flag <-> Bridge override table (spec §12).
Until it is merged here, this module carries the rows the correlation plan needs, behind the same two calls
(:func:`bridge_to_mlm`, :func:`mlm_to_bridge`); switching is replacing this module's body by those imports.
"""

from __future__ import annotations

from typing import Any

from seqpack.correlate._values import format_value, parse_value
from seqpack.errors import DataError

# Bridge key -> MLM flag; a value of True/False for a switch flag means "flag present"/"flag absent".
_VALUE_FLAGS: dict[str, str] = {
    "model.num_layers": "--num-layers",
    "model.hidden_size": "--hidden-size",
    "model.num_attention_heads": "--num-attention-heads",
    "model.ffn_hidden_size": "--ffn-hidden-size",
    "dataset.seq_length": "--seq-length",
    "model.seq_length": "--seq-length",
    "tokenizer.tokenizer_type": "--tokenizer-type",
    "tokenizer.vocab_size": "--vocab-size",
    "model.make_vocab_size_divisible_by": "--make-vocab-size-divisible-by",
    "model.init_method_std": "--init-method-std",
    "train.micro_batch_size": "--micro-batch-size",
    "train.global_batch_size": "--global-batch-size",
    "train.train_iters": "--train-iters",
    "validation.eval_iters": "--eval-iters",
    "validation.eval_interval": "--eval-interval",
    "logger.log_interval": "--log-interval",
    "logger.tensorboard_dir": "--tensorboard-dir",
    "optimizer.lr": "--lr",
    "optimizer.min_lr": "--min-lr",
    "optimizer.adam_beta1": "--adam-beta1",
    "optimizer.adam_beta2": "--adam-beta2",
    "optimizer.adam_eps": "--adam-eps",
    "optimizer.weight_decay": "--weight-decay",
    "optimizer.clip_grad": "--clip-grad",
    "scheduler.lr_decay_style": "--lr-decay-style",
    "scheduler.lr_warmup_iters": "--lr-warmup-iters",
    "scheduler.lr_decay_iters": "--lr-decay-iters",
    "scheduler.lr_warmup_init": "--lr-warmup-init",
    "scheduler.start_weight_decay": "--start-weight-decay",
    "scheduler.end_weight_decay": "--end-weight-decay",
    "scheduler.weight_decay_incr_style": "--weight-decay-incr-style",
    "rng.seed": "--seed",
    "dataset.random_seed": "--seed",
    "model.tensor_model_parallel_size": "--tensor-model-parallel-size",
    "model.pipeline_model_parallel_size": "--pipeline-model-parallel-size",
    "model.context_parallel_size": "--context-parallel-size",
    "checkpoint.save": "--save",
    "checkpoint.save_interval": "--save-interval",
}
_SWITCH_FLAGS: dict[str, str] = {
    "model.sequence_parallel": "--sequence-parallel",
    "dataset.mock": "--mock-data",
    "ddp.grad_reduce_in_fp32": "--accumulate-allreduce-grads-in-fp32",
    "ddp.use_distributed_optimizer": "--use-distributed-optimizer",
}
_PRECISION_FLAGS: dict[str, str] = {"bf16_mixed": "--bf16", "fp16_mixed": "--fp16"}
#: MLM flags with no Bridge override (spec §12); translating them drops nothing silently: they are listed.
NO_BRIDGE_EQUIVALENT = ("--use-mcore-models", "--transformer-impl", "--use-flash-attn")


def bridge_to_mlm(overrides: dict[str, Any]) -> list[str]:
    """MLM argv for Bridge overrides; a key with no flag is a :class:`DataError` (never dropped)."""
    argv: list[str] = []
    seen: dict[str, str] = {}
    for key, value in overrides.items():
        if key == "mixed_precision":
            flag = _PRECISION_FLAGS.get(value) if value is not None else None
            if value is not None and flag is None:
                raise DataError(f"mixed_precision={value}: no Megatron-LM flag for this precision")
            argv += [flag] if flag else []
            continue
        if key in _SWITCH_FLAGS:
            argv += [_SWITCH_FLAGS[key]] if value else []
            continue
        if key not in _VALUE_FLAGS:
            raise DataError(f"{key}={format_value(value)}: no Megatron-LM flag for this Bridge key")
        flag, text = _VALUE_FLAGS[key], format_value(value)
        if flag in seen:
            if seen[flag] != text:
                raise DataError(
                    f"{key}={text}: {flag} is already {seen[flag]} (one MLM flag, two Bridge keys)"
                )
            continue
        seen[flag] = text
        argv += [flag, text]
    return argv


def mlm_to_bridge(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Bridge overrides for MLM argv, plus the flags with no Bridge key (kept, in order, with their value)."""
    by_flag: dict[str, list[str]] = {}
    for key, flag in _VALUE_FLAGS.items():
        by_flag.setdefault(flag, []).append(key)
    switches = {flag: key for key, flag in _SWITCH_FLAGS.items()}
    precision = {flag: value for value, flag in _PRECISION_FLAGS.items()}
    overrides: dict[str, Any] = {}
    untranslated: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        flag, _, inline = token.partition("=")
        if flag in switches:
            overrides[switches[flag]] = True
        elif flag in precision:
            overrides["mixed_precision"] = precision[flag]
        elif flag in by_flag:
            if inline:
                text = inline
            elif i + 1 < len(argv):
                i += 1
                text = argv[i]
            else:
                raise DataError(f"{flag}: expected a value after the flag, found the end of the command")
            for key in by_flag[flag]:
                overrides[key] = parse_value(text)
        else:
            has_value = not inline and i + 1 < len(argv) and not argv[i + 1].startswith("--")
            untranslated.append(f"{token} {argv[i + 1]}" if has_value else token)
            i += 1 if has_value else 0
        i += 1
    return overrides, untranslated
