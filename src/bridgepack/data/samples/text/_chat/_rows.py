"""A chat record -> the conversation and the tools its template sees (Bridge 0.6.2's schemas, bridge-format
§13).

Three schemas, tried in this order (the first present and not null wins)::

    {"messages":      [{"role": "user", "content": "hi"}, ...]}
    {"conversation":  [{"role": "user", "content": "hi"}, ...]}
    {"conversations": [{"from": "human", "value": "hi"}, ...], "system": "be brief"}

``from``/``value`` turns become ``role``/``content`` (``human`` -> ``user``, ``gpt`` -> ``assistant``, other
names lower-cased); a top-level ``system`` string is put first when no turn has the system role (any schema).
A turn with ``role`` and ``content`` is passed on whole (``reasoning_content``, ``tool_calls``, ...).
The row's ``tools`` reach the template; when they are missing or empty, the dataset-wide tool schemas do.
"""

from __future__ import annotations

from typing import Any

from bridgepack.data.samples._examples import _kind, location
from bridgepack.data.samples._readers import RawChunk
from bridgepack.errors import DataError

#: Bridge's schema keys, in its order of preference.
CHAT_KEYS = ("messages", "conversation", "conversations")
_ROLE_ALIASES = {"human": "user", "gpt": "assistant"}


def conversation_of(
    path: str, chunk: RawChunk, index: int, record: dict[str, Any], messages_field: str
) -> list[dict[str, Any]]:
    """The record's turns as ``role``/``content`` dicts, or a DataError naming the row and the field."""
    keys = CHAT_KEYS if messages_field == "messages" else (messages_field, *CHAT_KEYS)
    key = next((k for k in keys if record.get(k) is not None), None)
    if key is None:
        raise DataError(
            f"{location(path, chunk, index)}: expected one of {', '.join(keys)} (a list of turns)"
        )
    turns = record[key]
    if not isinstance(turns, list):
        raise DataError(
            f"{location(path, chunk, index, key)}: expected a list of turns, found {_kind(turns)}"
        )
    conversation: list[dict[str, Any]] = []
    for number, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise DataError(
                f"{location(path, chunk, index, key)}: turn {number} is {_kind(turn)}, not an object"
            )
        if "role" in turn and "content" in turn:
            conversation.append(dict(turn))
        elif "from" in turn and "value" in turn:
            role = str(turn["from"]).lower()
            conversation.append({"role": _ROLE_ALIASES.get(role, role), "content": turn["value"]})
        else:
            raise DataError(
                f"{location(path, chunk, index, key)}: turn {number} needs 'role' and 'content' "
                "(or 'from' and 'value')"
            )
    system = record.get("system")
    if system and not any(turn.get("role") == "system" for turn in conversation):
        conversation.insert(0, {"role": "system", "content": system})
    if not conversation:
        raise DataError(f"{location(path, chunk, index, key)}: no turns (a chat needs at least one)")
    return conversation


def tools_of(record: dict[str, Any], tool_schemas: list[Any] | None) -> Any:
    """The ``tools`` the template gets: the row's own unless missing/empty, then the dataset's."""
    tools = record.get("tools")
    if not tools and tool_schemas is not None:
        return tool_schemas
    return tools
