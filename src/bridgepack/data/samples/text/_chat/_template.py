"""Which chat template renders a row, where it was written, and whether Jinja can compile it.

A tokenizer's own template comes in two shapes (transformers 5 reads both):

* **one template**: ``chat_template`` a string in ``tokenizer_config.json``, or a ``chat_template.jinja``
  file beside it (the file wins);
* **named templates**: ``chat_template`` a list of ``{"name", "template"}`` in ``tokenizer_config.json``
  (or ``chat_template.jinja`` as ``default`` plus ``additional_chat_templates/NAME.jinja``). transformers'
  ``get_chat_template`` renders a row that is given ``tools`` (any value but ``None``, an empty list too)
  with ``tool_use`` when there is one, every other row with ``default``, and refuses when neither applies.

``--chat-template FILE`` replaces either shape for every row (Bridge's ``TokenizerConfig.chat_template``).

Every template is compiled once, up front, with transformers' own Jinja environment: a syntax error is one
line naming the file and the line (``t.jinja:3: ...``; for a template held in a JSON string, the
template's own line), an :class:`InputError` (exit 2) in the parent and in any worker alike.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridgepack.data.samples.text._settings import ResolvedText
from bridgepack.errors import InputError, UsageError, param

CONFIG_FILE = "tokenizer_config.json"
TEMPLATE_FILE = "chat_template.jinja"
TEMPLATE_DIR = "additional_chat_templates"
#: The names transformers' ``get_chat_template`` picks among named templates.
DEFAULT, TOOL_USE = "default", "tool_use"


@dataclass(frozen=True)
class Template:
    """A template's text and where it was written: ``where`` names it in messages and ``in_file`` says
    whether its line numbers are that file's (a ``.jinja`` file) or its own (a string inside JSON)."""

    text: str
    where: str
    in_file: bool

    def at_line(self, line: int | None) -> str:
        if line is None:
            return self.where
        return f"{self.where}:{line}" if self.in_file else f"{self.where}, line {line}"


@dataclass(frozen=True)
class ChatTemplates:
    """The templates a chat pack renders with: an override, the tokenizer's one, or its named ones."""

    single: Template | None = None
    named: dict[str, Template] = field(default_factory=dict)
    override: bool = False

    def for_tools(self, tools: Any) -> Template | None:
        """The template transformers renders a row given ``tools`` with (``None``: there is none)."""
        if self.single is not None:
            return self.single
        if tools is not None and TOOL_USE in self.named:
            return self.named[TOOL_USE]
        return self.named.get(DEFAULT)

    def passed(self, template: Template) -> str | None:
        """What the renderer passes ``apply_chat_template`` as ``chat_template`` for ``template``: nothing
        for the tokenizer's one template (it renders with its own), the text of an override or of one of
        several named templates (transformers renders a text it is passed)."""
        return None if self.single is not None and not self.override else template.text

    def where(self) -> str:
        """The file(s) the tokenizer's templates are in (for messages)."""
        places = sorted({t.where.split(": ")[0] for t in self.named.values()})
        return ", ".join(places)


_CACHE: dict[tuple[str, str | None, str | None], ChatTemplates] = {}


def chat_templates(spec: ResolvedText, tokenizer: Any) -> ChatTemplates:
    """The spec's chat templates, each compiled (cached per process); InputError on a syntax error or when
    there is no template a row could render with, UsageError for named templates in compat mode with an
    assistant loss mode (Bridge 0.6.2 builds no mask from them)."""
    options = spec.chat
    key = (spec.tokenizer, options.template, options.template_path)  # the path: messages name it
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = _templates(spec, tokenizer)
    if found.named and options.compat and (spec.loss_mode or "assistant") != "full":
        raise UsageError(
            f"{found.where()}: named chat templates ({', '.join(sorted(found.named))}): Bridge 0.6.2 renders "
            "them but builds no assistant-only loss mask from them (it reads a single template); use "
            f"{param('loss_mode')} full, or pass one with {param('chat_template')}"
        )
    return found


def _templates(spec: ResolvedText, tokenizer: Any) -> ChatTemplates:
    options = spec.chat
    if options.template is not None:
        where = options.template_path or "the chat template"
        found = ChatTemplates(single=Template(options.template, where, True), override=True)
    else:
        found = _own(Path(spec.tokenizer), tokenizer.chat_template)
    for template in [found.single] if found.single is not None else list(found.named.values()):
        _compile(template)
    if found.single is None and not found.named:
        raise InputError(
            f"{spec.tokenizer}: the tokenizer has no chat template; pass one with {param('chat_template')}"
        )
    if found.named and DEFAULT not in found.named and TOOL_USE not in found.named:
        raise InputError(
            f"{found.where()}: named chat templates ({', '.join(sorted(found.named))}) but neither "
            f"{DEFAULT!r} nor {TOOL_USE!r}, which transformers renders with; pass one with "
            f"{param('chat_template')}"
        )
    return found


def _own(directory: Path, templates: Any) -> ChatTemplates:
    """The tokenizer's own template(s) as transformers loaded them, each with the file it came from."""
    config = f"{os.fspath(directory / CONFIG_FILE)}: chat_template"
    jinja = directory / TEMPLATE_FILE
    if isinstance(templates, str) and templates:
        if jinja.is_file():
            return ChatTemplates(single=Template(templates, os.fspath(jinja), True))
        return ChatTemplates(single=Template(templates, config, False))
    if not isinstance(templates, dict):
        return ChatTemplates()
    named = {}
    for name, text in templates.items():
        if not isinstance(text, str):
            continue
        extra = directory / TEMPLATE_DIR / f"{name}.jinja"
        if name == DEFAULT and jinja.is_file():
            named[name] = Template(text, os.fspath(jinja), True)
        elif extra.is_file():
            named[name] = Template(text, os.fspath(extra), True)
        else:
            named[name] = Template(text, f"{config} {name!r}", False)
    return ChatTemplates(named=named)


def _compile(template: Template) -> None:
    """Compile ``template`` in transformers' Jinja environment (cached there); a syntax error is an
    InputError naming the file and line."""
    from jinja2 import TemplateSyntaxError
    from transformers.utils.chat_template_utils import _compile_jinja_template

    try:
        _compile_jinja_template(template.text)
    except TemplateSyntaxError as exc:
        raise InputError(
            f"{template.at_line(exc.lineno)}: Jinja syntax error in the chat template: {exc.message}"
        ) from None
