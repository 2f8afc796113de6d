"""The chat template rendered as ``apply_chat_template(tokenize=False)`` does, with less overhead per call.

Rendering is most of a chat chunk's cost, and most of that is Jinja's sandbox deciding, on every attribute a
template reads (``message.content.startswith``, ...), whether the attribute is safe. That decision depends
only on the object's type and the attribute's name (Jinja 3.1's ``SandboxedEnvironment`` and
``ImmutableSandboxedEnvironment``), so it is remembered per (type, name) in an overlay of the very
environment transformers compiled the template in (same filters, globals, extensions and sandbox); a dict's
keys read as attributes (``message.role``) are looked up directly rather than through a failed attribute
lookup. The messages go through transformers' own preparation helpers, in the order ``apply_chat_template``
applies them (one message at a time, each once: a prefix render reuses them).

Anything unexpected (a transformers without those helpers, a template that differs from its own render on
the first conversation seen, tools that are not a list of dicts, an exception) falls back to
``apply_chat_template`` itself, so the texts and the exceptions are always the tokenizer's.
"""

from __future__ import annotations

from typing import Any

_CACHE: dict[tuple[int, str], Any] = {}
_DICT_ATTRIBUTES = frozenset(dir(dict))


class FastTemplate:
    """``render([prepare(m) for m in conversation], tools)`` -> the text ``apply_chat_template`` gives (with
    the generation prompt when ``generation_prompt``)."""

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

        sandboxed_getattr = env.getattr
        undefined = env.undefined

        def getattr_(obj: Any, attribute: str) -> Any:
            # ``message.role`` on a dict: the sandbox first tries the attribute, which a dict has only for
            # its methods' names, and catches the AttributeError; the item is what it then returns.
            if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
                try:
                    return obj[attribute]
                except LookupError:
                    return undefined(obj=obj, name=attribute)
            return sandboxed_getattr(obj, attribute)

        env.is_safe_attribute = is_safe_attribute
        env.getattr = getattr_
        self._template = env.from_string(template)
        self._kwargs = helpers._plain_template_data(dict(tokenizer.special_tokens_map))

    def prepare(self, message: Any) -> dict[str, Any]:
        """One message as transformers hands it to the template (its helpers work message by message, so a
        conversation's prefix is the prefix of its prepared messages: each message is prepared once).

        A message of plain JSON values (what a JSON line parses to) skips the helpers' deep copies: they would
        copy it unchanged but for the keys whose value is null, and the immutable sandbox lets no template
        modify what it is given."""
        h = self._helpers
        if type(message) is dict and _plain_json(message):
            chat = [{key: value for key, value in message.items() if value is not None}]
        else:
            chat = h._plain_template_data(h._normalize_chat_messages([message]))
        return dict(h._alias_reasoning_fields(chat)[0])

    def render(
        self, chat: list[dict[str, Any]], tools: list[dict[str, Any]] | None, generation_prompt: bool = False
    ) -> str:
        """The text of prepared messages (:meth:`prepare`)."""
        schemas = None if tools is None else self._helpers._plain_template_data(list(tools))
        return str(
            self._template.render(
                messages=chat,
                tools=schemas,
                documents=None,
                add_generation_prompt=generation_prompt,
                **self._kwargs,
            )
        )


_SCALARS = (str, int, float, bool, type(None))


def _plain_json(value: Any) -> bool:
    """True for exact JSON types all the way down (dict with str keys, list, str, int, float, bool, None)."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict:
        return all(type(key) is str and _plain_json(item) for key, item in value.items())
    if kind is list:
        return all(_plain_json(item) for item in value)
    return False


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
