"""The knobs a matched pair must set on both sides, with what each launcher does when a knob is left out.

Each :class:`Knob` ties one spec field to the Bridge override key(s) that carry it; the Megatron-LM flags are
*not* listed here: they come from the one translation table (:mod:`bridgepack.translate`), so the two
commands of a plan cannot drift apart. ``mlm_default`` is what ``pretrain_gpt.py`` uses without the flag,
``recipe_default`` what ``vanilla_gpt_pretrain_config`` (Megatron-Bridge 0.6.2, ``recipes/gpt/vanilla_gpt.py``
and ``recipes/utils/optimizer_utils.py``) sets. Defaults may depend on the other knobs of the
same side: a :class:`Derived` default is computed from the other knobs of that side (``lr_decay_iters``
defaults to ``train_iters`` on both, ``ffn_hidden_size`` to 4 x ``hidden_size``).

Bridge 0.6.2's ``GPTModelProvider`` has no ``max_position_embeddings``: it sizes the position embeddings by
``seq_length``. So the MLM side gets ``--max-position-embeddings`` equal to the sequence length
(:attr:`Knob.mlm_only`) and the Bridge side gets no key for it (run_recipe refuses a key the config lacks).

The defaults are why the skill's "matched" pair is not matched (bridge-format §12, correlation trap):

=====================  ================  =====================================
knob                   MLM default       vanilla_gpt_pretrain_config
=====================  ================  =====================================
lr decay style         linear            cosine
warmup iters           0                 500 (the skill sets 1: step 1 at lr 0)
Adam beta2             0.999             0.95
weight decay           0.01              0.033 (scheduler start/end)
grad reduce in fp32    off               on
distributed optimizer  off               on (optimizer.use_distributed_optimizer)
=====================  ================  =====================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bridgepack.correlate._spec import CorrelationSpec

#: ``DEFAULT_NULL_TOKENIZER_VOCAB_SIZE`` of Bridge's ``recipes/utils/tokenizer_utils.py``.
RECIPE_NULL_TOKENIZER_VOCAB = 32000
#: Where ``vanilla_gpt_pretrain_config`` saves and, on a second run, silently resumes from (bridge-format
#: §12).
RECIPE_OUTPUT_DIR = "nemo_experiments/default"
#: Marks a knob that a launcher requires on its command line (no default to fall back to).
NO_DEFAULT = None


@dataclass(frozen=True)
class Derived:
    """A default computed from the other knobs of the same side, e.g. 4 x hidden size."""

    text: str
    compute: Callable[[dict[str, Any]], Any]

    def __call__(self, values: dict[str, Any]) -> Any:
        try:
            return self.compute(values)
        except (KeyError, TypeError):
            return None


def resolve(default: Any, values: dict[str, Any]) -> Any:
    """A side's default for a knob, given the values of the knobs before it on that side."""
    return default(values) if isinstance(default, Derived) else default


_TRAIN_ITERS = Derived("train iters", lambda v: v["train iters"])
_FOUR_HIDDEN = Derived("4 x hidden size", lambda v: 4 * v["hidden size"])
# Megatron-LM's validate_args turns fp32 gradient accumulation/all-reduce on whenever --bf16 is given.
_FP32_WITH_BF16 = Derived("on with --bf16", lambda v: v["precision"] == "bf16")


@dataclass(frozen=True)
class Knob:
    """One aligned setting. ``field`` is the spec field (or ``None`` for a value the plan fixes itself)."""

    name: str
    bridge: tuple[str, ...]
    mlm_default: Any
    recipe_default: Any
    field: str | None = None
    fixed: Any = None
    note: str = ""
    #: ``(spec value, Bridge value)`` pairs where the two vocabularies differ (precision names).
    spellings: tuple[tuple[Any, Any], ...] = ()
    #: ``(spec value, one Bridge value per key)`` for a knob whose keys take different values (SwiGLU).
    per_key: tuple[tuple[Any, tuple[Any, ...]], ...] = ()
    #: MLM flags that take the same value and have no Bridge key of their own.
    mlm_only: tuple[str, ...] = ()

    def value(self, spec: CorrelationSpec) -> Any:
        """The value the plan sets on both sides, in the spec's vocabulary."""
        return spec[self.field] if self.field is not None else self.fixed

    def to_bridge(self, value: Any) -> Any:
        """The Bridge spelling of a spec value (``bf16`` -> ``bf16_mixed``)."""
        return dict(self.spellings).get(value, value)

    def bridge_values(self, value: Any) -> dict[str, Any]:
        """Every Bridge key of this knob with its value for the spec value ``value``."""
        if self.per_key:
            return dict(zip(self.bridge, dict(self.per_key)[value], strict=True))
        return {key: self.to_bridge(value) for key in self.bridge}

    def from_bridge(self, value: Any) -> Any:
        """The spec spelling of a Bridge value (``bf16_mixed`` -> ``bf16``)."""
        return {bridge: spec for spec, bridge in self.spellings}.get(value, value)


def _k(name: str, field: str, bridge: str | tuple[str, ...], mlm: Any, recipe: Any, note: str = "") -> Knob:
    keys = (bridge,) if isinstance(bridge, str) else bridge
    return Knob(name, keys, mlm, recipe, field=field, note=note)


#: Bridge ``mixed_precision`` values for the spec's ``precision.dtype`` (``null``: plain fp32).
PRECISION_SPELLINGS = (("bf16", "bf16_mixed"), ("fp16", "fp16_mixed"), ("fp32", None))


#: Every knob, in the order the plan writes them.
KNOBS: tuple[Knob, ...] = (
    _k("layers", "model.num_layers", "model.num_layers", NO_DEFAULT, NO_DEFAULT),
    _k("hidden size", "model.hidden_size", "model.hidden_size", NO_DEFAULT, NO_DEFAULT),
    _k("attention heads", "model.num_attention_heads", "model.num_attention_heads", NO_DEFAULT, NO_DEFAULT),
    _k("ffn hidden size", "model.ffn_hidden_size", "model.ffn_hidden_size", _FOUR_HIDDEN, _FOUR_HIDDEN),
    Knob(
        "seq length",
        ("dataset.seq_length", "model.seq_length"),
        NO_DEFAULT,
        1024,
        field="model.seq_length",
        note="Bridge has it twice and sizes position embeddings by it; MLM needs --max-position-embeddings",
        mlm_only=("--max-position-embeddings",),
    ),
    Knob("tokenizer", ("tokenizer.tokenizer_type",), NO_DEFAULT, "NullTokenizer", fixed="NullTokenizer"),
    _k("vocab size", "model.vocab_size", "tokenizer.vocab_size", NO_DEFAULT, RECIPE_NULL_TOKENIZER_VOCAB),
    _k(
        "vocab padding multiple",
        "model.make_vocab_size_divisible_by",
        "model.make_vocab_size_divisible_by",
        128,
        128,
    ),
    _k("init std", "model.init_method_std", "model.init_method_std", 0.02, 0.02),
    _k("normalization", "model.normalization", "model.normalization", "LayerNorm", "LayerNorm"),
    _k(
        "position embedding",
        "model.position_embedding_type",
        "model.position_embedding_type",
        "learned_absolute",
        "learned_absolute",
    ),
    _k("rotary base", "model.rotary_base", "model.rotary_base", 10000, 10000, "used with rope only"),
    Knob(
        "SwiGLU",
        ("model.gated_linear_unit", "model.activation_func"),
        False,
        False,
        field="model.swiglu",
        note="one MLM switch, two Bridge fields",
        per_key=((True, (True, "silu")), (False, (False, "gelu"))),
    ),
    _k("bias in linear layers", "model.add_bias_linear", "model.add_bias_linear", True, True),
    Knob(
        "untied embeddings",
        ("model.share_embeddings_and_output_weights",),
        False,
        False,
        field="model.untie_embeddings",
        spellings=((True, False), (False, True)),
    ),
    _k("hidden dropout", "model.hidden_dropout", "model.hidden_dropout", 0.1, 0.1),
    _k("attention dropout", "model.attention_dropout", "model.attention_dropout", 0.1, 0.1),
    _k("micro batch size", "train.micro_batch_size", "train.micro_batch_size", 1, 2),
    _k("global batch size", "train.global_batch_size", "train.global_batch_size", NO_DEFAULT, 32),
    _k("train iters", "train.train_iters", "train.train_iters", NO_DEFAULT, 300000),
    _k("eval iters", "train.eval_iters", "validation.eval_iters", 100, 32),
    _k("eval interval", "train.eval_interval", "validation.eval_interval", 1000, 500),
    _k("log interval", "train.log_interval", "logger.log_interval", 100, 10, "1 gives a loss for every step"),
    _k("lr", "lr.lr", "optimizer.lr", NO_DEFAULT, 3e-4),
    _k("min lr", "lr.min_lr", "optimizer.min_lr", 0.0, 3e-5),
    _k("lr decay style", "lr.decay_style", "scheduler.lr_decay_style", "linear", "cosine"),
    _k(
        "lr warmup iters",
        "lr.warmup_iters",
        "scheduler.lr_warmup_iters",
        0,
        500,
        "warmup from lr_warmup_init: with warmup 1 the first step runs at lr 0",
    ),
    _k("lr decay iters", "lr.decay_iters", "scheduler.lr_decay_iters", _TRAIN_ITERS, _TRAIN_ITERS),
    _k("lr warmup init", "lr.warmup_init", "scheduler.lr_warmup_init", 0.0, 0.0),
    _k("Adam beta1", "optimizer.adam_beta1", "optimizer.adam_beta1", 0.9, 0.9),
    _k("Adam beta2", "optimizer.adam_beta2", "optimizer.adam_beta2", 0.999, 0.95),
    _k("Adam eps", "optimizer.adam_eps", "optimizer.adam_eps", 1e-8, 1e-8),
    _k(
        "weight decay",
        "optimizer.weight_decay",
        ("scheduler.start_weight_decay", "scheduler.end_weight_decay", "optimizer.weight_decay"),
        0.01,
        0.033,
        "Bridge's scheduler start/end weight decay override optimizer.weight_decay",
    ),
    Knob(
        "weight decay schedule",
        ("scheduler.weight_decay_incr_style",),
        "constant",
        "constant",
        fixed="constant",
    ),
    _k("grad clip", "optimizer.clip_grad", "optimizer.clip_grad", 1.0, 1.0),
    _k(
        "seed",
        "seed.init",
        ("rng.seed", "dataset.random_seed"),
        1234,
        1234,
        "MLM seeds init and the mock data with --seed; Bridge has rng.seed and dataset.random_seed",
    ),
    _k("tensor parallel", "parallel.tp", "model.tensor_model_parallel_size", 1, 1),
    _k("pipeline parallel", "parallel.pp", "model.pipeline_model_parallel_size", 1, 1),
    _k("context parallel", "parallel.cp", "model.context_parallel_size", 1, 1),
    _k("sequence parallel", "parallel.sp", "model.sequence_parallel", False, False),
    _k("mock data", "data.mock", "dataset.mock", False, True, "the recipe has no blend, hence mock data"),
    Knob(
        "precision",
        ("mixed_precision",),
        "fp32",
        "bf16",
        field="precision.dtype",
        spellings=PRECISION_SPELLINGS,
    ),
    _k(
        "grad reduce in fp32",
        "precision.grad_reduce_in_fp32",
        "ddp.grad_reduce_in_fp32",
        _FP32_WITH_BF16,
        True,
        "bf16 gradient all-reduce rounds differently from fp32",
    ),
    Knob(
        "distributed optimizer",
        ("ddp.use_distributed_optimizer", "optimizer.use_distributed_optimizer"),
        False,
        True,
        fixed=False,
        note="Bridge uses it when either field is true; the recipe sets optimizer.use_distributed_optimizer",
    ),
)


def effective(knob: Knob, settings: dict[str, Any], default: Any, resolved: dict[str, Any]) -> Any:
    """A knob's value on one side (spec spelling): its first Bridge key that is set, else the default."""
    for key in knob.bridge:
        if key in settings:
            return knob.from_bridge(settings[key])
    return resolve(default, resolved)


def spec_overrides(spec: CorrelationSpec) -> dict[str, Any]:
    """Every knob of ``spec`` as Bridge overrides (both sides' output folders excepted), in knob order."""
    return {key: value for knob in KNOBS for key, value in knob.bridge_values(knob.value(spec)).items()}
