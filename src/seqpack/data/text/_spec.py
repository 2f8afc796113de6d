"""What a text pack asks for: tokenizer, EOS and the record's fields."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TextSpec:
    """How to turn text records into stored examples."""

    tokenizer: str
    eos_id: int
    prompt_field: str | None = None
    completion_field: str | None = None
    messages_field: str = "messages"

    @property
    def is_chat(self) -> bool:
        return self.prompt_field is None
