"""Bridge 0.6.2's chat-template facts (bridge-format §13): the turn markers it infers from a template.

Bridge recognises a few template families by marker strings in the template text and then knows, per
family, the text that opens an assistant turn, the text that closes it (plus shorter closing variants for
a final turn that may lack its trailing newline) and the texts that open the other roles. Tokenized
without special tokens they become token sequences; ChatML on Qwen3, for example::

    assistant opens   "<|im_start|>assistant\\n"  -> [151644, 77091, 198]
    turn closes       "<|im_end|>\\n"             -> [151645, 198]      (variant "<|im_end|>" -> [151645])
    user opens        "<|im_start|>user\\n"       -> [151644, 872, 198]

The first family whose required markers all occur in the template wins (Bridge's order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

#: ``{% generation %}`` blocks: the template marks assistant text itself (Bridge's ``GENERATION_REGEX``).
GENERATION_BLOCK = re.compile(r"\{%-?\s+generation\s+-?%\}")

_OTHER_ROLES = ("system", "developer", "user", "tool")


@dataclass(frozen=True)
class _Family:
    required: tuple[str, ...]
    assistant_start: str
    turn_end: str
    end_variants: tuple[str, ...]
    role_starts: tuple[tuple[str, str], ...]


#: Bridge 0.6.2's ``infer_assistant_mask_boundary_config`` table, in its order of preference.
FAMILIES: tuple[_Family, ...] = (
    _Family(  # ChatML (Qwen)
        ("<|im_start|>assistant", "<|im_end|>"),
        "<|im_start|>assistant\n",
        "<|im_end|>\n",
        ("<|im_end|>",),
        tuple((r, f"<|im_start|>{r}\n") for r in _OTHER_ROLES),
    ),
    _Family(  # Kimi
        ("<|im_assistant|>", "<|im_user|>", "<|im_system|>", "<|im_middle|>", "<|im_end|>"),
        "<|im_assistant|>assistant<|im_middle|>",
        "<|im_end|>",
        (),
        (("system", "<|im_system|>system<|im_middle|>"), ("user", "<|im_user|>user<|im_middle|>")),
    ),
    _Family(("<|turn>model", "<turn|>"), "<|turn>model\n", "<turn|>", (), ()),  # Gemma 4
    _Family(("<start_of_turn>model", "<end_of_turn>"), "<start_of_turn>model\n", "<end_of_turn>", (), ()),
    _Family(  # Llama 3
        ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "<|eot_id|>",
        (),
        tuple((r, f"<|start_header_id|>{r}<|end_header_id|>\n\n") for r in _OTHER_ROLES),
    ),
    _Family(  # gpt-oss Harmony: one assistant turn may hold several channel segments
        ("<|start|>", "<|channel|>", "<|message|>"),
        "<|start|>assistant",
        "<|return|>",
        ("<|end|>", "<|call|>"),
        tuple((r, f"<|start|>{r}") for r in _OTHER_ROLES),
    ),
)


@dataclass(frozen=True)
class Markers:
    """A family's markers as token sequences (roles in Bridge's order: assistant first).

    ``starts``/``ends`` are padded 2-D arrays with their lengths, the layout the scan kernels read;
    ``start_roles[k]`` is 0 for the assistant (the only role that is trained) and 1 for the others.
    """

    family: int
    texts: tuple[str, ...]  # the text of each of :meth:`sequences`, in the same order
    starts: np.ndarray
    start_lens: np.ndarray
    start_roles: np.ndarray
    ends: np.ndarray
    end_lens: np.ndarray

    def sequences(self) -> list[np.ndarray]:
        """Every start, end and end-variant sequence (what Bridge's safety test looks for)."""
        rows = [self.starts[k, : self.start_lens[k]] for k in range(len(self.start_lens))]
        return rows + [self.ends[k, : self.end_lens[k]] for k in range(len(self.end_lens))]


def _encode(tokenizer: Any, text: str) -> list[int]:
    return [int(i) for i in tokenizer.encode(text, add_special_tokens=False)]


def _padded(sequences: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(s) for s in sequences)
    table = np.full((len(sequences), width), -1, dtype=np.int64)
    for k, seq in enumerate(sequences):
        table[k, : len(seq)] = seq
    return table, np.array([len(s) for s in sequences], dtype=np.int64)


def infer_markers(template: str | None, tokenizer: Any) -> Markers | None:
    """The first family whose required markers all occur in ``template`` (``None``: no family)."""
    if not template:
        return None
    for index, family in enumerate(FAMILIES):
        if not all(marker in template for marker in family.required):
            continue
        start = _encode(tokenizer, family.assistant_start)
        end = _encode(tokenizer, family.turn_end)
        if not start or not end:
            continue
        variants = [(ids, t) for t in family.end_variants if (ids := _encode(tokenizer, t))]
        others = [(ids, t) for _, t in family.role_starts if (ids := _encode(tokenizer, t))]
        starts, start_lens = _padded([start] + [ids for ids, _ in others])
        ends, end_lens = _padded([end] + [ids for ids, _ in variants])
        texts = (
            family.assistant_start,
            *(t for _, t in others),
            family.turn_end,
            *(t for _, t in variants),
        )
        roles = np.array([0] + [1] * len(others), dtype=np.int64)
        return Markers(index, texts, starts, start_lens, roles, ends, end_lens)
    return None
