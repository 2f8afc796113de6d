"""Prompt-completion records -> stored examples (batched tokenizer calls per chunk)."""

from __future__ import annotations

from typing import Any

import numpy as np

from seqpack.data._readers import RawChunk
from seqpack.data.text._arrays import flat_ids, segment_positions, text_field
from seqpack.data.text._spec import TextSpec


def prompt_completion(
    path: str, chunk: RawChunk, records: list[dict[str, Any]], spec: TextSpec, tokenizer: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Example ``i`` = prompt ``i`` + completion ``i`` + EOS; mask 0 on the prompt, 1 on the rest.

    E.g. prompt ``[7 8]`` and completion ``[9]`` give tokens ``[7 8 9 EOS]`` and mask ``[0 0 1 1]``.
    """
    assert spec.prompt_field is not None and spec.completion_field is not None
    prompts = [text_field(path, chunk, i, r, spec.prompt_field) for i, r in enumerate(records)]
    completions = [text_field(path, chunk, i, r, spec.completion_field) for i, r in enumerate(records)]
    prompt_ids, prompt_len = flat_ids(tokenizer(prompts)["input_ids"])
    completion_ids, completion_len = flat_ids(tokenizer(completions, add_special_tokens=False)["input_ids"])
    lengths = prompt_len + completion_len + 1
    ends = np.cumsum(lengths)
    starts = ends - lengths
    tokens = np.empty(int(lengths.sum()), dtype=np.int64)
    mask = np.ones(len(tokens), dtype=np.uint8)
    in_prompt = segment_positions(starts, prompt_len)
    tokens[in_prompt] = prompt_ids
    mask[in_prompt] = 0
    tokens[segment_positions(starts + prompt_len, completion_len)] = completion_ids
    tokens[ends - 1] = spec.eos_id
    return tokens, mask, lengths
