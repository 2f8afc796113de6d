"""The correlation spec: one YAML file that fixes every knob of a matched Megatron-LM vs Bridge pair.

A spec is read with ``yaml.safe_load`` and checked field by field against :data:`SCHEMA`, so a typo or a value
of the wrong type stops the plan with one line naming the file and the field::

    correlate.yaml: field 'train.micro_batch_size': expected a positive integer, found 'four'

Fields left out take the default in :data:`SCHEMA`. The optimizer and schedule defaults are Megatron-LM's
(``pretrain_gpt.py`` without flags), because the usual question is "does Bridge train *my MLM run* the
same way?"; the plan then writes every one of them explicitly on *both* sides (bridge-format §12, correlation
trap).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bridgepack._yaml import load_yaml
from bridgepack.errors import DataError, where

Check = Callable[[Any], bool]

#: Learning-rate decay styles both launchers accept (MLM ``--lr-decay-style`` choices).
DECAY_STYLES = ("constant", "linear", "cosine", "inverse-square-root", "WSD")
#: Precisions the plan can express on both sides: MLM ``--bf16``/``--fp16``/none, Bridge ``mixed_precision``.
PRECISIONS = ("bf16", "fp16", "fp32")
NORMALIZATIONS = ("LayerNorm", "RMSNorm")
#: Position embeddings both launchers build for a GPT model (``yarn`` needs more knobs than the plan sets).
POSITION_EMBEDDINGS = ("learned_absolute", "rope")


@dataclass(frozen=True)
class Field:
    """One spec field: what it must be (``kind`` is the phrase used in error messages) and its default.

    ``default`` may name another field (``"=model.seq_length"``) whose value it copies, or be ``REQUIRED``.
    """

    kind: str
    check: Check
    default: Any


REQUIRED = object()

#: ``3e-4`` without a dot: YAML 1.1 (PyYAML) reads it as a string, people mean the number.
_YAML11_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+")


def _int(low: int) -> Check:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _float(low: float, high: float = math.inf, *, open_low: bool = False, open_high: bool = False) -> Check:
    def check(v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return False
        above = v > low if open_low else v >= low
        below = v < high if open_high else v <= high
        return above and below

    return check


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _choice(options: tuple[str, ...]) -> Check:
    return lambda v: isinstance(v, str) and v in options


def _is_str(v: Any) -> bool:
    return isinstance(v, str) and bool(v.strip())


POS_INT = ("a positive integer", _int(1))
NONNEG_INT = ("a non-negative integer", _int(0))

#: Every field a spec may hold, by dotted name, in the order the plan lists them.
SCHEMA: dict[str, Field] = {
    "model.num_layers": Field(*POS_INT, REQUIRED),
    "model.hidden_size": Field(*POS_INT, REQUIRED),
    "model.num_attention_heads": Field(*POS_INT, REQUIRED),
    "model.ffn_hidden_size": Field(*POS_INT, REQUIRED),
    "model.seq_length": Field(*POS_INT, REQUIRED),
    "model.vocab_size": Field(*POS_INT, REQUIRED),
    "model.make_vocab_size_divisible_by": Field(*POS_INT, 128),
    "model.init_method_std": Field("a positive number", _float(0.0, open_low=True), 0.02),
    "model.normalization": Field(f"one of {', '.join(NORMALIZATIONS)}", _choice(NORMALIZATIONS), "LayerNorm"),
    "model.position_embedding_type": Field(
        f"one of {', '.join(POSITION_EMBEDDINGS)}", _choice(POSITION_EMBEDDINGS), "learned_absolute"
    ),
    "model.rotary_base": Field(*POS_INT, 10000),
    "model.swiglu": Field("true or false", _is_bool, False),
    "model.add_bias_linear": Field("true or false", _is_bool, True),
    "model.untie_embeddings": Field("true or false", _is_bool, False),
    "model.hidden_dropout": Field("a number in [0, 1)", _float(0.0, 1.0, open_high=True), 0.1),
    "model.attention_dropout": Field("a number in [0, 1)", _float(0.0, 1.0, open_high=True), 0.1),
    "train.micro_batch_size": Field(*POS_INT, REQUIRED),
    "train.global_batch_size": Field(*POS_INT, REQUIRED),
    "train.train_iters": Field(*POS_INT, REQUIRED),
    "train.eval_iters": Field(*NONNEG_INT, 2),
    "train.eval_interval": Field(*POS_INT, "=train.train_iters"),
    "train.log_interval": Field(*POS_INT, 1),
    "lr.lr": Field("a positive number", _float(0.0, open_low=True), REQUIRED),
    "lr.min_lr": Field("a non-negative number", _float(0.0), 0.0),
    "lr.decay_style": Field(f"one of {', '.join(DECAY_STYLES)}", _choice(DECAY_STYLES), "linear"),
    "lr.warmup_iters": Field(*NONNEG_INT, 0),
    "lr.decay_iters": Field(*POS_INT, "=train.train_iters"),
    "lr.warmup_init": Field("a non-negative number", _float(0.0), 0.0),
    "optimizer.adam_beta1": Field("a number in [0, 1)", _float(0.0, 1.0, open_high=True), 0.9),
    "optimizer.adam_beta2": Field("a number in [0, 1)", _float(0.0, 1.0, open_high=True), 0.999),
    "optimizer.adam_eps": Field("a positive number", _float(0.0, open_low=True), 1e-8),
    "optimizer.weight_decay": Field("a non-negative number", _float(0.0), 0.01),
    "optimizer.clip_grad": Field("a non-negative number", _float(0.0), 1.0),
    "seed.init": Field(*NONNEG_INT, 1234),
    "seed.data": Field(*NONNEG_INT, "=seed.init"),
    "parallel.tp": Field(*POS_INT, 1),
    "parallel.pp": Field(*POS_INT, 1),
    "parallel.cp": Field(*POS_INT, 1),
    "parallel.sp": Field("true or false", _is_bool, False),
    "parallel.nproc_per_node": Field(*POS_INT, None),
    "data.mock": Field("true or false", _is_bool, True),
    "precision.dtype": Field(f"one of {', '.join(PRECISIONS)}", _choice(PRECISIONS), "bf16"),
    "precision.grad_reduce_in_fp32": Field("true or false", _is_bool, True),
    "launch.launcher": Field("a command", _is_str, "python -m torch.distributed.run"),
    "launch.mlm_script": Field("a path", _is_str, "3rdparty/Megatron-LM/pretrain_gpt.py"),
    "launch.mlm_pythonpath": Field("a path", _is_str, "3rdparty/Megatron-LM"),
    "launch.bridge_script": Field("a path", _is_str, "scripts/training/run_recipe.py"),
    "launch.recipe": Field("a recipe name", _is_str, "vanilla_gpt_pretrain_config"),
}


@dataclass(frozen=True)
class CorrelationSpec:
    """A checked spec: every :data:`SCHEMA` field has a value of the right type; ``source`` names the file."""

    values: Mapping[str, Any]
    source: str

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    @property
    def world_size(self) -> int:
        """Processes per run: ``parallel.nproc_per_node``, or TP x PP x CP when it is not given."""
        nproc = self.values["parallel.nproc_per_node"]
        if nproc is None:
            return int(self["parallel.tp"] * self["parallel.pp"] * self["parallel.cp"])
        return int(nproc)


def _flatten(doc: Mapping[str, Any], source: str) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for section, body in doc.items():
        if not isinstance(body, Mapping):
            raise DataError(
                f"{where(source, field=str(section))}: expected a mapping of fields, found {body!r}"
            )
        for key, value in body.items():
            flat[f"{section}.{key}"] = value
    return flat


def parse_spec(doc: Any, source: str | os.PathLike[str] = "<spec>") -> CorrelationSpec:
    """Check a loaded spec document (nested mappings) and fill in defaults."""
    name = os.fspath(source)
    if not isinstance(doc, Mapping):
        raise DataError(f"{name}: expected a mapping of sections (model:, train:, lr:, ...), found {doc!r}")
    given = _flatten(doc, name)
    unknown = sorted(set(given) - set(SCHEMA))
    if unknown:
        raise DataError(f"{where(name, field=unknown[0])}: unknown field (known: {', '.join(SCHEMA)})")
    values: dict[str, Any] = {}
    for key, field in SCHEMA.items():
        if key in given:
            value = given[key]
            if "number" in field.kind and isinstance(value, str) and _YAML11_FLOAT.fullmatch(value.strip()):
                value = float(value)
            if not field.check(value):
                raise DataError(f"{where(name, field=key)}: expected {field.kind}, found {value!r}")
            values[key] = float(value) if "number" in field.kind else value
        elif field.default is REQUIRED:
            raise DataError(f"{where(name, field=key)}: required field is missing ({field.kind})")
        elif isinstance(field.default, str) and field.default.startswith("="):
            values[key] = values[field.default[1:]]
        else:
            values[key] = field.default
    return CorrelationSpec(values, name)


def load_spec(path: str | os.PathLike[str]) -> CorrelationSpec:
    """Read and check a spec YAML file (``InputError`` if unreadable, ``DataError`` if invalid)."""
    doc, _ = load_yaml(path)  # the safe loader, nesting and aliases bounded, errors as file:line:col
    return parse_spec(doc, path)
