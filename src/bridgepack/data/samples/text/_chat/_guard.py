"""Bridge 0.6.2's guard on its token scan: may the row's own text contain a turn marker? (bridge-format §13)

Bridge tokenizes every string a turn carries (all fields but ``role``, nested values included) and the
template's ``tools``, and refuses to scan for markers when any of those token lists holds a marker's tokens:
a user who writes ``<|im_end|>`` into a message would otherwise move a turn boundary.

Tokenizing every message again would double the cost of a chunk, so strings are first tested for text a
marker needs: a marker that starts with an added (special) token can only be found in a string that holds
that token's text, and with no normalizer a marker's tokens only occur in a string that holds its text.
Only strings that pass that test are tokenized and searched.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from bridgepack.data.samples.text._chat._markers import Markers


class Guard:
    """Answers Bridge's "is the scan safe" question for rows of one tokenizer and marker family."""

    def __init__(self, tokenizer: Any, markers: Markers) -> None:
        self._tokenizer = tokenizer
        self._sequences = [seq.tolist() for seq in markers.sequences()]
        decoder = getattr(tokenizer, "added_tokens_decoder", {}) or {}
        normalizer = tokenizer.backend_tokenizer.normalizer
        anchors: list[str] = []
        for seq, text in zip(self._sequences, markers.texts, strict=True):
            first = decoder.get(seq[0])
            if first is not None and not getattr(first, "normalized", True):
                anchors.append(str(first))
            elif normalizer is None:
                anchors.append(text)
            else:  # no sound shortcut: every string is tokenized
                anchors = []
                break
        self._anchors = tuple(anchors) if anchors else None

    def safe(self, conversation: list[dict[str, Any]], tools: Any) -> bool:
        """True when no string of the row tokenizes to a marker (Bridge then trusts its token scan)."""
        payload: list[Any] = [{k: v for k, v in turn.items() if k != "role"} for turn in conversation]
        if tools is not None:
            payload.append(tools)
        for text in _strings(payload):
            if self._anchors is not None and not any(anchor in text for anchor in self._anchors):
                continue
            ids = self._tokenizer.encode(text, add_special_tokens=False)
            if any(_contains(ids, seq) for seq in self._sequences):
                return False
        return True


def _strings(value: Any) -> Iterator[str]:
    """Every string leaf of a JSON value (dict values and list items, not dict keys)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _contains(ids: list[int], seq: list[int]) -> bool:
    if len(seq) > len(ids):
        return False
    arr = np.asarray(ids)
    hits = np.flatnonzero(arr[: len(arr) - len(seq) + 1] == seq[0])
    return any(ids[h : h + len(seq)] == seq for h in hits.tolist())
