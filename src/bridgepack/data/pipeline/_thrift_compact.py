"""Thrift's compact protocol, just enough to rewrite a Parquet footer losslessly.

A Parquet footer (``FileMetaData``) is one Thrift struct in the compact encoding. To stitch row groups
that were encoded separately into one file (:mod:`bridgepack.data.pipeline._row_groups`), bridgepack must
change a
few integers in it -- byte offsets and the row count -- and keep everything else exactly as pyarrow wrote it.
So this codec is generic: it decodes any struct into an ordered list of :class:`Field` (id, wire type,
value) without knowing the schema, and encodes that list back to the same bytes. Field ids, types and
order survive the round trip, unknown fields included.

Wire format, in brief: a struct is a run of fields ended by a 0 byte; a field header is one byte
``(id delta << 4) | type`` (or ``type`` then the zigzag varint id when the delta is not 1..15); integers
are zigzag varints; binary is a varint length and the bytes; a list header is ``(size << 4) | element
type`` (``0xF0 | type`` then a varint size from 15 elements on); booleans live in the field header's type.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any


class WireType(IntEnum):
    """Compact-protocol type ids (a boolean field's value is its type: TRUE or FALSE)."""

    STOP = 0
    TRUE = 1
    FALSE = 2
    BYTE = 3
    I16 = 4
    I32 = 5
    I64 = 6
    DOUBLE = 7
    BINARY = 8
    LIST = 9
    SET = 10
    MAP = 11
    STRUCT = 12


#: Deepest struct/list nesting accepted (Parquet footers nest about 5 deep).
MAX_DEPTH = 32
_BOOLEANS = (WireType.TRUE, WireType.FALSE)
_INTEGERS = (WireType.I16, WireType.I32, WireType.I64)


@dataclass
class Field:
    """One field of a struct: its id, wire type and value.

    Values by type: ``bool`` for booleans, ``int`` for BYTE/I16/I32/I64, ``bytes`` for DOUBLE (8 raw bytes)
    and BINARY, a ``list[Field]`` for a struct, and :class:`ListValue` for a list or set.
    """

    id: int
    type: WireType
    value: Any


@dataclass
class ListValue:
    """A list or set: the element type and the elements (values as in :class:`Field`)."""

    element_type: WireType
    items: list[Any]


class ThriftError(ValueError):
    """The bytes are not a well-formed compact-protocol struct (or use a type this codec does not)."""


class _Reader:
    def __init__(self, data: bytes | memoryview) -> None:
        self.data = memoryview(data).cast("B")  # pyarrow buffers export signed bytes
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise ThriftError("truncated compact-protocol data")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        result = shift = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ThriftError("varint longer than 10 bytes")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise ThriftError("truncated compact-protocol data")
        value = bytes(self.data[self.pos : self.pos + size])
        self.pos += size
        return value

    def value(self, kind: WireType, depth: int) -> Any:
        if kind == WireType.BYTE:
            return self.byte()
        if kind in _INTEGERS:
            return self.zigzag()
        if kind == WireType.DOUBLE:
            return self.raw(8)
        if kind == WireType.BINARY:
            return self.raw(self.varint())
        if kind in (WireType.LIST, WireType.SET):
            return self.container(depth + 1)
        if kind == WireType.STRUCT:
            return self.struct(depth + 1)
        raise ThriftError(f"compact-protocol type {int(kind)} is not supported here")

    def container(self, depth: int) -> ListValue:
        if depth > MAX_DEPTH:
            raise ThriftError("compact-protocol data nested too deep")
        header = self.byte()
        size = header >> 4
        if size == 15:
            size = self.varint()
        element = _wire_type(header & 0x0F)
        if element in _BOOLEANS:  # in a container a boolean is one byte: 1 true, anything else false
            return ListValue(element, [self.byte() == WireType.TRUE for _ in range(size)])
        return ListValue(element, [self.value(element, depth) for _ in range(size)])

    def struct(self, depth: int) -> list[Field]:
        if depth > MAX_DEPTH:
            raise ThriftError("compact-protocol data nested too deep")
        fields: list[Field] = []
        last = 0
        while True:
            header = self.byte()
            if header == WireType.STOP:
                return fields
            kind = _wire_type(header & 0x0F)
            delta = header >> 4
            field_id = last + delta if delta else self.zigzag()
            value = kind == WireType.TRUE if kind in _BOOLEANS else self.value(kind, depth)
            fields.append(Field(field_id, kind, value))
            last = field_id


def _wire_type(code: int) -> WireType:
    try:
        return WireType(code)
    except ValueError:
        raise ThriftError(f"unknown compact-protocol type {code}") from None


def read_struct(data: bytes | memoryview) -> tuple[list[Field], int]:
    """Decode the struct at the start of ``data``; returns its fields and the bytes it took."""
    reader = _Reader(data)
    fields = reader.struct(0)
    return fields, reader.pos


def _varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) ^ (n >> 63))


def _write_value(out: bytearray, kind: WireType, value: Any) -> None:
    if kind == WireType.BYTE:
        out.append(value)
    elif kind in _INTEGERS:
        _zigzag(out, value)
    elif kind == WireType.DOUBLE:
        out += value
    elif kind == WireType.BINARY:
        _varint(out, len(value))
        out += value
    elif kind in (WireType.LIST, WireType.SET):
        element, items = value.element_type, value.items
        if len(items) < 15:
            out.append(len(items) << 4 | element)
        else:
            out.append(0xF0 | element)
            _varint(out, len(items))
        for item in items:
            if element in _BOOLEANS:
                out.append(WireType.TRUE if item else WireType.FALSE)
            else:
                _write_value(out, element, item)
    elif kind == WireType.STRUCT:
        write_struct(out, value)
    else:
        raise ThriftError(f"compact-protocol type {int(kind)} is not supported here")


def write_struct(out: bytearray, fields: list[Field]) -> None:
    """Append the compact encoding of ``fields`` (in their order) and the struct's stop byte to ``out``."""
    last = 0
    for item in fields:
        kind = item.type
        if kind in _BOOLEANS:
            kind = WireType.TRUE if item.value else WireType.FALSE
        delta = item.id - last
        if 0 < delta <= 15:
            out.append(delta << 4 | kind)
        else:
            out.append(kind)
            _zigzag(out, item.id)
        if kind not in _BOOLEANS:
            _write_value(out, kind, item.value)
        last = item.id
    out.append(WireType.STOP)


def get_field(fields: list[Field], field_id: int) -> Field | None:
    """The field with id ``field_id``, or ``None`` when the struct does not carry it."""
    for item in fields:
        if item.id == field_id:
            return item
    return None
