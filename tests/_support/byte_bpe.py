"""A small byte-level BPE tokenizer with a ChatML chat template, trained in the test on the test's texts.

Byte-level, like Qwen's and Llama 3's, so ``decode(encode(text)) == text`` for any text (markup, control
characters, Chinese) and masks can be checked against the exact characters of the input. Special tokens:
``<|endoftext|>`` (pad) = 0, ``<|im_start|>`` = 1, ``<|im_end|>`` = 2 (EOS, the template's end token).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_byte_bpe(texts: Iterable[str], out_dir: str | os.PathLike[str], vocab_size: int = 400) -> Path:
    """Train a byte-level BPE of ``vocab_size`` on ``texts`` and save it as a fast tokenizer directory."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token=SPECIALS[0], eos_token=SPECIALS[2], bos_token=None
    )
    fast.chat_template = CHATML_TEMPLATE
    path = Path(out_dir)
    fast.save_pretrained(os.fspath(path))
    return path
