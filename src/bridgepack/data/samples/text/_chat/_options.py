"""``--chat-template`` / ``--tool-schemas`` -> :class:`ChatOptions` (files read once, checked)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from bridgepack.data.samples.text._settings import ChatOptions, ResolvedText
from bridgepack.errors import InputError


def chat_options(template: Path | None, tool_schemas: Path | None, compat: bool) -> ChatOptions:
    """The chat settings of a pack, with a one-line error for an unreadable or malformed file."""
    text = None
    if template is not None:
        try:
            text = template.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{os.fspath(template)}: cannot read the chat template ({exc})") from None
        if not text.strip():
            raise InputError(f"{os.fspath(template)}: the chat template is empty")
    tools = None
    if tool_schemas is not None:
        try:
            tools = orjson.loads(tool_schemas.read_bytes())
        except OSError as exc:
            raise InputError(f"{os.fspath(tool_schemas)}: cannot read the tool schemas ({exc})") from None
        except orjson.JSONDecodeError as exc:
            raise InputError(f"{os.fspath(tool_schemas)}: malformed JSON ({exc.msg})") from None
        if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
            raise InputError(
                f"{os.fspath(tool_schemas)}: expected a JSON list of tool schemas (objects); the chat "
                "template iterates it"
            )
    return ChatOptions(text, tools, compat, None if template is None else os.fspath(template))


def chat_record(spec: ResolvedText) -> dict[str, Any]:
    """What the metadata records of the chat settings (hashes: the packs depend on the exact texts)."""
    options = spec.chat
    return {
        "loss_mode": spec.loss_mode or "assistant",
        "chat_template_sha256": _sha(options.template.encode()) if options.template is not None else None,
        "tool_schemas_sha256": _sha(orjson.dumps(options.tool_schemas)) if options.tool_schemas else None,
        **(
            {"assistant_markers": [spec.assistant_start, spec.assistant_end]}
            if spec.assistant_start is not None
            else {}
        ),
    }


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
