"""Text input with a local tokenizer (built here): prompt-completion and chat masks, token by token."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _support.pack_inputs import read_rows, run, write_jsonl
from bridgepack.data.samples import iter_chunks
from bridgepack.data.samples.text import ResolvedText, tokenize_chunk
from bridgepack.demo import build_tokenizer

TEXTS = ["what is two plus two ?", "it is four .", "hello there", "hi , how can I help ?", "be brief ."]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tokenizer(TEXTS, tmp_path_factory.mktemp("tok") / "toy")


@pytest.fixture(scope="module")
def tok(tokenizer_dir: Path) -> object:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=True)


def stored(path: Path, spec: ResolvedText) -> list[tuple[list[int], list[int]]]:
    out = []
    for chunk in iter_chunks([path]):
        ex = tokenize_chunk(str(path), chunk, spec)
        ends = np.cumsum(ex.lengths)
        for a, b in zip(ends - ex.lengths, ends, strict=True):
            out.append((ex.tokens[a:b].tolist(), ex.mask[a:b].tolist()))
    return out


def test_prompt_completion_mask(tmp_path: Path, tokenizer_dir: Path, tok: object) -> None:
    rows = [{"q": "what is two plus two ?", "a": "it is four ."}, {"q": "hello", "a": "hi"}]
    source = write_jsonl(tmp_path / "pc.jsonl", rows)
    eos = tok.eos_token_id  # type: ignore[attr-defined]
    got = stored(source, ResolvedText(str(tokenizer_dir), eos, prompt_field="q", completion_field="a"))
    for row, (ids, mask) in zip(rows, got, strict=True):
        prompt = tok(row["q"])["input_ids"]  # type: ignore[operator]
        answer = tok(row["a"], add_special_tokens=False)["input_ids"]  # type: ignore[operator]
        assert ids == [*prompt, *answer, eos]
        assert mask == [0] * len(prompt) + [1] * (len(answer) + 1)


def test_chat_mask_covers_assistant_turns_only(tmp_path: Path, tokenizer_dir: Path, tok: object) -> None:
    messages = [
        {"role": "system", "content": "be brief ."},
        {"role": "user", "content": "what is two plus two ?"},
        {"role": "assistant", "content": "it is four ."},
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "hi , how can I help ?"},
    ]
    source = write_jsonl(tmp_path / "chat.jsonl", [{"messages": messages}])
    eos = tok.eos_token_id  # type: ignore[attr-defined]
    [(ids, mask)] = stored(source, ResolvedText(str(tokenizer_dir), eos))
    expected_ids: list[int] = []
    expected_mask: list[int] = []
    for turn in messages:
        role = tok.convert_tokens_to_ids(f"<|{turn['role']}|>")  # type: ignore[attr-defined]
        words = tok(turn["content"], add_special_tokens=False)["input_ids"]  # type: ignore[operator]
        supervised = int(turn["role"] == "assistant")
        expected_ids += [role, *words, eos]
        expected_mask += [0] + [supervised] * (len(words) + 1)
    assert ids == expected_ids
    assert mask == expected_mask


def prompt_completion_args(
    source: Path, out: Path, tokenizer_dir: Path, workers: str, chunk_rows: str | None
) -> list[str]:
    """``bridgepack pack`` arguments for prompt-completion JSONL into packs of 64 (``chunk_rows=None``: the
    default)."""
    args = [str(source), "--out", str(out), "--pack-size", "64", "--tokenizer", str(tokenizer_dir)]
    args += ["--prompt-field", "prompt", "--completion-field", "completion", "--workers", workers]
    return args if chunk_rows is None else [*args, "--chunk-rows", chunk_rows]


def random_prompt_completions(path: Path, n: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    rows = [
        {"prompt": " ".join(rng.choice(TEXTS, 2)), "completion": " ".join(rng.choice(TEXTS, int(k)))}
        for k in rng.integers(1, 6, n)
    ]
    return write_jsonl(path, rows)


def packed_bytes(
    args: list[str], out: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> bytes:
    """The packed file ``bridgepack pack args`` writes (the run id, drawn afresh per run, held fixed)."""
    monkeypatch.setattr("bridgepack.data.pipeline._run.new_run_id", lambda: "0" * 32)
    code, _, err = run(args, capsys)
    assert code == 0, err
    return (out / "training_64.idx.parquet").read_bytes()


def test_cli_text_workers_give_identical_bytes(
    tmp_path: Path, tokenizer_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = random_prompt_completions(tmp_path / "pc.jsonl", 120, seed=0)
    outputs = []
    for workers in ("1", "2"):  # 16-row chunks: two workers really share it
        out = tmp_path / f"out{workers}"
        args = prompt_completion_args(source, out, tokenizer_dir, workers=workers, chunk_rows="16")
        outputs.append(packed_bytes(args, out, capsys, monkeypatch))
    assert outputs[0] == outputs[1]
    assert (
        sum(len(r["seq_start_id"]) for r in read_rows(tmp_path / "out1" / "training_64.idx.parquet")) == 120
    )


def test_worker_error_names_row(
    tmp_path: Path, tokenizer_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"prompt": "hello", "completion": "hi"}] * 30 + [{"prompt": "hello"}]
    source = write_jsonl(tmp_path / "pc.jsonl", rows)
    out = tmp_path / "out"
    args = prompt_completion_args(source, out, tokenizer_dir, workers="2", chunk_rows="8")
    code, _, err = run(args, capsys)
    assert code == 1 and "pc.jsonl:31: field 'completion': missing" in err
    assert not out.exists()  # a failed run removes the folder it made


def test_killed_worker_fails_with_its_range(
    tmp_path: Path, tokenizer_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from bridgepack.data.samples import _ingest

    real = _ingest.tokenize_chunk

    def dies_on_second_chunk(path: str, chunk: object, spec: object) -> object:
        if int(chunk.locs[0]) > 8:  # type: ignore[attr-defined]
            os._exit(9)  # a worker killed mid-chunk (the fork start method inherits this patch)
        return real(path, chunk, spec)  # type: ignore[arg-type]

    monkeypatch.setattr(_ingest, "tokenize_chunk", dies_on_second_chunk)
    source = write_jsonl(tmp_path / "pc.jsonl", [{"prompt": "hello", "completion": "hi"}] * 20)
    out = tmp_path / "out"
    args = prompt_completion_args(source, out, tokenizer_dir, workers="2", chunk_rows="8")
    code, _, err = run(args, capsys)
    # The samples in flight when the worker died are named (which chunk killed it is not knowable).
    assert code == 1 and "a worker process died while converting these samples" in err
    assert f"{source} lines " in err
    assert not out.exists()  # a failed run removes the folder it made


def test_text_chunks_default_smaller_than_token_id_chunks() -> None:
    from bridgepack.data.samples import chunk_rows_for
    from bridgepack.data.samples._ingest import TEXT_CHUNK_ROWS
    from bridgepack.data.samples._readers import DEFAULT_CHUNK_ROWS

    spec = ResolvedText("tok", 0)
    assert (chunk_rows_for(None, None), chunk_rows_for(spec, None)) == (DEFAULT_CHUNK_ROWS, TEXT_CHUNK_ROWS)
    assert TEXT_CHUNK_ROWS < DEFAULT_CHUNK_ROWS
    assert (chunk_rows_for(spec, 7), chunk_rows_for(None, 7)) == (7, 7)  # --chunk-rows wins


def test_text_default_chunking_gives_the_bytes_of_any_other(
    tmp_path: Path, tokenizer_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """600 text rows: the default (256-row chunks, three of them over two workers) and 1024-row chunks."""
    source = random_prompt_completions(tmp_path / "pc.jsonl", 600, seed=1)
    outputs = []
    for chunk_rows in (None, "1024"):
        out = tmp_path / f"out{chunk_rows}"
        args = prompt_completion_args(source, out, tokenizer_dir, workers="2", chunk_rows=chunk_rows)
        outputs.append(packed_bytes(args, out, capsys, monkeypatch))
    assert outputs[0] == outputs[1]
