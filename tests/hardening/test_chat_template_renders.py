"""A chat template whose render changes between calls is named for that (#43 item 11).

Finding assistant turns by rendering compares renders of a conversation's prefixes made in separate calls.
A template that writes the time (``strftime_now`` with seconds) had every row refused as one that "opens a
turn otherwise than its generation prompt", exit 1; now the template is refused before any row is read,
exit 2, and a row whose renders differ anyway (a date that changed mid-run) names the same cause.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _support.pack_inputs import run, write_jsonl
from bridgepack.data.samples.text._chat import _path
from bridgepack.data.samples.text._chat._by_render import DIFFERING_RENDERS
from bridgepack.demo import build_tokenizer

#: A template without {% generation %} or markers Bridge knows (its turns are found by rendering), that
#: opens with the time of the render when ``stamp`` is a strftime format.
TEMPLATE = (
    "{{ strftime_now('STAMP') }} {% for message in messages %}<|{{ message['role'] }}|> "
    "{{ message['content'] }}<eos>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
CHATS = [
    {"messages": [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}]},
    {
        "messages": [
            {"role": "user", "content": "what is two plus two ?"},
            {"role": "assistant", "content": "four"},
        ]
    },
]


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts = [m["content"] for row in CHATS for m in row["messages"]]
    return build_tokenizer(texts, tmp_path_factory.mktemp("tok") / "toy")


def _pack(tmp_path: Path, toy: Path, stamp: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    template = tmp_path / "dated.jinja"
    template.write_text(TEMPLATE.replace("STAMP", stamp))
    chats = write_jsonl(tmp_path / "chats.jsonl", CHATS)
    args = [str(chats), "-o", str(tmp_path / "out"), "-n", "64", "--tokenizer", str(toy)]
    code, _, err = run([*args, "--chat-template", str(template), "--workers", "1"], capsys)
    return code, err.strip()


def test_a_template_that_writes_the_time_is_refused_naming_the_cause(
    tmp_path: Path, toy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _pack(tmp_path, toy, "%H:%M:%S.%f", capsys)
    assert code == 2, err
    assert err.startswith(f"error: {tmp_path / 'dated.jinja'}: {DIFFERING_RENDERS}; "), err
    assert "otherwise than its generation prompt" not in err
    assert not (tmp_path / "out").exists()


def test_a_template_that_writes_the_date_packs(
    tmp_path: Path, toy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Llama 3's templates write the day's date: it renders alike within a run, and packs."""
    code, err = _pack(tmp_path, toy, "%d %b %Y", capsys)
    assert code == 0, err


def test_a_row_whose_renders_differ_names_the_cause(
    tmp_path: Path, toy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renders that differ after the template was checked (the date changed during the run): each row
    refused says why, not that the template opens a turn otherwise."""
    monkeypatch.setattr(_path, "_check_renders_alike", lambda template, renderer: None)
    code, err = _pack(tmp_path, toy, "%H:%M:%S.%f", capsys)
    assert code == 1, err
    assert re.search(rf"assistant turn 1: {re.escape(DIFFERING_RENDERS)}", err), err
