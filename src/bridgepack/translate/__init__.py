"""Megatron-LM flags <-> Megatron-Bridge overrides: one mapping table, two directions (bridge-format §12)."""

from bridgepack.translate._convert import (
    ReverseTranslation,
    Translation,
    bridge_to_mlm,
    bridge_to_mlm_report,
    format_override,
    mlm_to_bridge,
    parse_scalar,
    shell_word,
)
from bridgepack.translate._mlm_config import load_model_args, split_mlm_args
from bridgepack.translate._model import DEFAULT_RECIPE, MLM_DEFAULTS, RULES, VANILLA_RECIPE, swiglu_ffn_size
from bridgepack.translate._table import BY_FLAG, FLAG_TABLE, NO_BRIDGE_EQUIVALENT, NOT_PROVEN, FlagMapping

__all__ = [
    "BY_FLAG",
    "DEFAULT_RECIPE",
    "FLAG_TABLE",
    "MLM_DEFAULTS",
    "NOT_PROVEN",
    "NO_BRIDGE_EQUIVALENT",
    "RULES",
    "VANILLA_RECIPE",
    "FlagMapping",
    "ReverseTranslation",
    "Translation",
    "bridge_to_mlm",
    "bridge_to_mlm_report",
    "format_override",
    "load_model_args",
    "mlm_to_bridge",
    "parse_scalar",
    "shell_word",
    "split_mlm_args",
    "swiglu_ffn_size",
]
