"""The toy tokenizer: word-level by default, one token per digit with ``split_digits``."""

from __future__ import annotations

from pathlib import Path

from bridgepack.demo import build_tokenizer

TEXTS = ["406 plus 199 is 605 .", "Sort these numbers : 43 7"]


def _tokens(path: Path, text: str) -> list[str]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    return list(tok.convert_ids_to_tokens(tok(text, add_special_tokens=False)["input_ids"]))


def test_numbers_are_words_by_default(tmp_path: Path) -> None:
    path = build_tokenizer(TEXTS, tmp_path / "words")
    assert _tokens(path, "406 plus 199") == ["406", "plus", "199"]


def test_split_digits_gives_one_token_per_digit(tmp_path: Path) -> None:
    path = build_tokenizer(TEXTS, tmp_path / "digits", split_digits=True)
    assert _tokens(path, "406 plus 199") == ["4", "0", "6", "plus", "1", "9", "9"]
    # Numbers never seen whole still tokenize without <unk>.
    assert _tokens(path, "9046") == ["9", "0", "4", "6"]
