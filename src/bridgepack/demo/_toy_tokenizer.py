"""A tiny word-level tokenizer built from a few texts, saved as a real ``PreTrainedTokenizerFast`` directory.

Tests and the demo need a tokenizer that loads with ``AutoTokenizer.from_pretrained(path,
local_files_only=True)`` exactly like a user's, without downloading one. Words and punctuation are
tokens; ``<pad>`` = 0, ``<unk>`` = 1, ``<eos>`` = 2, ``<bos>`` = 3. The chat template renders each turn as
``<|role|> content<eos>`` (the EOS closes assistant answers, so it is supervised there: the template marks
assistant text with ``{% generation %}``, which is how Bridge 0.6.2 finds it in a template of no known
family) and the generation prompt as ``<|assistant|>``::

    <|user|> hi there<eos><|assistant|> hello<eos>

With ``split_digits=True`` every digit is its own token (``"406"`` -> ``4 0 6``), as in Llama's tokenizer:
the vocabulary stays small and a tiny model can learn number patterns digit by digit instead of meeting
each number as a rare word (the demo uses this).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

PAD, UNK, EOS, BOS = "<pad>", "<unk>", "<eos>", "<bos>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> "
    "{% if message['role'] == 'assistant' %}{% generation %}{{ message['content'] }}<eos>{% endgeneration %}"
    "{% else %}{{ message['content'] }}<eos>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tokenizer(
    texts: Iterable[str], out_dir: str | os.PathLike[str], *, split_digits: bool = False
) -> Path:
    """Train a word-level vocabulary on ``texts`` and save a fast tokenizer directory at ``out_dir``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(unk_token=UNK))
    steps = [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    if split_digits:
        steps.append(pre_tokenizers.Digits(individual_digits=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(steps)
    trainer = trainers.WordLevelTrainer(special_tokens=[PAD, UNK, EOS, BOS, *ROLE_TOKENS])
    tokenizer.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token=PAD, unk_token=UNK, eos_token=EOS, bos_token=BOS
    )
    fast.chat_template = CHAT_TEMPLATE
    path = Path(out_dir)
    fast.save_pretrained(os.fspath(path))
    return path
