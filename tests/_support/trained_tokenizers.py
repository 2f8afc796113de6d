"""Tokenizers of the other common kinds, trained in the test on the test's texts (the real Qwen3 and Llama 3.2
ones are both byte-level BPE and space-sensitive, so they never reach Bridge's other branches).

* :func:`build_wordpiece` -- BERT-style WordPiece: lower-cased, split at spaces and punctuation, so **not
  space-sensitive** (``"x y"`` is ``"x"`` + ``"y"``: Bridge drops the separator's leading space); ``[CLS]``
  and ``[SEP]`` but **no BOS and no EOS** (Megatron-Core's tokenizer uses ``[SEP]`` as the EOS and
  ``[CLS]`` as the BOS).
* :func:`build_metaspace_bpe` -- SentencePiece-style BPE as Llama 2 and Mistral ship it (``▁`` for spaces,
  one prepended to every text, byte fallback for unseen characters), ``<s>``/``</s>``, and ``<|im_start|>``/
  ``<|im_end|>`` with a ChatML chat template.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from _support.byte_bpe import CHATML_TEMPLATE


def _save(tokenizer: Any, out_dir: str | os.PathLike[str], config: dict[str, Any]) -> Path:
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path / "tokenizer.json"))
    (path / "tokenizer_config.json").write_text(json.dumps(config))
    return path


def build_wordpiece(texts: Iterable[str], out_dir: str | os.PathLike[str], vocab_size: int = 500) -> Path:
    """A BERT-style WordPiece directory (see the module docstring); unseen characters become ``[UNK]``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    tokenizer.train_from_iterator(list(texts), trainer=trainer)
    config = {"tokenizer_class": "BertTokenizer", "do_lower_case": True, "unk_token": "[UNK]"}
    config |= {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]"}
    return _save(tokenizer, out_dir, config)


def build_metaspace_bpe(texts: Iterable[str], out_dir: str | os.PathLike[str], vocab_size: int = 500) -> Path:
    """A SentencePiece-style BPE directory with a ChatML template (see the module docstring)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, trainers

    specials = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
    tokenizer = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=[f"<0x{i:02X}>" for i in range(256)],
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(texts), trainer=trainer)
    config = {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>"}
    config |= {"unk_token": "<unk>", "legacy": False, "chat_template": CHATML_TEMPLATE}
    return _save(tokenizer, out_dir, config)
