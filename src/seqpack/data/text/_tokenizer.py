"""Loading a local Hugging Face tokenizer and fingerprinting it (nothing is ever downloaded)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from seqpack.errors import InputError

_TOKENIZERS: dict[str, Any] = {}


def load_tokenizer(path: Path) -> Any:
    """A fast tokenizer from a local directory (cached per process); an InputError if it cannot load."""
    key = os.fspath(path)
    if key in _TOKENIZERS:
        return _TOKENIZERS[key]
    if not path.is_dir():
        raise InputError(f"{key}: tokenizer directory does not exist")
    try:
        from transformers import AutoTokenizer
    except ImportError:  # pragma: no cover - optional extra
        raise InputError("text input needs `pip install seqpack[text]` (transformers, tokenizers)") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(key, local_files_only=True)
    except Exception as exc:
        raise InputError(f"{key}: cannot load a tokenizer ({type(exc).__name__}: {str(exc)[:160]})") from None
    if not getattr(tokenizer, "is_fast", False):
        raise InputError(f"{key}: not a fast tokenizer (character offsets are needed for loss masks)")
    _TOKENIZERS[key] = tokenizer
    return tokenizer


def tokenizer_hash(path: Path) -> str:
    """SHA-256 over the tokenizer directory's files (names and bytes), so packs record what made them."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        digest.update(file.read_bytes())
    return digest.hexdigest()
