"""Prompt-completion records -> stored examples, as Bridge 0.6.2 tokenizes them (batched per chunk).

Bridge's ``tokenize_prompt_completion_example`` with ``PromptCompletionSFTPreprocessingConfig(input, output,
separator=" ")`` (bridge-format §13), re-implemented on flat arrays:

* the fields: the configured ones (``--prompt-field``/``--completion-field``), else the canonical
  ``prompt``/``completion`` pair (``normalize_sft_example``); strings only, and no conversation keys;
* ``strip_whitespace`` strips ASCII spaces (only) from both ends of both fields, then the prompt goes
  through ``prompt_template`` (``{prompt}``);
* the separator goes in front of the completion, except that a leading space of it is dropped when the
  tokenizer is not space-sensitive (``"x y"`` tokenizes as ``"x"`` + ``"y"``);
* prompt and completion are tokenized separately without special tokens, so no BOS unless ``add_bos``
  (Llama's preset gets none) and the boundary never falls inside a token;
* ``[BOS] prompt [SEP] | completion [EOS]`` (the ids Megatron-Core's tokenizer reports, its fallbacks
  included: SEP is the EOS where a tokenizer has none): loss mask 0 left of ``|``
  (``loss_mode=completion``) or everywhere 1 (``full``), then 0 on Bridge's skipped ids (pad / header /
  vision tokens);
* with ``max_length`` (compat only): a row longer than it loses prompt tokens first, then completion
  tokens (from the right, or the left with ``truncation_method=left``); BOS/SEP/EOS stay.

Qwen3, ``{"input": "Name a colour.", "output": "Blue"}``: prompt ``Name| a| colour|.`` (mask 0), completion
`` Blue|<|im_end|>`` (mask 1): the separator's space stays with the completion's first token.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bridgepack.data.samples._examples import location
from bridgepack.data.samples._readers import RawChunk
from bridgepack.data.samples.text._arrays import flat_ids, segment_positions
from bridgepack.data.samples.text._mode import PROMPT_COMPLETION_PAIRS, refuse_other_kind
from bridgepack.data.samples.text._settings import ResolvedText
from bridgepack.data.samples.text._tokenizer import (
    encodings,
    is_space_sensitive,
    skipped_token_ids,
    special_token_id,
)
from bridgepack.errors import DataError, UsageError, param

#: Bridge's canonical pair and the conversation keys a prompt-completion row must not carry
#: (``data/sft_processing.py:normalize_sft_example``).
CANONICAL_FIELDS = ("prompt", "completion")
CONVERSATION_KEYS = ("messages", "conversation", "conversations")


def _pair(
    path: str, chunk: RawChunk, index: int, record: dict[str, Any], spec: ResolvedText
) -> tuple[str, str]:
    """The row's (prompt, completion) as Bridge's ``normalize_sft_example`` selects them."""
    assert spec.prompt_field is not None and spec.completion_field is not None
    refuse_other_kind(path, chunk, index, record, spec)
    for key in CONVERSATION_KEYS:
        if record.get(key) is not None:
            raise DataError(
                f"{location(path, chunk, index, key)}: a conversation in a prompt-completion row "
                "(Bridge refuses rows with both schemas)"
            )
    fields = (spec.prompt_field, spec.completion_field)

    def holds(name: str) -> bool:  # a null field is a missing one (as for the row's kind, ``_mode``)
        return record.get(name) is not None

    if spec.allow_missing_completion and holds(spec.prompt_field) and not holds(spec.completion_field):
        record = {**record, spec.completion_field: ""}
    if not all(holds(name) for name in fields):
        # Bridge falls back to the canonical pair; fields read from the first row (not given) fall back
        # to either recognised pair, so a row of either kind reads the same wherever it stands
        pairs = PROMPT_COMPLETION_PAIRS if spec.mode_from else (CANONICAL_FIELDS,)
        others = [pair for pair in pairs if pair != fields]
        found = next((pair for pair in others if all(holds(name) for name in pair)), None)
        if found is None:
            missing = next(name for name in fields if not holds(name))
            alternatives = " or ".join(f"the pair '{a}' and '{b}'" for a, b in others)
            other = f" (or {alternatives})" if others else ""
            raise DataError(f"{location(path, chunk, index, missing)}: missing (expected a string){other}")
        fields = found
    values = []
    for name in fields:
        value = record[name]
        if not isinstance(value, str):
            raise DataError(
                f"{location(path, chunk, index, name)}: expected a string, found {type(value).__name__}"
            )
        values.append(value)
    return values[0], values[1]


def _special_id(spec: ResolvedText, tokenizer: Any, name: str) -> int:
    value = special_token_id(tokenizer, name)
    if value is None:
        flag = param(f"add_{name}")
        raise UsageError(f"{spec.tokenizer}: {flag} needs a {name.upper()} token, and the tokenizer has none")
    return int(value)


def _truncated(
    prompt_len: np.ndarray, completion_len: np.ndarray, budget: int
) -> tuple[np.ndarray, np.ndarray]:
    """Kept prompt and completion lengths: the overflow comes off the prompt first, then the completion."""
    overflow = np.maximum(prompt_len + completion_len - budget, 0)
    prompt_cut = np.minimum(prompt_len, overflow)
    completion_cut = np.minimum(completion_len, overflow - prompt_cut)
    return prompt_len - prompt_cut, completion_len - completion_cut


def prompt_completion(
    path: str, chunk: RawChunk, records: list[dict[str, Any]], spec: ResolvedText, tokenizer: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Tokens, mask, stored lengths and the lengths before truncation of one chunk (see the module doc;
    ``None`` when nothing may be cut: the default mode leaves long rows to ``--too-long``).

    E.g. prompt ``[7 8]``, completion ``[9]``, EOS 2: tokens ``[7 8 9 2]``, mask ``[0 0 1 1]``; with
    ``max_length`` 3 the prompt loses its last token: ``[7 9 2]``, mask ``[0 1 1]``, length before 4.
    """
    pairs = [_pair(path, chunk, i, record, spec) for i, record in enumerate(records)]
    separator = spec.separator
    if separator.startswith(" ") and not is_space_sensitive(tokenizer):
        separator = separator[1:]
    strip = (lambda text: text.strip(" ")) if spec.strip_whitespace else (lambda text: text)
    prompts = [spec.prompt_template.format(prompt=strip(prompt)) for prompt, _ in pairs]
    completions = [separator + strip(completion) for _, completion in pairs]
    prompt_ids, prompt_len = flat_ids([e.ids for e in encodings(tokenizer, prompts)])
    completion_ids, completion_len = flat_ids([e.ids for e in encodings(tokenizer, completions)])
    bos = _special_id(spec, tokenizer, "bos") if spec.add_bos else None
    sep = _special_id(spec, tokenizer, "sep") if spec.add_sep else None
    extra = int(bos is not None) + int(sep is not None) + int(spec.add_eos)
    before = prompt_len + completion_len + extra
    keep_prompt, keep_completion = prompt_len, completion_len
    if spec.max_length is not None:
        if extra > spec.max_length:
            raise UsageError(
                f"max length {spec.max_length} is shorter than the {extra} special tokens a row gets"
            )
        keep_prompt, keep_completion = _truncated(prompt_len, completion_len, spec.max_length - extra)
    context = keep_prompt + int(bos is not None) + int(sep is not None)
    lengths = context + keep_completion + int(spec.add_eos)
    short = np.flatnonzero(lengths < 2)
    if short.size:
        raise DataError(
            f"{location(path, chunk, int(short[0]))}: fewer than 2 tokens (nothing to predict); "
            "Bridge refuses such a row too"
        )
    starts = np.cumsum(lengths) - lengths
    tokens = np.empty(int(lengths.sum()), dtype=np.int64)
    if bos is not None:
        tokens[starts] = bos
    first = starts + int(bos is not None)
    tokens[segment_positions(first, keep_prompt)] = prompt_ids[
        _kept(prompt_len, keep_prompt, spec.truncation_method)
    ]
    if sep is not None:
        tokens[first + keep_prompt] = sep
    tokens[segment_positions(starts + context, keep_completion)] = completion_ids[
        _kept(completion_len, keep_completion, spec.truncation_method)
    ]
    if spec.add_eos:
        tokens[starts + lengths - 1] = spec.eos_id
    mask = np.ones(len(tokens), dtype=np.uint8)
    if (spec.loss_mode or "completion") == "completion":
        mask[segment_positions(starts, context)] = 0
    skipped = skipped_token_ids(tokenizer)
    if skipped.size:
        mask[np.isin(tokens, skipped)] = 0
    return tokens, mask, lengths, (before if spec.max_length is not None else None)  # None: nothing was cut


def _kept(lengths: np.ndarray, kept: np.ndarray, method: str) -> np.ndarray:
    """Positions, in the flat array of all rows' ids, of the ids each row keeps (its head, or its tail)."""
    starts = np.cumsum(lengths) - lengths
    if method == "left":
        starts = starts + lengths - kept
    return segment_positions(starts, kept)
