"""What a text pack asks for: tokenizer, EOS, the record's fields and Bridge's preprocessing settings."""

from __future__ import annotations

import string
from dataclasses import dataclass, field, fields
from typing import Any

from bridgepack.errors import UsageError, param

#: ``PromptCompletionSFTPreprocessingConfig.loss_mode`` values (Bridge 0.6.2 ``data/sft_processing.py``).
PROMPT_COMPLETION_LOSS_MODES = ("completion", "full")
TRUNCATION_METHODS = ("left", "right")
#: ``ChatSFTPreprocessingConfig.loss_mode`` values (bridge-format §13).
CHAT_LOSS_MODES = ("assistant", "last_turn", "full")


@dataclass(frozen=True)
class ChatOptions:
    """Chat knobs besides ``loss_mode``: what Bridge's tokenizer and dataset configs pass to the template."""

    template: str | None = None  # TokenizerConfig.chat_template (the contents of --chat-template)
    tool_schemas: list[Any] | None = None  # dataset_kwargs.tool_schemas (--tool-schemas)
    compat: bool = False  # --bridge-compat: keep rows Bridge keeps silently (nothing supervised)
    template_path: str | None = None  # where ``template`` was read from, as given (messages name it)


@dataclass(frozen=True, kw_only=True)
class TextOptions:
    """The text settings a user chooses: which fields hold the text, and Bridge's preprocessing config.

    The prompt-completion settings mirror Bridge 0.6.2's ``PromptCompletionSFTPreprocessingConfig`` with the
    values its recipes use (``separator=" "``; the rest are the class defaults). ``prompt_field`` /
    ``completion_field`` left None are detected from the records (``input``/``output``, ...).
    """

    prompt_field: str | None = None
    completion_field: str | None = None
    messages_field: str = "messages"
    loss_mode: str | None = None  # None: the shape's default (completion / assistant)
    separator: str = " "
    prompt_template: str = "{prompt}"
    strip_whitespace: bool = True
    add_bos: bool = False
    add_sep: bool = False
    add_eos: bool = True
    truncation_method: str = "right"
    #: bridgepack's default mode: the texts that open and close an assistant turn (``--assistant-start`` /
    #: ``--assistant-end``), for a template bridgepack should not infer the turns of; both or neither.
    assistant_start: str | None = None
    assistant_end: str | None = None

    def check_chat(self) -> None:
        """Usage error where Bridge's ``ChatSFTPreprocessingConfig.validate`` raises, and for explicit
        assistant markers given alone."""
        if (self.assistant_start is None) != (self.assistant_end is None):
            raise UsageError(f"{param('assistant_start')} and {param('assistant_end')} go together")
        if self.loss_mode is not None and self.loss_mode not in CHAT_LOSS_MODES:
            raise UsageError(
                f"{param('loss_mode')} for chat must be one of {', '.join(CHAT_LOSS_MODES)}, "
                f"got {self.loss_mode!r}"
            )

    def check_prompt_completion(self) -> None:
        """Usage errors where Bridge's ``PromptCompletionSFTPreprocessingConfig.validate`` raises."""
        if self.prompt_field == self.completion_field:
            raise UsageError(f"{param('prompt_field')} and {param('completion_field')} must differ")
        if self.assistant_start is not None or self.assistant_end is not None:
            raise UsageError(
                f"{param('assistant_start')}/{param('assistant_end')} mark assistant turns of chat rows; "
                "these are prompt-completion rows"
            )
        if self.loss_mode is not None and self.loss_mode not in PROMPT_COMPLETION_LOSS_MODES:
            raise UsageError(
                f"{param('loss_mode')} for prompt-completion must be one of "
                f"{', '.join(PROMPT_COMPLETION_LOSS_MODES)}, got {self.loss_mode!r}"
            )
        if self.truncation_method not in TRUNCATION_METHODS:
            raise UsageError(
                f"{param('truncation_method')} must be left or right, got {self.truncation_method!r}"
            )
        try:
            parsed = string.Formatter().parse(self.prompt_template)
            placeholders = [name for _, name, _, _ in parsed if name is not None]
            self.prompt_template.format(prompt="")
        except (IndexError, KeyError, ValueError):
            placeholders = ["?"]
        if not placeholders or any(name != "prompt" for name in placeholders):
            raise UsageError(
                f"{param('prompt_template')} must contain {{prompt}} and no other placeholder, "
                f"got {self.prompt_template!r}"
            )


@dataclass(frozen=True)
class ResolvedText(TextOptions):
    """How to turn text records into stored examples: the user's :class:`TextOptions` and what the run
    resolved (tokenizer, EOS, the record's fields, the chat files' contents).

    ``max_length`` is set in ``--bridge-compat`` only: the stored length Bridge truncates a long row to (spec
    §13); the default mode leaves long rows whole for ``--too-long``.
    """

    tokenizer: str
    eos_id: int
    max_length: int | None = None
    #: compat: a row with the prompt field but no completion field gets an empty completion, as Bridge's
    #: packing does (``tokenize_dataset`` builds its dataset with ``is_test=True``); the default refuses it.
    allow_missing_completion: bool = False
    chat: ChatOptions = field(default_factory=ChatOptions)
    #: The row whose kind decided the text mode (``a.jsonl:1``); every row of another kind is refused
    #: (:mod:`bridgepack.data.samples.text._mode`). ``None``: the mode was given (``--prompt-field``), not
    #: read.
    mode_from: str | None = None

    @classmethod
    def of(cls, options: TextOptions, tokenizer: str, eos_id: int, **resolved: Any) -> ResolvedText:
        """``options`` with what the run resolved (``prompt_field=`` detected, ``chat=``, ...) on top."""
        chosen = {f.name: getattr(options, f.name) for f in fields(TextOptions)}
        return cls(tokenizer, eos_id, **{**chosen, **resolved})

    @property
    def is_chat(self) -> bool:
        return self.prompt_field is None
