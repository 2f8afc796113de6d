"""Loading a local Hugging Face tokenizer and hashing its files (nothing is ever downloaded)."""

from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from bridgepack._io import DIRECTORY, TOKENIZER_DIRECTORY, expect_kind
from bridgepack.data.samples.text._tokenizer_proof import prove_real
from bridgepack.errors import InputError

_TOKENIZERS: dict[str, Any] = {}


def load_tokenizer(path: Path) -> Any:
    """A fast tokenizer from a local directory (cached per process); an InputError if it cannot load, or if
    what transformers built is not the tokenizer the directory's files declare (:func:`prove_real`: a
    directory without a vocabulary still loads, as a tokenizer that drops every word)."""
    key = os.fspath(path)
    if key in _TOKENIZERS:
        return _TOKENIZERS[key]
    expect_kind(path, DIRECTORY, TOKENIZER_DIRECTORY)
    if not path.is_dir():
        raise InputError(f"{key}: tokenizer directory does not exist")
    try:
        import transformers
    except ImportError:  # pragma: no cover - optional extra
        raise InputError(
            "text input needs `pip install bridgepack[text]` (transformers, tokenizers)"
        ) from None
    try:
        cls = _auto_class(transformers, path)
        if cls is None:
            cls = transformers.AutoTokenizer
        tokenizer = cls.from_pretrained(key, local_files_only=True)
    except Exception as exc:
        raise InputError(f"{key}: cannot load a tokenizer ({type(exc).__name__}: {str(exc)[:160]})") from None
    if not getattr(tokenizer, "is_fast", False):
        raise InputError(f"{key}: not a fast tokenizer (character offsets are needed for loss masks)")
    prove_real(path, tokenizer)
    _TOKENIZERS[key] = tokenizer
    return tokenizer


#: ``tokenizer_class`` of a ``tokenizer_config.json`` -> the class transformers 5's ``AutoTokenizer`` loads
#: for it from a directory without ``config.json`` or ``auto_map`` (its dispatch strips "Fast", and swaps
#: the Python backend that ``PreTrainedTokenizer`` names for the Rust one). Asserted against AutoTokenizer.
AUTO_CLASSES = {
    "Qwen2Tokenizer": "Qwen2Tokenizer",
    "Qwen2TokenizerFast": "Qwen2Tokenizer",
    "PreTrainedTokenizerFast": "TokenizersBackend",
    "TokenizersBackend": "TokenizersBackend",
}


def _auto_class(transformers: Any, path: Path) -> Any:
    """The class ``AutoTokenizer.from_pretrained(path)`` would instantiate, where that is certain without it
    (else ``None``: ``AutoTokenizer`` decides). Why: importing ``AutoTokenizer`` imports transformers' model
    config machinery and, through it, torch -- over a second of every fresh process's start, for nothing a
    tokenizer uses. Same class, same ``from_pretrained`` arguments: the same tokenizer (Bridge's ids)."""
    if not str(transformers.__version__).startswith("5.") or (path / "config.json").exists():
        return None
    try:
        config = orjson.loads((path / "tokenizer_config.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    named = config.get("tokenizer_class") if isinstance(config, dict) and "auto_map" not in config else None
    name = AUTO_CLASSES.get(named) if isinstance(named, str) else None
    return None if name is None else getattr(transformers, name, None)


def tokenizer_hash(path: Path) -> str:
    """SHA-256 over the tokenizer directory's files (names and bytes), so packs record what made them."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        digest.update(file.read_bytes())
    return digest.hexdigest()


#: Special tokens whose ids never carry loss (Bridge 0.6.2 ``data/token_utils.py:PAD_TOKENS``: pad, header and
#: vision tokens of Qwen, LLaVA, Llama, Gemma; turn terminators are deliberately absent).
BRIDGE_SKIPPED_TOKENS = frozenset(
    (
        "<|im_start|>",
        "<|vision_start|>",
        "<|vision_end|>",
        "<|vision_pad|>",
        "<|image_pad|>",
        "<|video_pad|>",
        "<|AUDIO|>",
        "<|audio_bos|>",
        "<|audio_eos|>",
        "<image>",
        "<pad>",
        "<|begin_of_text|>",
        "<|finetune_right_pad_id|>",
        "<|step_id|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|python_tag|>",
        "<|image|>",
        "<image_soft_token>",
        "<audio_soft_token>",
        "<start_of_audio>",
        "<start_of_image>",
        "<end_of_audio>",
        "<end_of_image>",
    )
)


def skipped_token_ids(tokenizer: Any) -> np.ndarray:
    """Ids of the tokenizer's added tokens in :data:`BRIDGE_SKIPPED_TOKENS` (mask 0 wherever they occur).

    Bridge's ``extract_skipped_token_ids``: e.g. Llama 3's ``<|begin_of_text|>`` (128000) and header tokens,
    Qwen's ``<|im_start|>`` (151644).
    """
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    ids = sorted(int(key) for key, token in decoder.items() if str(token) in BRIDGE_SKIPPED_TOKENS)
    return np.asarray(ids, dtype=np.int64)


def special_token_id(tokenizer: Any, name: str) -> int | None:
    """The BOS / SEP / EOS id Bridge's tokenizer reports: Megatron-Core 0.19's ``HuggingFaceTokenizer`` fills
    a missing SEP with the EOS (and EOS with SEP), a missing BOS with the CLS token. So Qwen3's SEP is
    ``<|im_end|>`` (151645) and Llama 3.2's ``<|end_of_text|>`` (128001), though neither tokenizer has one."""
    fallback = {"bos": "cls", "sep": "eos", "eos": "sep"}[name]
    for candidate in (name, fallback):
        value = getattr(tokenizer, f"{candidate}_token_id", None)
        if value is not None:
            return int(value)
    return None


def tokenizer_eos_id(path: Path) -> int | None:
    """The EOS id of the tokenizer at ``path`` as Bridge's tokenizer reports it (``None``: it has none).

    One answer for every reader of a tokenizer's EOS (pack, inspect, doctor): Megatron-Core's
    ``HuggingFaceTokenizer`` falls back to the SEP token when there is no EOS (a BERT-style ``[SEP]``), and
    Bridge pads and ends examples with that id, so bridgepack does too."""
    return special_token_id(load_tokenizer(path), "eos")


def encodings(tokenizer: Any, texts: list[str]) -> list[Any]:
    """The tokenizer's encodings of ``texts`` (no special tokens added), in one batched call.

    Through the Rust backend when it holds no truncation or padding of its own (the Python wrapper would
    switch them off for the call): the same ids without the wrapper's per-row conversion (~10 % of it)."""
    backend = tokenizer.backend_tokenizer
    if backend.truncation is None and backend.padding is None:
        return list(backend.encode_batch(texts, add_special_tokens=False))
    return list(tokenizer(texts, add_special_tokens=False).encodings)


def is_space_sensitive(tokenizer: Any) -> bool:
    """Whether a leading space changes tokenization: ``"x y"`` is not ``"x"`` + ``"y"`` (Bridge's
    ``_is_space_sensitive``). Decides whether the separator's leading space is kept (bridge-format §13)."""
    encode = tokenizer.encode
    return encode("x y", add_special_tokens=False) != [
        *encode("x", add_special_tokens=False),
        *encode("y", add_special_tokens=False),
    ]


def library_versions() -> dict[str, str]:
    """transformers / tokenizers / jinja2 versions: the same ids need the same libraries (metadata record)."""
    versions = {}
    for name in ("transformers", "tokenizers", "jinja2"):
        try:
            versions[name] = str(importlib.import_module(name).__version__)
        except ImportError:  # pragma: no cover - text input needs all three
            versions[name] = "missing"
    return versions
