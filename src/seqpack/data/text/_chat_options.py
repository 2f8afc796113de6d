"""``--chat-template`` / ``--tool-schemas`` / ``--loss-mode`` -> :class:`ChatOptions` (read once, checked)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from seqpack.data.text._spec import LOSS_MODES, ChatOptions
from seqpack.errors import InputError, UsageError


def chat_options(
    template: Path | None, tool_schemas: Path | None, loss_mode: str, compat: bool
) -> ChatOptions:
    """The chat settings of a pack, with a one-line error for an unreadable or malformed file."""
    if loss_mode not in LOSS_MODES:
        raise UsageError(f"--loss-mode must be one of {', '.join(LOSS_MODES)}, got {loss_mode!r}")
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
    return ChatOptions(text, tools, loss_mode, compat)


def chat_record(options: ChatOptions) -> dict[str, Any]:
    """What the metadata records of the chat settings (hashes: the packs depend on the exact texts)."""
    return {
        "loss_mode": options.loss_mode,
        "chat_template_sha256": _sha(options.template.encode()) if options.template is not None else None,
        "tool_schemas_sha256": _sha(orjson.dumps(options.tool_schemas)) if options.tool_schemas else None,
    }


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
