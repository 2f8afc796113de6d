"""A Jinja syntax error in a chat template is one line naming the file and the line, exit 2 (#29 item 4),
wherever the template is written (``--chat-template``, ``tokenizer_config.json`` as one template or named
ones, ``chat_template.jinja``) and with any ``--workers``; ``plan`` says the same.

The broken templates are made from real ones (Qwen3's own and every template under ``_support/templates``):
an expression left open (``{{`` -> ``{{ (``) or a statement closed with ``}`` instead of ``%}``, at three
places spread over each template; the line of the edit is where Jinja stops.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from _support.pack_inputs import write_jsonl
from _support.tokenizers import _TEMPLATES, qwen3_tokenizer_dir
from bridgepack.cli import main

pytestmark = pytest.mark.network
pytest.importorskip("transformers")

ROWS = [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}]
EDITS = (("{{", "{{ ("), ("%}", "}"))


def _templates() -> dict[str, str]:
    found = {path.stem: path.read_text() for path in sorted(_TEMPLATES.glob("*.jinja"))}
    found["qwen3"] = json.loads((qwen3_tokenizer_dir() / "tokenizer_config.json").read_text())[
        "chat_template"
    ]
    return found


def _broken(text: str) -> list[tuple[str, int]]:
    """Broken copies of ``text`` and the line of each edit."""
    out = []
    for old, new in EDITS:
        places = [m.start() for m in re.finditer(re.escape(old), text)]
        for at in places[:: max(1, len(places) // 3)][:3]:
            out.append((text[:at] + new + text[at + len(old) :], text[:at].count("\n") + 1))
    return out


def _pack(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["pack", "--quiet", *args])
    return code, capsys.readouterr().err


def test_chat_template_option_with_a_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = write_jsonl(tmp_path / "c.jsonl", ROWS)
    tokenizer = str(qwen3_tokenizer_dir())
    tried = 0
    for name, text in _templates().items():
        for k, (broken, line) in enumerate(_broken(text)):
            template = tmp_path / f"{name}-{k}.jinja"
            template.write_text(broken)
            out = tmp_path / f"out-{name}-{k}"
            workers = str(1 + k % 2)
            args = [str(rows), "--tokenizer", tokenizer, "--chat-template", str(template), "--out", str(out)]
            code, err = _pack([*args, "-n", "64", "--workers", workers], capsys)
            assert code == 2 and err.count("\n") == 1, (name, k, err)
            assert err.startswith(f"error: {template}:{line}: Jinja syntax error in the chat template: ")
            assert not out.exists()
            tried += 1
    assert tried >= 35


def _tokenizer_with(tmp_path: Path, placement: str, broken: str) -> tuple[Path, str]:
    """Qwen3's tokenizer with ``broken`` as its own template; returns it and where messages name it."""
    source = qwen3_tokenizer_dir()
    out = tmp_path / f"tok-{placement}"
    shutil.copytree(source, out)
    config = json.loads((out / "tokenizer_config.json").read_text())
    where = f"{out / 'tokenizer_config.json'}: chat_template"
    if placement == "config":
        config["chat_template"] = broken
    elif placement == "named":
        config["chat_template"] = [
            {"name": "default", "template": config["chat_template"]},
            {"name": "tool_use", "template": broken},
        ]
        where += " 'tool_use'"
    else:
        del config["chat_template"]
        (out / "chat_template.jinja").write_text(broken)
        where = str(out / "chat_template.jinja")
    (out / "tokenizer_config.json").write_text(json.dumps(config))
    return out, where


@pytest.mark.parametrize("placement", ["config", "named", "jinja-file"])
def test_tokenizer_template_with_a_syntax_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], placement: str
) -> None:
    rows = write_jsonl(tmp_path / "c.jsonl", ROWS)
    for k, (broken, line) in enumerate(_broken(_templates()["qwen3"])[::2]):
        tokenizer, where = _tokenizer_with(tmp_path / str(k), placement, broken)
        at = f"{where}:{line}" if placement == "jinja-file" else f"{where}, line {line}"
        for workers in ("1", "2"):
            out = tmp_path / f"out-{k}-{workers}"
            args = [
                str(rows),
                "--tokenizer",
                str(tokenizer),
                "--out",
                str(out),
                "-n",
                "64",
                "--workers",
                workers,
            ]
            code, err = _pack(args, capsys)
            assert code == 2 and err.count("\n") == 1, err
            assert err.startswith(f"error: {at}: Jinja syntax error in the chat template: "), err
            assert not out.exists()
        code = main(["plan", "--quiet", str(rows), "--tokenizer", str(tokenizer), "--pack-sizes", "64"])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith(f"error: {at}: ") and err.count("\n") == 1
