"""``--bridge-compat`` prompt-completion = Megatron-Bridge 0.6.2's own text path, example for example and pack
for pack, with the real Qwen3 and Llama 3.2 tokenizers (``_support/bridge_text.py`` runs Bridge's wheel).

Bridge side: ``PromptCompletionSFTPreprocessingConfig(input, output, separator=" ", ...)`` through
``tokenize_dataset`` (examples, pre-padded when the pad multiple is > 1) and ``GPTSFTDatasetBuilder
.prepare_data`` (packed Parquet + metadata). bridgepack side: its text step plus its compat shaping, and the
whole ``bridgepack pack --bridge-compat`` CLI.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _support.bridge_text import RECIPE_PROMPT_COMPLETION, BridgeRefused, TextCase
from _support.pack_inputs import run
from _support.text_rows import prompt_completion_rows, write_rows
from _support.tokenizers import llama32_tokenizer_dir, qwen3_tokenizer_dir
from bridgepack.data.pipeline._shape import Shaping, shape
from bridgepack.data.samples import iter_chunks
from bridgepack.data.samples.text import ResolvedText, load_tokenizer, tokenize_chunk, tokenizer_eos_id
from bridgepack.data.samples.text._tokenizer import is_space_sensitive
from bridgepack.errors import BridgepackError
from bridgepack.packing import BRIDGE_DEFAULT_SEED

pytestmark = pytest.mark.network

Example = tuple[list[int], list[int]]
TOKENIZERS = {"qwen3": qwen3_tokenizer_dir, "llama32": llama32_tokenizer_dir}


def text_spec(tokenizer: Path, options: Mapping[str, Any], max_length: int | None) -> ResolvedText:
    """bridgepack's compat settings for Bridge's ``PromptCompletionSFTPreprocessingConfig(**options)``."""
    settings = {**RECIPE_PROMPT_COMPLETION, **options}
    settings["prompt_field"] = settings.pop("prompt_column")
    settings["completion_field"] = settings.pop("completion_column")
    eos = tokenizer_eos_id(tokenizer)
    assert eos is not None
    return ResolvedText(str(tokenizer), eos, max_length=max_length, allow_missing_completion=True, **settings)


def bridgepack_examples(jsonl: Path, spec: ResolvedText, max_len: int, mult: int) -> list[Example]:
    """bridgepack's compat examples as the pipeline stores them (text step, then compat shaping)."""
    out: list[Example] = []
    for chunk in iter_chunks([jsonl], 64):
        ex = tokenize_chunk(str(jsonl), chunk, spec)
        compat = Shaping(max_len, mult, spec.eos_id, bridge_compat=True)
        shaped = shape(ex.tokens, ex.mask, ex.lengths, compat)
        ends = np.cumsum(shaped.lengths)
        for lo, hi in zip(ends - shaped.lengths, ends, strict=True):
            out.append((shaped.tokens[lo:hi].tolist(), shaped.mask[lo:hi].tolist()))
    return out


def differences(ours: list[Example], bridge: list[dict[str, Any]]) -> list[str]:
    """Rows whose ids or mask differ (empty when identical); the same check the negative controls use."""
    if len(ours) != len(bridge):
        return [f"{len(ours)} examples != Bridge's {len(bridge)}"]
    return [
        f"row {i}: {ids[:8]}.. {mask[:8]}.. != {want['input_ids'][:8]}.. {want['loss_mask'][:8]}.."
        for i, ((ids, mask), want) in enumerate(zip(ours, bridge, strict=True))
        if ids != want["input_ids"] or mask != want["loss_mask"]
    ]


# (tokenizer, Bridge preprocessing options beyond the recipe's, seq length, pad multiple)
CASES = [
    ("qwen3", {}, 2048, 1),
    ("qwen3", {"loss_mode": "full"}, 64, 1),  # long rows truncated
    ("qwen3", {"truncation_method": "left"}, 64, 4),  # truncated, then pre-padded
    ("qwen3", {"separator": "\n# ", "prompt_template": "Q: {prompt}\nA:", "strip_whitespace": False}, 999, 1),
    ("llama32", {}, 2048, 1),
    ("llama32", {"add_sep": True}, 2048, 1),  # no SEP token: Megatron-Core's tokenizer uses the EOS
    ("llama32", {"add_bos": True, "loss_mode": "full"}, 64, 8),  # BOS is a skipped id: mask 0 even in full
    ("llama32", {"separator": "", "add_eos": False}, 96, 1),
]


@pytest.mark.parametrize(("name", "options", "seq_length", "mult"), CASES)
def test_compat_examples_equal_bridge(
    bridge_text: Any, tmp_path: Path, name: str, options: dict[str, Any], seq_length: int, mult: int
) -> None:
    tokenizer = TOKENIZERS[name]()
    rows = prompt_completion_rows(60, seed=len(CASES) + seq_length)
    if not options.get("add_eos", True):  # a one-token row is refused by both sides; covered below
        rows = [row for row in rows if row.get("input", row.get("prompt")).strip()]
    jsonl = write_rows(tmp_path / "rows.jsonl", rows)
    settings = {**RECIPE_PROMPT_COMPLETION, **options}
    case = TextCase(jsonl, tokenizer, options=settings, seq_length=seq_length, pad_seq_to_mult=mult)
    want = bridge_text.examples(case)
    spec = text_spec(tokenizer, options, seq_length + int(mult > 1))
    ours = bridgepack_examples(jsonl, spec, seq_length, mult)
    assert differences(ours, want) == []
    long = sum(len(b["input_ids"]) >= seq_length for b in want)
    assert seq_length > 900 or long > 0  # the short cases really truncate


def test_negative_controls_are_caught(bridge_text: Any, tmp_path: Path) -> None:
    """The comparison sees one flipped mask bit and a changed separator."""
    tokenizer = qwen3_tokenizer_dir()
    jsonl = write_rows(tmp_path / "rows.jsonl", prompt_completion_rows(40, seed=1))
    want = bridge_text.examples(TextCase(jsonl, tokenizer))
    spec = text_spec(tokenizer, {}, None)
    ours = bridgepack_examples(jsonl, spec, 4096, 1)
    assert differences(ours, want) == []
    flipped = [(ids, list(mask)) for ids, mask in ours]
    flipped[17][1][3] ^= 1
    assert len(differences(flipped, want)) == 1
    no_space = bridgepack_examples(jsonl, replace(spec, separator=""), 4096, 1)
    assert len(differences(no_space, want)) > len(want) // 2


@pytest.mark.parametrize(
    ("name", "options", "jsonl_row"),
    [
        ("qwen3", {"add_bos": True}, {"input": "a", "output": "b"}),  # Qwen3 has no BOS
        ("llama32", {"separator": "", "add_eos": False}, {"input": "", "output": "x"}),  # one token
        ("llama32", {}, {"input": "a", "output": 3}),  # not a string
        ("llama32", {}, {"question": "a", "output": "b"}),  # no prompt field
    ],
)
def test_compat_refuses_what_bridge_refuses(
    bridge_text: Any, tmp_path: Path, name: str, options: dict[str, Any], jsonl_row: dict[str, Any]
) -> None:
    tokenizer = TOKENIZERS[name]()
    jsonl = write_rows(tmp_path / "rows.jsonl", [{"input": "ok", "output": "fine"}, jsonl_row])
    with pytest.raises(BridgeRefused):
        bridge_text.examples(TextCase(jsonl, tokenizer, options={**RECIPE_PROMPT_COMPLETION, **options}))
    with pytest.raises(BridgepackError, match=r"rows\.jsonl:2|token"):
        bridgepack_examples(jsonl, text_spec(tokenizer, options, 2048), 2048, 1)


@pytest.mark.parametrize(("name", "pack_size", "mult"), [("qwen3", 128, 1), ("llama32", 96, 4)])
def test_compat_pack_equals_bridge_prepare_data(
    bridge_text: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, pack_size: int, mult: int
) -> None:
    """The whole CLI, seed left to its compat default, against ``GPTSFTDatasetBuilder.prepare_data``."""
    tokenizer = TOKENIZERS[name]()
    rows = prompt_completion_rows(120, seed=pack_size)
    jsonl = write_rows(tmp_path / "rows.jsonl", rows)
    # the seed Bridge's recipe presets set (GPTSFTDatasetConfig(seed=5678)), compat's default
    case = TextCase(jsonl, tokenizer, seq_length=pack_size, pad_seq_to_mult=mult, seed=BRIDGE_DEFAULT_SEED)
    bridge_parquet, bridge_meta = bridge_text.pack(case, tmp_path / "bridge", pack_size)
    out = tmp_path / "bridgepack"
    args = [str(jsonl), "--out", str(out), "--pack-size", str(pack_size), "--bridge-compat"]
    args += ["--tokenizer", str(tokenizer), "--prompt-field", "input", "--completion-field", "output"]
    args += ["--pad-seq-to-mult", str(mult), "--workers", "2", "--chunk-rows", "32"]
    code, _, err = run(args, capsys)
    assert code == 0, err
    ours = pq.read_table(out / f"training_{pack_size}.idx.parquet").to_pylist()
    theirs = pq.read_table(bridge_parquet).to_pylist()
    assert len(ours) == len(theirs) > 1
    for got, want in zip(ours, theirs, strict=True):
        assert got["input_ids"] == want["input_ids"]
        assert got["loss_mask"] == [int(v) for v in want["loss_mask"]]
        assert got["seq_start_id"] == want["seq_start_id"]
    entry = json.loads((out / f"{pack_size}_metadata.jsonl").read_text())[0]
    (expected,) = json.loads(bridge_meta.read_text())
    assert {k: entry[k] for k in expected} == expected
    record = entry["bridgepack"]
    assert record["seed"] == BRIDGE_DEFAULT_SEED == 5678
    libraries = ("transformers", "tokenizers", "jinja2")
    assert record["text"]["versions"] == {k: bridge_text.versions[k] for k in libraries}
    truncated = [
        json.loads(line) for line in (out / f"rejects_training_{pack_size}.jsonl").read_text().splitlines()
    ]
    assert record["counts"]["truncated"] == len(truncated) > 0
    assert all("truncated" in line["action"] for line in truncated)


# (tokenizer trained in the test, Bridge preprocessing options beyond the recipe's, seq length, pad multiple)
OTHER_KINDS = [
    ("wordpiece", {}, 2048, 1),
    ("wordpiece", {"add_bos": True, "add_sep": True, "separator": " => ", "loss_mode": "full"}, 64, 4),
    ("metaspace", {"truncation_method": "left"}, 64, 1),
    ("metaspace", {"add_bos": True, "separator": "\n", "strip_whitespace": False}, 2048, 8),
]


def rows_with_a_prompt(n: int, seed: int) -> list[dict[str, Any]]:
    """Generated rows without the empty prompts (their one-token rows are refused; tested elsewhere)."""
    return [row for row in prompt_completion_rows(n, seed) if row.get("input", row.get("prompt"))]


@pytest.mark.parametrize(("name", "options", "seq_length", "mult"), OTHER_KINDS)
def test_other_tokenizer_kinds_equal_bridge(
    bridge_text: Any,
    trained_tokenizers: dict[str, Path],
    tmp_path: Path,
    name: str,
    options: dict[str, Any],
    seq_length: int,
    mult: int,
) -> None:
    """A tokenizer that is not space-sensitive (Bridge drops the separator's space) and has no EOS (its SEP
    ends the examples), and a SentencePiece-style one (a ``▁`` before every text, byte fallback)."""
    tokenizer = trained_tokenizers[name]
    rows = rows_with_a_prompt(60, seed=seq_length + mult)
    jsonl = write_rows(tmp_path / "rows.jsonl", rows)
    settings = {**RECIPE_PROMPT_COMPLETION, **options}
    want = bridge_text.examples(
        TextCase(jsonl, tokenizer, options=settings, seq_length=seq_length, pad_seq_to_mult=mult)
    )
    spec = text_spec(tokenizer, options, seq_length + int(mult > 1))
    assert differences(bridgepack_examples(jsonl, spec, seq_length, mult), want) == []
    loaded = load_tokenizer(tokenizer)
    # neither is space-sensitive: the SentencePiece-style one puts its own "▁" before every text
    assert not is_space_sensitive(loaded)
    if name == "wordpiece":
        assert loaded.eos_token_id is None and spec.eos_id == loaded.sep_token_id


def test_tokenizer_without_eos_packs_with_its_sep_as_bridge_does(
    bridge_text: Any, trained_tokenizers: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Megatron-Core's tokenizer reports a SEP-only tokenizer's ``[SEP]`` as its EOS: Bridge ends examples
    and pads packs with it, so ``bridgepack pack`` takes it too (it used to ask for ``--eos-id``)."""
    tokenizer = trained_tokenizers["wordpiece"]
    jsonl = write_rows(tmp_path / "rows.jsonl", rows_with_a_prompt(80, seed=5))
    case = TextCase(jsonl, tokenizer, seq_length=64, pad_seq_to_mult=4, seed=BRIDGE_DEFAULT_SEED)
    bridge_parquet, bridge_meta = bridge_text.pack(case, tmp_path / "bridge", 64)
    out = tmp_path / "bridgepack"
    args = [str(jsonl), "--out", str(out), "-n", "64", "--bridge-compat", "--tokenizer", str(tokenizer)]
    code, _, err = run([*args, "--pad-seq-to-mult", "4"], capsys)
    assert code == 0, err
    assert (
        pq.read_table(out / "training_64.idx.parquet").to_pylist()
        == pq.read_table(bridge_parquet).to_pylist()
    )
    entry = json.loads((out / "64_metadata.jsonl").read_text())[0]
    (expected,) = json.loads(bridge_meta.read_text())
    assert {k: entry[k] for k in expected} == expected
    sep = load_tokenizer(tokenizer).sep_token_id
    assert (entry["bridgepack"]["eos_id"], entry["bridgepack"]["eos_source"]) == (sep, "tokenizer")


TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",), include_characters=" \t\n\u3000"), max_size=40
)
ROW = st.fixed_dictionaries({"input": TEXT, "output": TEXT.filter(lambda t: t.strip(" "))})


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(ROW, min_size=1, max_size=25), name=st.sampled_from(sorted(TOKENIZERS)))
def test_random_text_equals_bridge(
    bridge_text: Any, tmp_path: Path, rows: list[dict[str, str]], name: str
) -> None:
    """Any Unicode (spaces of every kind at the edges included) gives Bridge's ids and masks."""
    tokenizer = TOKENIZERS[name]()
    jsonl = write_rows(tmp_path / f"random-{name}.jsonl", rows)
    want = bridge_text.examples(TextCase(jsonl, tokenizer, seq_length=64))
    assert differences(bridgepack_examples(jsonl, text_spec(tokenizer, {}, 64), 64, 1), want) == []


def test_missing_completion_is_empty_as_in_bridges_packing(bridge_text: Any, tmp_path: Path) -> None:
    """Bridge's packing builds its dataset with ``is_test=True``: a row without the completion field gets an
    empty one (compat does the same; the default mode refuses the row, see test_text.py)."""
    tokenizer = qwen3_tokenizer_dir()
    rows = [{"input": "Name a colour.", "output": "Blue"}, {"input": "Only a prompt"}]
    jsonl = write_rows(tmp_path / "rows.jsonl", rows)
    want = bridge_text.examples(TextCase(jsonl, tokenizer))
    assert differences(bridgepack_examples(jsonl, text_spec(tokenizer, {}, 2048), 2048, 1), want) == []
    assert want[1]["loss_mask"][-2:] == [1, 1]  # the separator's space and the EOS are the targets
