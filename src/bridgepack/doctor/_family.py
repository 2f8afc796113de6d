"""Infer the model family (for Bridge's per-family packing opt-outs, bridge-format §8) from names in the
config.

Names are compared with case and punctuation removed: ``Qwen/Qwen3-Next-80B-A3B-Instruct`` ->
``qwenqwen3next80ba3binstruct`` contains ``qwen3next``. The first source that names a family wins, in the
order: ``--model-family``, ``--recipe``, ``model._target_``, ``model.hf_model_id``,
``tokenizer.tokenizer_model``,
``offline_packing_specs.tokenizer_model_name``, ``checkpoint.pretrained_checkpoint``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bridgepack.doctor._view import ConfigView

QWEN3_NEXT = "qwen3-next"
GLM45 = "glm-4.5"
QWEN35_VL = "qwen3.5-vl"
QWEN_OMNI = "qwen-omni"
ASR = "asr"
#: The families with a packing opt-out in Bridge 0.6.2
#: (recipes/qwen/h100/qwen3_next.py, recipes/glm/h100/glm45.py,
#: recipes/qwen_vl/h100/qwen35_vl.py, recipes/qwen_omni/).
FAMILIES: tuple[str, ...] = (QWEN3_NEXT, GLM45, QWEN35_VL, QWEN_OMNI, ASR)

_MATCHERS: tuple[tuple[str, Callable[[str, str], bool]], ...] = (
    (QWEN3_NEXT, lambda flat, _raw: "qwen3next" in flat),
    (GLM45, lambda flat, _raw: re.search(r"glm45(?!v)", flat) is not None),
    (QWEN35_VL, lambda flat, _raw: "qwen35vl" in flat),
    (QWEN_OMNI, lambda flat, _raw: "qwen" in flat and "omni" in flat),
    (ASR, lambda _flat, raw: re.search(r"(?<![a-z])asr(?![a-z])", raw) is not None),
)


def family_of_name(name: str) -> str | None:
    """The opt-out family a name points at, or ``None``."""
    raw = name.lower()
    flat = re.sub(r"[^a-z0-9]", "", raw)
    for family, matches in _MATCHERS:
        if matches(flat, raw):
            return family
    return None


def infer_family(
    view: ConfigView, *, given: str | None = None, recipe: str | None = None
) -> tuple[str | None, str]:
    """``(family or None, where it was read)``; ``given`` (``--model-family``) is taken as is."""
    if given:
        return (family_of_name(given) or given.lower()), "--model-family"
    specs = view.dataset.offline_packing_specs
    candidates = (
        ("--recipe", recipe),
        ("model._target_", view.model.target),
        ("model.hf_model_id", view.model.hf_model_id),
        ("tokenizer.tokenizer_model", view.tokenizer.tokenizer_model),
        ("dataset.offline_packing_specs.tokenizer_model_name", specs.tokenizer_model_name if specs else None),
        ("checkpoint.pretrained_checkpoint", view.checkpoint.pretrained_checkpoint),
    )
    for source, name in candidates:
        if name:
            family = family_of_name(name)
            if family is not None:
                return family, source
    return None, ""
