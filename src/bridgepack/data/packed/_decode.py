"""A packed sequence as text, cut into pieces that are all supervised or all not.

What ``bridgepack inspect --decode`` shows: the user reads the conversation and sees exactly which characters
the model is trained to predict. Runs of equal ``supervised`` flags become pieces::

    ids         [ 6  12  2  |  7  40  2 ]        (token ids of one sequence)
    supervised  [ 0   0  0  |  0   1  1 ]
    pieces      '<|user|> hi<eos><|assistant|>'  (tokens 0-3, not trained)
                ' hello<eos>'                     (tokens 4-5, trained; ids 40 ... 2)

A piece's text is the difference of two decoded prefixes, ``decode(ids[:end]) - decode(ids[:start])``, so
the spaces and merges a tokenizer's decoder applies across tokens (SentencePiece's leading ``▁``, byte-level
characters split over two tokens) come out as in the whole text. Where a prefix does not extend the previous
one (a character cut in two by a mask boundary), each piece is decoded on its own instead.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from bridgepack.data.packed._supervised import PackedSequence


@dataclass(frozen=True)
class Piece:
    """Tokens ``start .. end-1`` of a sequence: their text, whether they are trained, the ids at both ends."""

    text: str
    supervised: bool
    start: int
    end: int
    first_id: int
    last_id: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "supervised": self.supervised,
            "tokens": [self.start, self.end],
            "first_id": self.first_id,
            "last_id": self.last_id,
        }


@dataclass(frozen=True)
class Decoded:
    """The first sequences of packed data decoded with a tokenizer (``bridgepack inspect --decode``)."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    path: str
    tokenizer: str
    #: Whether ``tokenizer`` is the one the metadata records; ``None``: none recorded.
    tokenizer_matches_metadata: bool | None
    #: How the assistant-only masks were built (metadata ``text.assistant_mask``); ``None``: not recorded.
    assistant_mask: str | None
    #: Each sequence with its pieces (:func:`decode_pieces`).
    sequences: list[tuple[PackedSequence, list[Piece]]]

    def to_dict(self) -> dict[str, Any]:
        """``bridgepack inspect --decode K --format json``'s document."""
        return {
            "schema_version": self.SCHEMA_VERSION,
            "path": self.path,
            "tokenizer": self.tokenizer,
            "tokenizer_matches_metadata": self.tokenizer_matches_metadata,
            "assistant_mask": self.assistant_mask,
            "sequences": [
                {
                    "file": seq.path,
                    "layout": seq.layout.value,
                    "row": seq.row,
                    "index": seq.index,
                    "start": seq.start,
                    "tokens": len(seq.input_ids),
                    "trained_tokens": int(seq.supervised.sum()),
                    "pieces": [p.to_dict() for p in pieces],
                }
                for seq, pieces in self.sequences
            ],
        }


def runs(supervised: np.ndarray) -> list[tuple[int, int]]:
    """``[start, end)`` of every run of equal flags (``[0 0 1 1 0]`` -> ``[(0, 2), (2, 4), (4, 5)]``)."""
    flags = np.asarray(supervised, dtype=bool)
    if not flags.size:
        return []
    cuts = (np.flatnonzero(flags[1:] != flags[:-1]) + 1).tolist()
    bounds = [0, *cuts, int(flags.size)]
    return list(itertools.pairwise(bounds))


def _decode(tokenizer: Any, ids: list[int]) -> str:
    text: str = tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    return text


def decode_pieces(tokenizer: Any, input_ids: np.ndarray, supervised: np.ndarray) -> list[Piece]:
    """The sequence's pieces in order; their texts concatenate to the decoded sequence when possible."""
    ids = np.asarray(input_ids, dtype=np.int64).tolist()
    spans = runs(supervised)
    prefixes = [_decode(tokenizer, ids[:end]) for _, end in spans]
    consistent = all(b.startswith(a) for a, b in zip(["", *prefixes], prefixes, strict=False))
    pieces = []
    for k, (start, end) in enumerate(spans):
        if consistent:
            text = prefixes[k][len(prefixes[k - 1]) if k else 0 :]
        else:
            text = _decode(tokenizer, ids[start:end])
        pieces.append(Piece(text, bool(supervised[start]), start, end, ids[start], ids[end - 1]))
    return pieces
