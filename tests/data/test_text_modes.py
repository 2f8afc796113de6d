"""Prompt-completion text in the default mode vs ``--bridge-compat``: the enumerated differences
(docs/pack.md, "Tokenization contract"), each checked on real files through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _support.pack_inputs import read_rows, run, write_jsonl
from bridgepack.cli import main
from bridgepack.demo import build_tokenizer

WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tokenizer(WORDS, tmp_path_factory.mktemp("tok") / "words")


def pack(source: Path, out: Path, tokenizer: Path, *extra: str) -> list[str]:
    args = [str(source), "--out", str(out), "--pack-size", "16", "--tokenizer", str(tokenizer)]
    return [*args, "--prompt-field", "input", "--completion-field", "output", "--workers", "1", *extra]


def outcome(out: Path) -> tuple[list[dict[str, list[int]]], list[dict[str, object]], dict[str, object]]:
    rows = read_rows(out / "training_16.idx.parquet")
    rejects = [json.loads(line) for line in (out / "rejects_training_16.jsonl").read_text().splitlines()]
    record = json.loads((out / "16_metadata.jsonl").read_text())[0]["bridgepack"]
    return rows, rejects, record


def test_long_row_rejected_by_default_truncated_in_compat(
    tmp_path: Path, tokenizer_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Default: a row longer than the max follows --too-long (reject); compat: Bridge's truncation (prompt
    first, EOS kept) to the max length, and the rejects file says so."""
    long = {"input": " ".join(WORDS * 2), "output": "one two"}  # 20 + 2 + EOS = 23 stored tokens
    source = write_jsonl(tmp_path / "pc.jsonl", [{"input": "one", "output": "two"}, long])
    code, _, err = run(pack(source, tmp_path / "default", tokenizer_dir), capsys)
    assert code == 0, err
    rows, rejects, record = outcome(tmp_path / "default")
    assert [r["input_ids"] for r in rows] and sum(len(r["input_ids"]) for r in rows) == 3
    assert [(r["line"], r["action"]) for r in rejects] == [(2, "rejected (not packed)")]
    assert record["counts"]["rejected"] == 1 and record["text"]["truncate_to"] is None

    code, _, err = run(pack(source, tmp_path / "compat", tokenizer_dir, "--bridge-compat"), capsys)
    assert code == 0, err
    rows, rejects, record = outcome(tmp_path / "compat")
    ids = sorted((r["input_ids"] for r in rows), key=len)[-1]
    eos = ids[-1]
    # 16 stored tokens: 13 prompt words kept of 20, the 2-word completion and the EOS.
    assert len(ids) == 16 and ids[13:15] == ids[:2] and ids[-1] == eos
    assert [(r["line"], r["length"]) for r in rejects] == [(2, 22)]
    assert rejects[0]["action"] == "truncated to 15 runtime tokens while tokenizing, as Bridge does"
    assert record["counts"]["truncated"] == 1 and record["text"]["truncate_to"] == 16


def test_compat_seed_defaults_to_bridges(
    tmp_path: Path, tokenizer_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = write_jsonl(tmp_path / "pc.jsonl", [{"input": "one", "output": "two"}] * 3)
    for mode, extra, seed in (("default", (), 0), ("compat", ("--bridge-compat",), 5678)):
        code, _, err = run(pack(source, tmp_path / mode, tokenizer_dir, *extra), capsys)
        assert code == 0, err
        assert outcome(tmp_path / mode)[2]["seed"] == seed
    args = pack(source, tmp_path / "given", tokenizer_dir, "--bridge-compat", "--seed", "1234")
    code, _, err = run(args, capsys)
    assert code == 0, err
    assert outcome(tmp_path / "given")[2]["seed"] == 1234
    monkeypatch.setenv("COLUMNS", "400")  # one help line per option
    assert main(["pack", "--help"]) == 0
    assert (
        "Bridge's GPTSFTDatasetConfig.seed. With --bridge-compat the default is 5678"
        in capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--loss-mode", "assistant"), "--loss-mode for prompt-completion must be one of completion, full"),
        (("--prompt-template", "Q: {question}"), "--prompt-template must contain {prompt}"),
        (("--truncation-method", "middle"), "--truncation-method must be left or right"),
    ],
)
def test_bad_settings_are_usage_errors(
    tmp_path: Path,
    tokenizer_dir: Path,
    capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
    message: str,
) -> None:
    source = write_jsonl(tmp_path / "pc.jsonl", [{"input": "one", "output": "two"}])
    code, _, err = run(pack(source, tmp_path / "out", tokenizer_dir, *extra), capsys)
    assert code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize("fields", [("input", "output"), ("prompt", "completion")])
def test_prompt_completion_fields_are_recognised(
    tmp_path: Path, tokenizer_dir: Path, capsys: pytest.CaptureFixture[str], fields: tuple[str, str]
) -> None:
    """Bridge's local JSONL (input/output) and its canonical pair are recognised without field options."""
    source = write_jsonl(tmp_path / "pc.jsonl", [{fields[0]: "one two", fields[1]: "three"}])
    args = [str(source), "--out", str(tmp_path / "out"), "--pack-size", "16"]
    args += ["--tokenizer", str(tokenizer_dir)]
    code, _, err = run(args, capsys)
    assert code == 0, err
    rows, _, record = outcome(tmp_path / "out")
    assert record["text"]["format"] == "prompt_completion"
    assert (record["text"]["prompt_field"], record["text"]["completion_field"]) == fields
    assert [len(r["loss_mask"]) for r in rows] == [4] and rows[0]["loss_mask"][:3] == [0, 1, 1]


def test_missing_completion_refused_by_default_empty_in_compat(
    tmp_path: Path, tokenizer_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "pc.jsonl", [{"input": "one", "output": "two"}, {"input": "three"}])
    code, _, err = run(pack(source, tmp_path / "default", tokenizer_dir), capsys)
    assert code == 1 and "pc.jsonl:2: field 'output': missing" in err
    code, _, err = run(pack(source, tmp_path / "compat", tokenizer_dir, "--bridge-compat"), capsys)
    assert code == 0, err
    rows, rejects, record = outcome(tmp_path / "compat")
    assert record["counts"]["packed"] == 2 and rejects == []
    assert sorted(len(r["input_ids"]) for r in rows) == [5]  # [one two EOS] + [three EOS] in one pack
