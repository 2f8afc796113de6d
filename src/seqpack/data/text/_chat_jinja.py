"""The chat template rendered as ``apply_chat_template(tokenize=False)`` does, with less overhead per call.

Rendering is most of a chat chunk's cost, and most of that is Jinja's sandbox deciding, on every attribute a
template reads (``message.content.startswith``, ...), whether the attribute is safe. That decision depends
only on the object's type and the attribute's name (Jinja 3.1's ``SandboxedEnvironment`` and
``ImmutableSandboxedEnvironment``), so it is remembered per (type, name) in an overlay of the very
environment transformers compiled the template in (same filters, globals, extensions and sandbox). The
messages go through transformers' own preparation helpers, in the order ``apply_chat_template`` applies them.

Anything unexpected (a transformers without those helpers, a template that differs from its own render on
the first conversation seen, tools that are not a list of dicts, an exception) falls back to
``apply_chat_template`` itself, so the texts and the exceptions are always the tokenizer's.
"""

from __future__ import annotations

from typing import Any

_CACHE: dict[tuple[int, str], Any] = {}


class FastTemplate:
    """``render(conversation, tools)`` -> the text ``apply_chat_template`` gives (no generation prompt)."""

    def __init__(self, tokenizer: Any, template: str) -> None:
        from transformers.utils import chat_template_utils as helpers

        self._helpers = helpers
        compiled = helpers._compile_jinja_template(template)
        env = compiled.environment.overlay()
        decide = compiled.environment.is_safe_attribute
        known: dict[tuple[type, str], bool] = {}

        def is_safe_attribute(obj: Any, attr: str, value: Any) -> bool:
            key = (type(obj), attr)
            safe = known.get(key)
            if safe is None:
                safe = known[key] = bool(decide(obj, attr, value))
            return safe

        env.is_safe_attribute = is_safe_attribute
        self._template = env.from_string(template)
        self._kwargs = helpers._plain_template_data(dict(tokenizer.special_tokens_map))

    def render(self, conversation: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        h = self._helpers
        chat = h._alias_reasoning_fields(h._plain_template_data(h._normalize_chat_messages(conversation)))
        schemas = None if tools is None else h._plain_template_data(list(tools))
        return str(
            self._template.render(
                messages=chat, tools=schemas, documents=None, add_generation_prompt=False, **self._kwargs
            )
        )


def fast_template(tokenizer: Any, template: str) -> FastTemplate | None:
    """A :class:`FastTemplate` for ``template`` (cached per process), or ``None`` when this transformers
    lacks the helpers it relies on."""
    key = (id(tokenizer), template)
    if key not in _CACHE:
        try:
            _CACHE[key] = FastTemplate(tokenizer, template)
        except (ImportError, AttributeError, TypeError):
            _CACHE[key] = None
    return _CACHE[key]
