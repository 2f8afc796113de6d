"""Pre-tokenized records -> stored examples (flat arrays), with one-line errors for every bad row.

A stored example is Bridge's (bridge-format §2): ``input_ids`` ending with EOS and ``loss_mask`` per input
token
(1 = this token is a target; missing means all 1). A chunk of records becomes three flat arrays::

    {"input_ids": [5, 6, 2], "loss_mask": [0, 1, 1]}      tokens  [5 6 2 7 2]
    {"input_ids": [7, 2]}                          ->     mask    [0 1 1 1 1]
                                                          lengths [3 2]

Plain JSON lines go through a numba scanner (``_jsonscan``) straight into the arrays; Arrow batches through
their buffers. Anything the fast paths decline is parsed with orjson and validated vectorised over the
chunk; only when a check fails does a slow pass find the first bad row, so the error names it exactly
(file, line/row, field, what was found).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from bridgepack.data.packset import MAX_TOKEN_ID
from bridgepack.data.samples._jsonscan import scan_block
from bridgepack.data.samples._readers import RawChunk
from bridgepack.errors import DataError, where

IDS_FIELD = "input_ids"
MASK_FIELD = "loss_mask"


@dataclass
class Examples:
    """Stored examples of one chunk: flat ``tokens``/``mask``, stored ``lengths``, source ``locs``."""

    source: int
    locs: np.ndarray
    tokens: np.ndarray  # int64 or uint32 (the JSON scanner), ids in [0, MAX_TOKEN_ID]
    mask: np.ndarray  # uint8
    lengths: np.ndarray  # int64, stored tokens per example (runtime length + 1)
    line_based: bool = True  # locs are 1-based JSONL lines (else 0-based table rows)
    #: Stored lengths before the text step truncated long rows (``--bridge-compat`` prompt-completion, as
    #: Bridge does at tokenization); None when it truncates nothing.
    lengths_before: np.ndarray | None = None
    #: Rows the text step refused (not in the arrays above): their locations and one reason each, for the
    #: rejects file (a chat row whose assistant turns could not be inferred).
    refused_locs: np.ndarray | None = None
    refused_reasons: tuple[str, ...] = ()

    def without_rows(self, rows: np.ndarray, reasons: list[str]) -> Examples:
        """These examples less ``rows`` (indices, ascending), which are listed as refused for ``reasons``."""
        if not rows.size:
            return self
        keep = np.ones(len(self.lengths), dtype=bool)
        keep[rows] = False
        tokens_kept = np.repeat(keep, self.lengths)
        return Examples(
            self.source,
            self.locs[keep],
            self.tokens[tokens_kept],
            self.mask[tokens_kept],
            self.lengths[keep],
            self.line_based,
            None if self.lengths_before is None else self.lengths_before[keep],
            self.locs[rows],
            tuple(reasons),
        )

    def without_tokens(self) -> Examples:
        """The same examples' lengths and locations only: what a worker sends back once it has shaped
        the tokens (they travel once, as the shaped pieces)."""
        empty = np.zeros(0, dtype=np.int64)
        return Examples(
            self.source,
            self.locs,
            empty,
            empty.astype(np.uint8),
            self.lengths,
            self.line_based,
            self.lengths_before,
            self.refused_locs,
            self.refused_reasons,
        )

    def cut_by_text_step(self) -> np.ndarray:
        """Indices of the examples the text step truncated."""
        if self.lengths_before is None:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(self.lengths_before > self.lengths)

    def where(self, path: str, index: int, field: str | None = None) -> str:
        """``file:line`` or ``file row N`` (plus the field) of example ``index``."""
        loc = int(self.locs[index])
        return where(path, loc, field=field) if self.line_based else where(path, row=loc, field=field)


def location(path: str, chunk: RawChunk, index: int, field: str | None = None) -> str:
    """``file:line`` for JSONL records, ``file row N`` for table rows, plus the field."""
    loc = int(chunk.locs[index])
    if chunk.is_lines:
        return where(path, loc, field=field)
    return where(path, row=loc, field=field)


def parse_lines(path: str, chunk: RawChunk) -> list[dict[str, Any]]:
    """Parse a chunk of JSON lines with orjson; a malformed line or a non-object is a DataError."""
    assert chunk.lines is not None
    records: list[dict[str, Any]] = []
    for index, line in enumerate(chunk.lines):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise DataError(f"{location(path, chunk, index)}: malformed JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise DataError(f"{location(path, chunk, index)}: expected a JSON object, found {_kind(record)}")
        records.append(record)
    return records


def records_of(path: str, chunk: RawChunk) -> list[dict[str, Any]]:
    """The chunk's records as Python dicts (JSON lines parsed, Arrow rows converted)."""
    if chunk.is_lines:
        return parse_lines(path, chunk)
    assert chunk.batch is not None
    return chunk.batch.to_pylist()


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    if value is None:
        return "null"
    return repr(value)[:40]


def pretokenized(path: str, chunk: RawChunk) -> Examples:
    """Stored examples from a chunk of pre-tokenized records (JSONL or Arrow)."""
    if chunk.batch is not None and _is_int_list(chunk.batch, IDS_FIELD):
        fast = _from_arrow(path, chunk)
        if fast is not None:
            return fast
    if chunk.data is not None and chunk.spans is not None:
        scanned = scan_block(chunk.data, chunk.spans[:, 0], chunk.spans[:, 1])
        if scanned is not None:
            return Examples(chunk.source, chunk.locs, *scanned, line_based=True)
    return from_records(path, chunk, records_of(path, chunk))


def _is_int_list(batch: pa.RecordBatch, name: str) -> bool:
    if name not in batch.schema.names:
        return False
    kind = batch.schema.field(name).type
    return (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and pa.types.is_integer(kind.value_type)


def _from_arrow(path: str, chunk: RawChunk) -> Examples | None:
    """Vectorised path for Arrow ``list<int>`` columns; ``None`` sends odd batches to the row path."""
    batch = chunk.batch
    assert batch is not None
    ids_col = batch.column(IDS_FIELD)
    if ids_col.null_count or ids_col.values.null_count:
        return None
    offsets = np.asarray(ids_col.offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    tokens = np.asarray(ids_col.flatten(), dtype=np.int64)
    mask = np.ones(len(tokens), dtype=np.uint8)
    if MASK_FIELD in batch.schema.names:
        mask_col = batch.column(MASK_FIELD)
        if mask_col.null_count:
            return None
        if not (pa.types.is_list(mask_col.type) or pa.types.is_large_list(mask_col.type)):
            return None
        if not np.array_equal(np.diff(np.asarray(mask_col.offsets, dtype=np.int64)), lengths):
            return None
        values = mask_col.flatten()
        if values.null_count or not (pa.types.is_integer(values.type) or pa.types.is_boolean(values.type)):
            return None
        if pa.types.is_boolean(values.type):
            values = pc.cast(values, pa.uint8())
        mask_values = np.asarray(values)
        if len(mask_values) and (mask_values.min() < 0 or mask_values.max() > 1):
            return None
        mask = mask_values.astype(np.uint8)
    if (lengths == 0).any() or (len(tokens) and (tokens.min() < 0 or tokens.max() > MAX_TOKEN_ID)):
        return None
    return Examples(chunk.source, chunk.locs, tokens, mask, lengths, line_based=False)


#: The one rule for values (docs/failure-behaviour.md, "input rules"): token ids are JSON/Arrow integers
#: -- never strings, booleans, floats, nulls or lists -- in ``[0, MAX_TOKEN_ID]``; mask values are 0/1
#: integers or booleans (Bridge's chat path and HF ``datasets`` write booleans). Types are compared
#: exactly: ``bool`` is a subclass of ``int`` in Python, and ``np.fromiter``/``np.array`` would turn
#: ``True`` or ``"7"`` into a number.
_ID_TYPES = frozenset({int})
_MASK_TYPES = frozenset({int, bool})


def from_records(path: str, chunk: RawChunk, records: list[dict[str, Any]]) -> Examples:
    """Stored examples from parsed records: vectorised checks, slow pass only to name a bad row."""
    ids_lists: list[Any] = []
    for index, record in enumerate(records):
        ids = record.get(IDS_FIELD)
        if ids is None:
            raise DataError(
                f"{location(path, chunk, index, IDS_FIELD)}: missing (expected a list of token ids)"
            )
        if not isinstance(ids, list):
            raise DataError(f"{location(path, chunk, index, IDS_FIELD)}: expected a list, found {_kind(ids)}")
        if not ids:
            raise DataError(
                f"{location(path, chunk, index, IDS_FIELD)}: empty (a stored example ends with EOS)"
            )
        ids_lists.append(ids)
    lengths = np.fromiter((len(ids) for ids in ids_lists), dtype=np.int64, count=len(ids_lists))
    tokens = _int_array(ids_lists, int(lengths.sum()), _ID_TYPES)
    if tokens is None or (len(tokens) and (tokens.min() < 0 or tokens.max() > MAX_TOKEN_ID)):
        _raise_bad_ids(path, chunk, ids_lists)
    assert tokens is not None
    mask = np.ones(len(tokens), dtype=np.uint8)
    if any(MASK_FIELD in record for record in records):
        mask = _masks(path, chunk, records, lengths)
    return Examples(chunk.source, chunk.locs, tokens, mask, lengths, line_based=chunk.is_lines)


def _int_array(lists: list[Any], count: int, allowed: frozenset[type]) -> np.ndarray | None:
    """The values of ``lists``, flat, as int64; ``None`` if any value's type is not exactly in ``allowed``
    (or an integer does not fit int64). Two C-level passes: the type set, then ``np.fromiter``."""
    if not set(map(type, itertools.chain.from_iterable(lists))) <= allowed:
        return None
    try:
        return np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=count)
    except OverflowError:
        return None


def _exact(chunk: RawChunk, index: int, field: str, position: int, value: Any) -> Any:
    """The value as the JSON text wrote it: orjson reads an integer beyond 64 bits as a float
    (``99999999999999999999999999`` -> ``1e+26``), so a JSON line is re-read with the standard library
    (exact integers) to say "out of range", not "found 1e+26". Only called to word an error."""
    if not isinstance(value, float) or not chunk.is_lines or chunk.lines is None:
        return value
    try:
        exact = json.loads(chunk.lines[index])[field][position]
    except (ValueError, LookupError, TypeError, RecursionError):
        return value
    return exact if type(exact) is int else value


def _raise_bad_ids(path: str, chunk: RawChunk, ids_lists: list[Any]) -> None:
    for index, ids in enumerate(ids_lists):
        at = location(path, chunk, index, IDS_FIELD)
        for position, raw in enumerate(ids):
            value = _exact(chunk, index, IDS_FIELD, position, raw)
            if type(value) is not int:
                raise DataError(f"{at}: expected integer token ids, found {_kind(value)}")
            if value < 0 or value > MAX_TOKEN_ID:
                raise DataError(f"{at}: token id {value} out of range [0, {MAX_TOKEN_ID}]")
    raise AssertionError("unreachable: a bad id was detected but not found")  # pragma: no cover


def _masks(path: str, chunk: RawChunk, records: list[dict[str, Any]], lengths: np.ndarray) -> np.ndarray:
    parts: list[Any] = []
    for index, record in enumerate(records):
        mask = record.get(MASK_FIELD)
        if mask is None:
            parts.append([1] * int(lengths[index]))
            continue
        if not isinstance(mask, list):
            raise DataError(
                f"{location(path, chunk, index, MASK_FIELD)}: expected a list, found {_kind(mask)}"
            )
        if len(mask) != lengths[index]:
            raise DataError(
                f"{location(path, chunk, index, MASK_FIELD)}: length {len(mask)} != "
                f"input_ids length {int(lengths[index])}"
            )
        parts.append(mask)
    values = _int_array(parts, int(lengths.sum()), _MASK_TYPES)
    if values is not None and (not values.size or (values.min() >= 0 and values.max() <= 1)):
        return values.astype(np.uint8)
    for index, record in enumerate(records):  # name the first value that breaks the rule
        for position, raw in enumerate(record.get(MASK_FIELD) or ()):
            value = _exact(chunk, index, MASK_FIELD, position, raw)
            if type(value) not in _MASK_TYPES or value not in (0, 1):
                at = location(path, chunk, index, MASK_FIELD)
                raise DataError(f"{at}: expected 0/1 integers or booleans, found {_kind(value)}")
    raise AssertionError("unreachable: a bad mask value was detected but not found")  # pragma: no cover
