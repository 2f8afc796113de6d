"""Chat text without the network: schemas, options, default vs compat, workers (toy tokenizer built here).

The toy tokenizer's template marks assistant text with ``{% generation %}`` (Bridge's first mask source), so
the masks here are Hugging Face's assistant masks: ``<|assistant|> answer<eos>`` -> 0 1 .. 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _support.pack_inputs import run, write_jsonl
from bridgepack.data.samples import iter_chunks
from bridgepack.data.samples.text import ResolvedText, tokenize_chunk
from bridgepack.data.samples.text._settings import ChatOptions
from bridgepack.demo import build_tokenizer
from bridgepack.errors import DataError

TEXTS = ["be brief .", "what is two plus two ?", "it is four .", "hello there", "hi"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tokenizer(TEXTS, tmp_path_factory.mktemp("tok") / "toy")


def examples(path: Path, toy: Path, **chat: Any) -> list[tuple[list[int], list[int]]]:
    from transformers import AutoTokenizer

    eos = AutoTokenizer.from_pretrained(str(toy), local_files_only=True).eos_token_id
    loss_mode = chat.pop("loss_mode", None)
    spec = ResolvedText(str(toy), eos, loss_mode=loss_mode, chat=ChatOptions(**chat))
    out = []
    for chunk in iter_chunks([path]):
        ex = tokenize_chunk(str(path), chunk, spec)
        start = 0
        for n in ex.lengths.tolist():
            out.append((ex.tokens[start : start + n].tolist(), ex.mask[start : start + n].tolist()))
            start += n
    return out


def test_three_schemas_give_the_same_example(tmp_path: Path, toy: Path) -> None:
    turns = [("user", "what is two plus two ?"), ("assistant", "it is four .")]
    rows = [
        {
            "messages": [{"role": "system", "content": "be brief ."}]
            + [{"role": r, "content": c} for r, c in turns]
        },
        {"conversation": [{"role": r, "content": c} for r, c in turns], "system": "be brief ."},
        {
            "conversations": [{"from": {"user": "human"}.get(r, "gpt"), "value": c} for r, c in turns],
            "system": "be brief .",
        },
    ]
    got = examples(write_jsonl(tmp_path / "c.jsonl", rows), toy)
    assert got[0] == got[1] == got[2]
    mask = got[0][1]
    assert sum(mask) == 4 + 1  # "it is four ." and its <eos>
    assert mask[-1] == 1 and mask[0] == 0


def test_loss_modes(tmp_path: Path, toy: Path) -> None:
    row = {
        "messages": [
            {"role": "user", "content": "hello there"},
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "what is two plus two ?"},
            {"role": "assistant", "content": "it is four ."},
        ]
    }
    path = write_jsonl(tmp_path / "c.jsonl", [row])
    [(ids, assistant)] = examples(path, toy)
    [(_, last)] = examples(path, toy, loss_mode="last_turn")
    [(_, full)] = examples(path, toy, loss_mode="full")
    assert sum(assistant) == 2 + 5  # "hi<eos>" and "it is four .<eos>"
    assert sum(last) == 5 and last[-5:] == [1] * 5
    assert full == [1] * len(ids)


def test_default_mode_refuses_a_row_with_nothing_to_train_compat_keeps_it(tmp_path: Path, toy: Path) -> None:
    rows = [
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}]},
        {"messages": [{"role": "user", "content": "hello there"}]},
    ]
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    with pytest.raises(DataError, match=r"c\.jsonl:2: no token to train on"):
        examples(path, toy)
    kept = examples(path, toy, compat=True)
    assert sum(kept[1][1]) == 0  # Bridge only warns and trains on nothing from it


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"text": "hi"}, r"c\.jsonl:1: expected one of messages, conversation, conversations"),
        ({"messages": "hi"}, r"c\.jsonl:1: field 'messages': expected a list of turns, found 'hi'"),
        ({"messages": [{"role": "user"}]}, r"field 'messages': turn 0 needs 'role' and 'content'"),
        ({"conversations": [{"from": "human"}]}, r"field 'conversations': turn 0 needs"),
        ({"messages": []}, r"field 'messages': no turns"),
    ],
)
def test_bad_rows_name_line_and_field(tmp_path: Path, toy: Path, row: dict[str, Any], message: str) -> None:
    with pytest.raises(DataError, match=message):
        examples(write_jsonl(tmp_path / "c.jsonl", [row]), toy)


def test_tool_schemas_reach_the_template_unless_the_row_has_tools(tmp_path: Path, toy: Path) -> None:
    template = "{% for t in tools %}{{ t['name'] }} {% endfor %}"
    template += "{% for m in messages %}{{ m['content'] }}<eos>{% endfor %}"
    schemas = [{"name": "hello"}]
    rows = [
        {"messages": [{"role": "user", "content": "hi"}]},
        {"messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "there"}]},
        {"messages": [{"role": "user", "content": "hi"}], "tools": []},
    ]
    got = examples(
        write_jsonl(tmp_path / "c.jsonl", rows),
        toy,
        template=template + "{% generation %}{% endgeneration %}",
        tool_schemas=schemas,
        loss_mode="full",
        compat=True,
    )
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(toy), local_files_only=True)
    assert [tok.decode(ids) for ids, _ in got] == ["hello hi <eos>", "there hi <eos>", "hello hi <eos>"]


def test_cli_chat_options_and_workers(
    tmp_path: Path, toy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bridgepack.data.pipeline._run.new_run_id", lambda: "0" * 32)  # drawn afresh per run
    rows = [
        {
            "messages": [
                {"role": "user", "content": TEXTS[i % 5]},
                {"role": "assistant", "content": TEXTS[(i + 2) % 5]},
            ]
        }
        for i in range(90)
    ]
    source = write_jsonl(tmp_path / "c.jsonl", rows)
    outputs = []
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}"
        args = [
            str(source),
            "--out",
            str(out),
            "-n",
            "64",
            "--tokenizer",
            str(toy),
            "--loss-mode",
            "last_turn",
        ]
        code, _, err = run([*args, "--workers", workers, "--chunk-rows", "16"], capsys)
        assert code == 0, err
        outputs.append((out / "training_64.idx.parquet").read_bytes())
    assert outputs[0] == outputs[1]
    record = json.loads((tmp_path / "out1" / "64_metadata.jsonl").read_text())[0]["bridgepack"]["text"]
    assert record["format"] == "chat" and record["loss_mode"] == "last_turn"
    assert record["chat_template_sha256"] is None


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        (["--loss-mode", "completion"], 2, "--loss-mode for chat must be one of assistant, last_turn, full"),
        (["--chat-template", "missing.jinja"], 2, "missing.jinja: cannot read the chat template"),
        (["--tool-schemas", "TOOLS"], 2, "expected a JSON list of tool schemas"),
    ],
)
def test_cli_bad_chat_options(
    tmp_path: Path, toy: Path, capsys: pytest.CaptureFixture[str], extra: list[str], code: int, message: str
) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text('{"name": "not a list"}')
    extra = [str(tools) if e == "TOOLS" else str(tmp_path / e) if e.endswith(".jinja") else e for e in extra]
    source = write_jsonl(tmp_path / "c.jsonl", [{"messages": [{"role": "user", "content": "hi"}]}])
    got, _, err = run(
        [str(source), "--out", str(tmp_path / "o"), "-n", "64", "--tokenizer", str(toy), *extra], capsys
    )
    assert got == code and message in err


def test_long_chat_row_follows_too_long_by_default_and_is_dropped_in_compat(
    tmp_path: Path, toy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    short = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there"}]}
    long = {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": " ".join(TEXTS * 3)}]
    }
    source = write_jsonl(tmp_path / "c.jsonl", [short, long, short])
    for mode, action in (([], "rejected (not packed)"), (["--bridge-compat"], "dropped")):
        out = tmp_path / ("compat" if mode else "default")
        code, _, err = run(
            [str(source), "--out", str(out), "-n", "16", "--tokenizer", str(toy), *mode], capsys
        )
        assert code == 0, err
        [reject] = [json.loads(line) for line in (out / "rejects_training_16.jsonl").read_text().splitlines()]
        assert reject["line"] == 2 and reject["action"].startswith(action)


def test_fast_render_is_the_tokenizers_render_and_steps_aside_when_it_differs(
    toy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import AutoTokenizer

    from bridgepack.data.samples.text._chat._jinja import FastTemplate
    from bridgepack.data.samples.text._chat._render import Renderer

    tok = AutoTokenizer.from_pretrained(str(toy), local_files_only=True)
    template = "{% for m in messages %}{{ m.role.upper() }}:{{ m.content.strip() }}"
    template += "{% if m.reasoning_content is defined %}({{ m.reasoning_content }}){% endif %}"
    template += "{% if m.blob is defined %}[{{ m.blob }}]{% endif %}"
    template += "{{ m.get('x', '-') }}{{ m.nope is defined }}"
    template += "{% endfor %}{{ tools | tojson if tools else '' }}{{ eos_token }}"
    convs = [
        [
            {"role": "user", "content": " hi "},
            {"role": "assistant", "content": "yo", "thinking": "why", "x": None},
        ],
        [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "b", "blob": b"1"}],
    ]
    tools = [None, [{"name": "f"}]]

    def hf(conversations: list[Any]) -> list[str]:
        return [
            tok.apply_chat_template(c, tools=t, chat_template=template, tokenize=False)
            for c, t in zip(conversations, tools, strict=True)
        ]

    want = hf(convs)
    # transformers aliases "thinking" to reasoning_content, drops null keys, shows bytes as a placeholder;
    # ``m.get`` is the dict's method, ``m.nope`` undefined
    assert want[0] == "USER:hi-FalseASSISTANT:yo(why)-False<eos>"
    assert want[1] == 'USER:hello there-FalseASSISTANT:b[<bytes>]-False[{"name": "f"}]<eos>'
    renderer = Renderer(tok, template)
    assert renderer.render(convs, tools) == want
    prefixes = [c[:1] for c in convs]
    assert renderer.render(prefixes, tools) == hf(prefixes)  # messages prepared once, reused
    assert renderer._fast is not None  # the texts above are the fast path's: it agreed, so it stayed on
    monkeypatch.setattr(FastTemplate, "render", lambda self, conversation, tools: "not the same")
    from bridgepack.data.samples.text._chat import _jinja as _chat_jinja

    monkeypatch.setattr(_chat_jinja, "_CACHE", {})
    assert Renderer(tok, template).render(convs, tools) == want
