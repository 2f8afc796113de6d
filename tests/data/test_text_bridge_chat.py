"""``--bridge-compat`` chat = Megatron-Bridge 0.6.2's own chat path, example for example and pack for pack,
with the real Qwen3 and Llama 3.2 tokenizers (``_support/bridge_text.py`` runs Bridge's wheel).

Bridge side: ``ChatSFTPreprocessingConfig(loss_mode=...)`` through ``tokenize_dataset`` (its examples) and
``GPTSFTDatasetBuilder.prepare_data`` (packed Parquet + metadata), the template override as
``TokenizerConfig.chat_template_path`` and dataset-wide tools as ``dataset_kwargs["tool_schemas"]``.
bridgepack side: its text step plus compat shaping, and the whole ``bridgepack pack --bridge-compat`` CLI.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from _support.bridge_text import BridgeRefused, TextCase
from _support.chat_rows import TOOLS, chat_rows
from _support.pack_inputs import run, write_jsonl
from _support.tokenizers import (
    chatml_template_path,
    llama3_template_path,
    llama32_tokenizer_dir,
    qwen3_tokenizer_dir,
    qwen3_with_family_tokens,
    template_path,
)
from bridgepack.data.pipeline._shape import Shaping, shape
from bridgepack.data.samples import iter_chunks
from bridgepack.data.samples.text import ResolvedText, load_tokenizer, tokenize_chunk
from bridgepack.data.samples.text._settings import ChatOptions
from bridgepack.demo._resources import dataset_path
from bridgepack.errors import DataError

pytestmark = pytest.mark.network

TOKENIZERS = {"qwen3": qwen3_tokenizer_dir, "llama32": llama32_tokenizer_dir}
TEMPLATES = {None: lambda: None, "llama3": llama3_template_path, "chatml": chatml_template_path}


def chat_spec(
    tokenizer: Path,
    template: Path | None = None,
    loss_mode: str | None = None,
    tools: list[Any] | None = None,
) -> ResolvedText:
    """bridgepack's compat settings for Bridge's ``ChatSFTPreprocessingConfig(loss_mode)``."""
    text = None if template is None else template.read_text()
    chat = ChatOptions(template=text, tool_schemas=tools, compat=True)
    return ResolvedText(
        str(tokenizer), int(load_tokenizer(tokenizer).eos_token_id), loss_mode=loss_mode, chat=chat
    )


def ours(
    jsonl: Path, spec: ResolvedText, max_len: int = 4096, mult: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """bridgepack's compat examples as the pipeline stores them: flat ids, flat mask, row lengths."""
    parts = []
    for chunk in iter_chunks([jsonl], 32):
        ex = tokenize_chunk(str(jsonl), chunk, spec)
        parts.append(
            shape(ex.tokens, ex.mask, ex.lengths, Shaping(max_len, mult, spec.eos_id, bridge_compat=True))
        )
    return (
        np.concatenate([p.tokens for p in parts]),
        np.concatenate([p.mask for p in parts]),
        np.concatenate([p.lengths for p in parts]),
    )


def mismatched_rows(
    mine: tuple[np.ndarray, np.ndarray, np.ndarray], bridge: list[dict[str, Any]]
) -> list[int]:
    """Rows whose ids or loss mask differ from Bridge's (all rows when the counts or lengths differ)."""
    ids, mask, lengths = mine
    want_lengths = np.array([len(b["input_ids"]) for b in bridge])
    if len(lengths) != len(bridge) or not np.array_equal(lengths, want_lengths):
        return list(range(max(len(lengths), len(bridge))))
    want_ids = np.concatenate([b["input_ids"] for b in bridge])
    want_mask = np.concatenate([b["loss_mask"] for b in bridge])
    bad = (ids != want_ids) | (mask != want_mask)
    row_of = np.repeat(np.arange(len(lengths)), lengths)
    return sorted(set(row_of[bad].tolist()))


def accepted_rows(rows: list[dict[str, Any]], tmp: Path, spec: ResolvedText) -> list[dict[str, Any]]:
    """The rows bridgepack turns into examples one by one (the others are Bridge refusals, tested apart)."""
    kept = []
    for row in rows:
        path = write_jsonl(tmp / "one.jsonl", [row])
        try:
            ours(path, spec)
        except DataError:
            continue
        kept.append(row)
    return kept


# (tokenizer, template override, loss mode, rows, tools for the whole dataset)
# (each tokenizer, template and loss mode by default; the other pairings with --deep)
CASES = [
    ("qwen3", None, None, 100, None),
    ("qwen3", None, "last_turn", 60, None),
    ("qwen3", None, "full", 40, None),
    ("qwen3", None, None, 40, "tools"),
    pytest.param("qwen3", "chatml", "last_turn", 40, None, marks=pytest.mark.deep),
    ("llama32", "llama3", None, 60, None),
    pytest.param("llama32", "llama3", "last_turn", 40, "tools", marks=pytest.mark.deep),
    ("llama32", "chatml", None, 50, None),
]


@pytest.mark.parametrize(("name", "template", "loss_mode", "n", "tools"), CASES)
def test_compat_chat_examples_equal_bridge(
    bridge_text: Any,
    tmp_path: Path,
    name: str,
    template: str | None,
    loss_mode: str | None,
    n: int,
    tools: str | None,
) -> None:
    tokenizer = TOKENIZERS[name]()
    template_path = TEMPLATES[template]()
    schemas = TOOLS if tools else None
    rows = chat_rows(seed=n + len(name), n=n, tools=tools is None)
    spec = chat_spec(tokenizer, template_path, loss_mode, schemas)
    if (
        name == "llama32" and template == "chatml"
    ):  # its markers are plain text there: Bridge refuses some rows
        rows = accepted_rows(rows, tmp_path, spec)
        assert len(rows) > n // 2
    jsonl = write_jsonl(tmp_path / "chat.jsonl", rows)
    options = {} if loss_mode is None else {"loss_mode": loss_mode}
    kwargs = None if schemas is None else {"tool_schemas": schemas}
    case = TextCase(
        jsonl, tokenizer, kind="chat", options=options, chat_template=template_path, dataset_kwargs=kwargs
    )
    want = bridge_text.examples(case)
    assert mismatched_rows(ours(jsonl, spec), want) == []
    if loss_mode != "full" and not (name == "llama32" and template == "chatml"):
        # the template's end token is trained, and nothing follows the render
        tok = load_tokenizer(tokenizer)
        end = "<|eot_id|>" if template == "llama3" else "<|im_end|>"
        assert all(tok.decode(b["input_ids"][-8:]).rstrip("\n").endswith(end) for b in want)
        assert all(b["loss_mask"][-1] == 1 for b in want)


@pytest.mark.parametrize("loss_mode", [None, "full"])
def test_sentencepiece_style_tokenizer_with_its_own_template_equals_bridge(
    bridge_text: Any, trained_tokenizers: dict[str, Path], tmp_path: Path, loss_mode: str | None
) -> None:
    """A SentencePiece-style tokenizer (a "▁" before every text segment, byte fallback) whose own ChatML
    template Bridge masks by its markers: the rows bridgepack accepts are Bridge's, and it refuses the rest
    (the marker's newline merges with the turn's first characters there, as with ChatML on Llama)."""
    tokenizer = trained_tokenizers["metaspace"]
    spec = chat_spec(tokenizer, loss_mode=loss_mode)
    rows = chat_rows(seed=21, n=60)
    kept = rows if loss_mode == "full" else accepted_rows(rows, tmp_path, spec)
    assert len(kept) > len(rows) // 2
    jsonl = write_jsonl(tmp_path / "chat.jsonl", kept)
    options = {} if loss_mode is None else {"loss_mode": loss_mode}
    want = bridge_text.examples(TextCase(jsonl, tokenizer, kind="chat", options=options))
    assert mismatched_rows(ours(jsonl, spec), want) == []
    if len(kept) < len(rows):
        refused = write_jsonl(tmp_path / "refused.jsonl", [row for row in rows if row not in kept][:1])
        with pytest.raises(BridgeRefused):
            bridge_text.examples(TextCase(refused, tokenizer, kind="chat", options=options))


@pytest.fixture(scope="module")
def family_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qwen3_with_family_tokens(tmp_path_factory.mktemp("family") / "qwen3-family")


# Each family in the default mode; its last_turn and full runs with --deep.
@pytest.mark.parametrize(
    "loss_mode",
    [None, pytest.param("last_turn", marks=pytest.mark.deep), pytest.param("full", marks=pytest.mark.deep)],
)
@pytest.mark.parametrize("family", ["gemma", "gemma4", "kimi", "harmony"])
def test_other_template_families_equal_bridge(
    bridge_text: Any, family_tokenizer: Path, tmp_path: Path, family: str, loss_mode: str | None
) -> None:
    """The families Bridge knows beyond ChatML and Llama 3, their markers single tokens as on their models:
    Gemma (``<start_of_turn>model``), Gemma 4 (``<|turn>model``), Kimi (``<|im_assistant|>``) and gpt-oss
    Harmony (several channel segments in one assistant turn, ``<|return|>`` closing the last)."""
    template = template_path(family)
    spec = chat_spec(family_tokenizer, template, loss_mode)
    rows = chat_rows(seed=len(family), n=40)
    # Harmony: Bridge (and bridgepack) refuse a few rows, e.g. an empty user turn before an assistant turn
    kept = accepted_rows(rows, tmp_path, spec) if family == "harmony" else rows
    assert len(kept) > len(rows) * 3 // 4
    jsonl = write_jsonl(tmp_path / "chat.jsonl", kept)
    options = {} if loss_mode is None else {"loss_mode": loss_mode}
    case = TextCase(jsonl, family_tokenizer, kind="chat", options=options, chat_template=template)
    want = bridge_text.examples(case)
    assert mismatched_rows(ours(jsonl, spec), want) == []
    if loss_mode is None:  # the assistant turns, not the whole text, are trained
        assert all(0 < sum(b["loss_mask"]) < len(b["loss_mask"]) for b in want)


def test_qwen3_multi_turn_reasoning_rows(bridge_text: Any, tmp_path: Path) -> None:
    """Qwen3 renders ``<think>\\n\\n</think>\\n\\n`` in the last assistant turn only: prefixes are not
    renders of each other, yet every turn is masked, the think block of the last one included."""
    tokenizer = qwen3_tokenizer_dir()
    rows = [
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
        {
            "messages": [
                {"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "4", "reasoning_content": "add"},
                {"role": "user", "content": "3+3?"},
                {"role": "assistant", "content": "<think>\nadd again\n</think>\n\n6"},
            ]
        },
    ]
    jsonl = write_jsonl(tmp_path / "chat.jsonl", rows)
    want = bridge_text.examples(TextCase(jsonl, tokenizer, kind="chat", options={}))
    mine = ours(jsonl, chat_spec(tokenizer))
    assert mismatched_rows(mine, want) == []
    tok = load_tokenizer(tokenizer)
    ids, mask, lengths = mine
    first = tok.decode(ids[: lengths[0]][mask[: lengths[0]] == 1])
    assert first == "<think>\n\n</think>\n\nyo<|im_end|>\n"
    second = ids[lengths[0] :][mask[lengths[0] :] == 1]
    assert tok.decode(second) == "4<|im_end|>\n<think>\nadd again\n</think>\n\n6<|im_end|>\n"


def test_demo_chat_file_with_qwen3(
    bridge_text: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo's own multi-turn sft_chat.jsonl: Bridge's examples, and the whole file packs."""
    tokenizer = qwen3_tokenizer_dir()
    source = dataset_path()
    head = tmp_path / "head.jsonl"
    head.write_bytes(b"".join(source.read_bytes().splitlines(keepends=True)[:200]))
    want = bridge_text.examples(TextCase(head, tokenizer, kind="chat", options={}))
    assert mismatched_rows(ours(head, chat_spec(tokenizer)), want) == []
    code, _, err = run(
        [str(source), "--out", str(tmp_path / "out"), "-n", "2048", "--tokenizer", str(tokenizer)], capsys
    )
    assert code == 0, err
    packed = pq.read_table(tmp_path / "out" / "training_2048.idx.parquet")
    assert sum(len(s) for s in packed.column("seq_start_id").to_pylist()) == 2000


def test_negative_control_flipped_bit_is_caught(bridge_text: Any, tmp_path: Path) -> None:
    tokenizer = qwen3_tokenizer_dir()
    jsonl = write_jsonl(tmp_path / "chat.jsonl", chat_rows(seed=3, n=30))
    want = bridge_text.examples(TextCase(jsonl, tokenizer, kind="chat", options={}))
    ids, mask, lengths = ours(jsonl, chat_spec(tokenizer))
    assert mismatched_rows((ids, mask, lengths), want) == []
    flipped = mask.copy()
    at = int(lengths[:11].sum()) + 5
    flipped[at] ^= 1
    assert mismatched_rows((ids, flipped, lengths), want) == [11]


@pytest.mark.parametrize(
    ("name", "template", "row"),
    [
        # a user turn starting with blank lines: "\n\n\n" is one token, the user marker's "\n" is gone
        ("qwen3", None, [("user", "a"), ("assistant", "b"), ("user", "\n\nc"), ("assistant", "d")]),
        # ChatML on Llama: its markers are plain text, and "74<|im_end|>" does not split where they do
        (
            "llama32",
            "chatml",
            [("user", "Sorted: 5 43 59 60 74"), ("assistant", "Tabs\tand  double  spaces.")],
        ),
        # no assistant turn at all
        ("qwen3", None, [("user", "a")]),
    ],
)
def test_rows_bridge_refuses_are_refused_with_their_line(
    bridge_text: Any, tmp_path: Path, name: str, template: str | None, row: list[tuple[str, str]]
) -> None:
    tokenizer = TOKENIZERS[name]()
    template_path = TEMPLATES[template]()
    good = {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}
    bad = {"messages": [{"role": role, "content": content} for role, content in row]}
    jsonl = write_jsonl(tmp_path / "chat.jsonl", [good, bad])
    with pytest.raises(BridgeRefused):
        bridge_text.examples(TextCase(jsonl, tokenizer, kind="chat", options={}, chat_template=template_path))
    with pytest.raises(DataError, match=r"chat\.jsonl:2: no assistant turn found"):
        ours(jsonl, chat_spec(tokenizer, template_path))


def test_compat_pack_equals_bridges_prepare_data(
    bridge_text: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Packed Parquet rows and metadata: Bridge's ``prepare_data`` vs ``bridgepack pack --bridge-compat``,
    with a
    pad multiple (long rows truncated and pre-padded as Bridge does) and with 1 (long rows dropped)."""
    tokenizer = qwen3_tokenizer_dir()
    jsonl = write_jsonl(tmp_path / "chat.jsonl", chat_rows(seed=9, n=90))
    for mult, seq in ((1, 512), (4, 256)):
        case = TextCase(jsonl, tokenizer, kind="chat", options={}, seq_length=seq, pad_seq_to_mult=mult)
        parquet, metadata = bridge_text.pack(case, tmp_path / f"bridge{mult}", packed_sequence_size=seq)
        out = tmp_path / f"ours{mult}"
        args = [
            str(jsonl),
            "--out",
            str(out),
            "-n",
            str(seq),
            "--tokenizer",
            str(tokenizer),
            "--bridge-compat",
        ]
        code, _, err = run([*args, "--pad-seq-to-mult", str(mult)], capsys)
        assert code == 0, err
        theirs = pq.read_table(parquet).to_pylist()
        mine = pq.read_table(out / f"training_{seq}.idx.parquet").to_pylist()
        assert mine == theirs
        bridge_meta = json.loads(metadata.read_text())
        our_meta = json.loads((out / f"{seq}_metadata.jsonl").read_text())
        assert [{k: v for k, v in m.items() if k != "bridgepack"} for m in our_meta] == bridge_meta


GENERATION_CHATML = (
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['role'] == 'assistant' %}{% generation %}{{- message['content'] }}{% endgeneration %}"
    "{%- else %}{{- message['content'] }}{%- endif %}{{- '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@pytest.mark.parametrize("loss_mode", [None, "last_turn"])
def test_generation_blocks_with_known_markers(
    bridge_text: Any, tmp_path: Path, loss_mode: str | None
) -> None:
    """A ChatML template with ``{% generation %}`` around the answers: Hugging Face's mask, plus the
    ``<|im_end|>\\n`` Bridge adds from the markers (the generation block stops before it)."""
    tokenizer = qwen3_tokenizer_dir()
    template = tmp_path / "generation.jinja"
    template.write_text(GENERATION_CHATML)
    jsonl = write_jsonl(tmp_path / "chat.jsonl", chat_rows(seed=5, n=40, reasoning=False, tools=False))
    options = {} if loss_mode is None else {"loss_mode": loss_mode}
    want = bridge_text.examples(
        TextCase(jsonl, tokenizer, kind="chat", options=options, chat_template=template)
    )
    mine = ours(jsonl, chat_spec(tokenizer, template, loss_mode))
    assert mismatched_rows(mine, want) == []
    tok = load_tokenizer(tokenizer)
    ids, mask, lengths = mine
    first = ids[: lengths[0]][mask[: lengths[0]] == 1]
    assert tok.decode(first).endswith("<|im_end|>\n")


def test_generation_template_without_known_markers(bridge_text: Any, tmp_path: Path) -> None:
    """bridgepack's toy tokenizer: its template marks answers with ``{% generation %}`` and belongs to no
    family
    Bridge knows, so the mask is Hugging Face's alone (the demo's path)."""
    from bridgepack.demo import build_tokenizer

    rows = chat_rows(seed=6, n=30, reasoning=False, tools=False)
    turns = [
        turn
        for row in rows
        for key in ("messages", "conversation", "conversations")
        for turn in row.get(key, [])
    ]
    texts = [str(turn.get("content", turn.get("value", ""))) for turn in turns]
    tokenizer = build_tokenizer([*texts, "You are a careful assistant."], tmp_path / "toy")
    jsonl = write_jsonl(tmp_path / "chat.jsonl", rows)
    want = bridge_text.examples(TextCase(jsonl, tokenizer, kind="chat", options={}))
    assert mismatched_rows(ours(jsonl, chat_spec(tokenizer)), want) == []


def _named_templates(source: Path, out: Path, layout: str, tool_use: Path) -> Path:
    """Qwen3's tokenizer with two named templates, ``default`` (our ChatML one) and ``tool_use`` (Qwen3's
    own): a list in tokenizer_config.json (``list``), or ``chat_template.jinja`` plus
    ``additional_chat_templates/tool_use.jinja`` (``files``), the two ways transformers 5 reads them."""
    out.mkdir()
    for name in ("tokenizer.json", "vocab.json", "merges.txt"):
        (out / name).write_bytes((source / name).read_bytes())
    config = json.loads((source / "tokenizer_config.json").read_text())
    default = chatml_template_path().read_text()
    if layout == "list":
        config["chat_template"] = [
            {"name": "default", "template": default},
            {"name": "tool_use", "template": tool_use.read_text()},
        ]
    else:
        del config["chat_template"]
        (out / "chat_template.jinja").write_text(default)
        (out / "additional_chat_templates").mkdir()
        (out / "additional_chat_templates" / "tool_use.jinja").write_text(tool_use.read_text())
    (out / "tokenizer_config.json").write_text(json.dumps(config))
    return out


@pytest.fixture(scope="module")
def qwen3_template_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("qwen3-template") / "qwen3.jinja"
    path.write_text(
        json.loads((qwen3_tokenizer_dir() / "tokenizer_config.json").read_text())["chat_template"]
    )
    return path


def _split_by_tools(rows: list[dict[str, Any]]) -> tuple[list[int], list[int]]:
    with_tools = [i for i, row in enumerate(rows) if "tools" in row]
    return with_tools, [i for i in range(len(rows)) if i not in with_tools]


# Each layout once with schemas and once without; the other two pairings with --deep.
@pytest.mark.parametrize(
    ("layout", "schemas"),
    [
        ("list", None),
        ("files", "tools"),
        pytest.param("list", "tools", marks=pytest.mark.deep),
        pytest.param("files", None, marks=pytest.mark.deep),
    ],
)
def test_named_templates_render_as_transformers_picks_them_equal_bridge(
    bridge_text: Any, tmp_path: Path, qwen3_template_file: Path, layout: str, schemas: str | None
) -> None:
    """#29 item 7: rows given tools render with ``tool_use``, the others with ``default``; Bridge 0.6.2
    renders them through ``apply_chat_template`` too (its full loss mode: it masks no named template)."""
    tokenizer = _named_templates(qwen3_tokenizer_dir(), tmp_path / "tok", layout, qwen3_template_file)
    rows = chat_rows(seed=29, n=60)
    with_tools, without = _split_by_tools(rows)
    assert with_tools and without
    tools = TOOLS if schemas else None
    jsonl = write_jsonl(tmp_path / "chat.jsonl", rows)
    kwargs = None if tools is None else {"tool_schemas": tools}
    case = TextCase(jsonl, tokenizer, kind="chat", options={"loss_mode": "full"}, dataset_kwargs=kwargs)
    want = bridge_text.examples(case)
    mine = ours(jsonl, chat_spec(tokenizer, loss_mode="full", tools=tools))
    assert mismatched_rows(mine, want) == []
    tok = load_tokenizer(tokenizer)
    texts = [tok.decode(b["input_ids"]) for b in want]
    tool_use = set(range(len(rows))) if tools else set(with_tools)
    assert all(("<tools>" in text) == (i in tool_use) for i, text in enumerate(texts))


def test_named_templates_assistant_mask_is_refused_in_compat_as_bridge_does(
    bridge_text: Any, tmp_path: Path, qwen3_template_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokenizer = _named_templates(qwen3_tokenizer_dir(), tmp_path / "tok", "list", qwen3_template_file)
    jsonl = write_jsonl(tmp_path / "chat.jsonl", chat_rows(seed=30, n=8))
    for loss_mode in ("assistant", "last_turn"):
        with pytest.raises(BridgeRefused, match="generation"):
            bridge_text.examples(TextCase(jsonl, tokenizer, kind="chat", options={"loss_mode": loss_mode}))
        out = tmp_path / f"out-{loss_mode}"
        args = [str(jsonl), "--out", str(out), "-n", "4096", "--tokenizer", str(tokenizer), "--bridge-compat"]
        code, _, err = run([*args, "--loss-mode", loss_mode], capsys)
        assert code == 2 and err.count("\n") == 1 and not out.exists()
        assert err.startswith(f"error: {tokenizer / 'tokenizer_config.json'}: named chat templates")


@pytest.mark.parametrize("loss_mode", [None, pytest.param("last_turn", marks=pytest.mark.deep)])
def test_named_templates_default_mode_masks_each_row_by_its_template(
    bridge_text: Any, tmp_path: Path, qwen3_template_file: Path, loss_mode: str | None
) -> None:
    """The default mode masks assistant turns with the template each row renders with: rows with tools as
    Bridge masks them under ``--chat-template`` Qwen3's, the others under our ChatML one."""
    tokenizer = _named_templates(qwen3_tokenizer_dir(), tmp_path / "tok", "list", qwen3_template_file)
    spec = replace(chat_spec(tokenizer, loss_mode=loss_mode), chat=ChatOptions())
    rows = accepted_rows(chat_rows(seed=31, n=60), tmp_path, spec)
    with_tools, without = _split_by_tools(rows)
    assert len(with_tools) > 3 and len(without) > 30
    ids, mask, lengths = ours(write_jsonl(tmp_path / "chat.jsonl", rows), spec)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    options = {} if loss_mode is None else {"loss_mode": loss_mode}
    for numbers, template in ((with_tools, qwen3_template_file), (without, chatml_template_path())):
        group = write_jsonl(tmp_path / "group.jsonl", [rows[i] for i in numbers])
        want = bridge_text.examples(
            TextCase(group, tokenizer, kind="chat", options=options, chat_template=template)
        )
        for i, example in zip(numbers, want, strict=True):
            assert ids[starts[i] : starts[i + 1]].tolist() == example["input_ids"], i
            assert mask[starts[i] : starts[i + 1]].tolist() == example["loss_mask"], i
