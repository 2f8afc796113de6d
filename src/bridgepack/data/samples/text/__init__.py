"""Text records -> stored examples with a local Hugging Face tokenizer (one module per record shape, batched).

Two shapes of record, and how the loss mask is derived (documented in ``docs/pack.md``):

* **prompt-completion** (``input``/``output`` or ``prompt``/``completion`` rows): Bridge 0.6.2's examples --
  prompt and separator + completion tokenized separately without special tokens, ``[BOS] prompt [SEP] |
  completion [EOS]``, mask 0 left of ``|``; see :mod:`bridgepack.data.samples.text._prompt_completion`.
* **chat** (``messages`` / ``conversation`` / ``conversations`` rows): Bridge 0.6.2's examples -- each
  conversation rendered once with the chat template, nothing appended (the template's end token is the
  target), assistant-only loss by default; see :mod:`bridgepack.data.samples.text._chat._tokenize`.

Nothing is downloaded: the tokenizer is a local directory loaded with ``local_files_only=True``.

"""

from bridgepack.data.samples.text._chat._options import chat_options
from bridgepack.data.samples.text._chat._rows import CHAT_KEYS
from bridgepack.data.samples.text._convert import (
    check_templates,
    eos_disagreement,
    text_record,
    tokenize_chunk,
)
from bridgepack.data.samples.text._mode import PROMPT_COMPLETION, TOKEN_IDS, row_kind
from bridgepack.data.samples.text._prompt_completion import CANONICAL_FIELDS
from bridgepack.data.samples.text._settings import ResolvedText, TextOptions
from bridgepack.data.samples.text._tokenizer import load_tokenizer, tokenizer_eos_id, tokenizer_hash

__all__ = [
    "CANONICAL_FIELDS",
    "CHAT_KEYS",
    "PROMPT_COMPLETION",
    "TOKEN_IDS",
    "ResolvedText",
    "TextOptions",
    "chat_options",
    "check_templates",
    "eos_disagreement",
    "load_tokenizer",
    "row_kind",
    "text_record",
    "tokenize_chunk",
    "tokenizer_eos_id",
    "tokenizer_hash",
]
