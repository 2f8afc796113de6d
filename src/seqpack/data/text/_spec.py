"""What a text pack asks for: tokenizer, EOS, the record's fields and the chat settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Bridge 0.6.2's ``ChatSFTPreprocessingConfig.loss_mode`` values (spec §13).
LOSS_MODES = ("assistant", "last_turn", "full")


@dataclass(frozen=True)
class ChatOptions:
    """Chat settings: Bridge's ``ChatSFTPreprocessingConfig`` and the tokenizer/dataset knobs it reads."""

    template: str | None = None  # TokenizerConfig.chat_template (the contents of --chat-template)
    tool_schemas: list[Any] | None = None  # dataset_kwargs.tool_schemas (--tool-schemas)
    loss_mode: str = "assistant"
    compat: bool = False  # --bridge-compat: keep rows Bridge keeps silently (nothing supervised)


@dataclass(frozen=True)
class TextSpec:
    """How to turn text records into stored examples."""

    tokenizer: str
    eos_id: int
    prompt_field: str | None = None
    completion_field: str | None = None
    messages_field: str = "messages"
    chat: ChatOptions = field(default_factory=ChatOptions)

    @property
    def is_chat(self) -> bool:
        return self.prompt_field is None
