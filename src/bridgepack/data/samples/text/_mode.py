"""Which kind of record a row is -- token ids, chat or prompt-completion -- by one rule for every row.

A field counts when it holds a value (present and not null), and the kinds are tried in this order::

    input_ids                                   -> pre-tokenized
    messages / conversation / conversations     -> chat            (or the --messages-field)
    input + output, else prompt + completion    -> prompt-completion

so ``{"messages": [...], "input": "a", "output": "b"}`` is chat and ``{"messages": null, "input": "a",
"output": "b"}`` is prompt-completion, wherever the row stands. A run reads its inputs in one mode, the
mode of the first row of the first input; a row of another kind is an error naming it and that first row
(one pack holds one text mode; Bridge's dataset config reads one), never silently read as the first row's
kind. Fields given with ``--prompt-field``/``--completion-field`` make every row prompt-completion.
"""

from __future__ import annotations

from typing import Any

from bridgepack.data.samples._examples import IDS_FIELD, location
from bridgepack.data.samples._readers import RawChunk
from bridgepack.data.samples.text._chat._rows import CHAT_KEYS
from bridgepack.data.samples.text._settings import ResolvedText
from bridgepack.errors import DataError

TOKEN_IDS, CHAT, PROMPT_COMPLETION = "pre-tokenized", "chat", "prompt-completion"
#: Prompt-completion field pairs recognised without --prompt-field/--completion-field: Bridge's local JSONL
#: preset (``input``/``output``) and its canonical pair (spec §13).
PROMPT_COMPLETION_PAIRS = (("input", "output"), ("prompt", "completion"))


def _holds(record: dict[str, Any], key: str) -> bool:
    return record.get(key) is not None


def chat_keys(messages_field: str) -> tuple[str, ...]:
    return CHAT_KEYS if messages_field in CHAT_KEYS else (messages_field, *CHAT_KEYS)


def row_kind(record: dict[str, Any], messages_field: str) -> tuple[str, tuple[str, ...]] | None:
    """The row's kind and the fields that make it so (``None``: none of the three)."""
    if _holds(record, IDS_FIELD):
        return TOKEN_IDS, (IDS_FIELD,)
    chat = [key for key in chat_keys(messages_field) if _holds(record, key)]
    if chat:
        return CHAT, (chat[0],)
    for pair in PROMPT_COMPLETION_PAIRS:
        if all(_holds(record, key) for key in pair):
            return PROMPT_COMPLETION, pair
    return None


def refuse_other_kind(
    path: str, chunk: RawChunk, index: int, record: dict[str, Any], spec: ResolvedText
) -> None:
    """A DataError when a row of a run read by its first row (``spec.mode_from``) is of another kind."""
    if spec.mode_from is None:
        return
    expected = CHAT if spec.is_chat else PROMPT_COMPLETION
    kind = row_kind(record, spec.messages_field)
    if kind is None or kind[0] == expected:
        return
    name, fields = kind
    raise DataError(
        f"{location(path, chunk, index)}: a {name} row ({'/'.join(fields)}) in {expected} input (the mode "
        f"of its first row, {spec.mode_from}); one pack holds one text mode: split the input"
    )
