"""One Parquet file from row groups encoded in parallel: pyarrow's own bytes, on every core.

pyarrow encodes a file's row groups one after another on one thread; for packed data that encode is
about half of ``bridgepack pack``'s time. A Parquet file, though, is only its row groups' column chunks
laid end to end plus a footer that says where each one starts::

    PAR1 | rg0: col0 pages, col1 pages, ... | rg1: ... | ... | footer (FileMetaData) | len | PAR1

So each row group is encoded on its own, on any thread, as a complete one-row-group file in memory
(:func:`encode_row_group`), and :class:`RowGroupStitcher` lays their chunk bytes end to end and writes a
footer made from theirs: the same schema and key/value metadata, every row group's metadata with its
byte offsets moved by where its chunks landed, and the summed row count. Encoding a row group does not
depend on the row groups before it (dictionaries, statistics and pages are per column chunk), so the
result is **byte for byte the file pyarrow's sequential ``ParquetWriter`` writes** from the same batches
with the same options -- the tests check exactly that.

Only what moves is rewritten (field ids from parquet.thrift): ``RowGroup.file_offset``,
``ColumnMetaData.data_page_offset`` / ``index_page_offset`` / ``dictionary_page_offset``, and
``FileMetaData.num_rows``. Parts with page indexes, bloom filters or encryption (structures outside the
column chunks) are refused: :func:`encode_row_group` never writes them. So are parts whose
``ColumnChunk.file_offset`` (deprecated) is set: pyarrow before 18 wrote a copy of each column's metadata,
absolute offsets included, right after its pages, where stitching would leave stale offsets behind
(readers use the footer, but the file would not be pyarrow's). pyarrow 18 and later write 0 there, and
bridgepack requires it.
"""

from __future__ import annotations

import struct
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from bridgepack.data.pipeline._thrift_compact import (
    Field,
    ListValue,
    WireType,
    get_field,
    read_struct,
    write_struct,
)

MAGIC = b"PAR1"
_FOOTER_TAIL = 8  # little-endian uint32 footer length, then the magic

# parquet.thrift field ids.
_FILE_NUM_ROWS, _FILE_ROW_GROUPS = 3, 4
_FILE_ENCRYPTION = (8, 9)  # encryption_algorithm, footer_signing_key_metadata
_GROUP_COLUMNS, _GROUP_NUM_ROWS, _GROUP_FILE_OFFSET, _GROUP_ORDINAL = 1, 3, 5, 7
_CHUNK_FILE_OFFSET, _CHUNK_META = 2, 3
_CHUNK_OUTSIDE = (4, 6, 8, 9)  # offset/column index offsets, crypto metadata, encrypted metadata
_META_PAGE_OFFSETS = (9, 10, 11)  # data_page_offset, index_page_offset, dictionary_page_offset
_META_OUTSIDE = (14,)  # bloom_filter_offset


def writer_options(compression: str) -> dict[str, Any]:
    """pyarrow's ``ParquetWriter`` options of every part: no page index (it lives outside the column
    chunks, where stitching cannot move it) and a CRC-32 in every page header, so a damaged page is refused
    on read instead of decoded into other token ids. The checksums sit inside the column chunks and cover
    page bytes only, never file offsets, so they survive stitching unchanged."""
    return {"compression": compression, "write_page_index": False, "write_page_checksum": True}


def encode_row_group(batch: pa.RecordBatch, compression: str) -> pa.Buffer:
    """``batch`` as a complete one-row-group Parquet file in memory (pyarrow releases the GIL)."""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, batch.schema, **writer_options(compression)) as writer:
        writer.write_batch(batch, row_group_size=max(1, batch.num_rows))
    return sink.getvalue()


def encode_empty(schema: pa.Schema, compression: str) -> pa.Buffer:
    """A Parquet file with ``schema`` and no row groups, as pyarrow writes it."""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, schema, **writer_options(compression)):
        pass
    return sink.getvalue()


class StitchError(ValueError):
    """A part that cannot become a row group of the stitched file (not one of ours)."""


def _footer(part: memoryview) -> tuple[list[Field], int]:
    """The part's FileMetaData fields and where its footer starts."""
    if len(part) < len(MAGIC) + _FOOTER_TAIL or part[:4] != MAGIC or part[-4:] != MAGIC:
        raise StitchError("not a Parquet file")
    (length,) = struct.unpack("<I", part[-_FOOTER_TAIL:-4])
    start = len(part) - _FOOTER_TAIL - length
    if start < len(MAGIC):
        raise StitchError("footer length runs past the start of the file")
    fields, _ = read_struct(part[start : len(part) - _FOOTER_TAIL])
    return fields, start


def _require(fields: list[Field], field_id: int, what: str) -> Field:
    found = get_field(fields, field_id)
    if found is None:
        raise StitchError(f"footer without {what}")
    return found


def _refuse(fields: list[Field], ids: tuple[int, ...], what: str) -> None:
    if any(get_field(fields, i) is not None for i in ids):
        raise StitchError(f"part carries {what} outside its column chunks; cannot stitch it")


def _move(fields: list[Field], field_id: int, delta: int) -> None:
    found = get_field(fields, field_id)
    if found is not None:
        found.value += delta


class RowGroupStitcher:
    """Writes one Parquet file to ``handle`` from parts made by :func:`encode_row_group`, in order.

    ``schema`` and ``compression`` are those the parts were encoded with. ``append`` each part as it is
    ready (the handle receives its column chunks at once, so memory holds
    one part, not the file), then ``finish`` writes the footer. Every part must have the same schema.
    """

    def __init__(self, handle: BinaryIO, schema: pa.Schema, compression: str) -> None:
        self._handle = handle
        self._schema = schema
        self._compression = compression
        self._handle.write(MAGIC)
        self._offset = len(MAGIC)
        self._first: list[Field] | None = None
        self._row_groups: list[list[Field]] = []
        self._num_rows = 0

    def append(self, part: pa.Buffer | bytes) -> None:
        view = memoryview(part).cast("B")  # pyarrow buffers export signed bytes
        meta, footer_start = _footer(view)
        _refuse(meta, _FILE_ENCRYPTION, "encryption")
        groups = _require(meta, _FILE_ROW_GROUPS, "row groups").value
        if not isinstance(groups, ListValue) or len(groups.items) != 1:
            raise StitchError("a part must hold exactly one row group")
        group: list[Field] = groups.items[0]
        if self._first is None:
            self._first = meta
        elif [f for f in meta if f.id != _FILE_NUM_ROWS and f.id != _FILE_ROW_GROUPS] != [
            f for f in self._first if f.id != _FILE_NUM_ROWS and f.id != _FILE_ROW_GROUPS
        ]:
            raise StitchError("parts with different schemas or file metadata")
        delta = self._offset - len(MAGIC)
        for chunk in _require(group, _GROUP_COLUMNS, "column chunks").value.items:
            _refuse(chunk, _CHUNK_OUTSIDE, "a page index or encrypted metadata")
            inline = get_field(chunk, _CHUNK_FILE_OFFSET)
            if inline is not None and inline.value != 0:
                raise StitchError("part carries inline column metadata (written by pyarrow < 18)")
            column = _require(chunk, _CHUNK_META, "column metadata").value
            _refuse(column, _META_OUTSIDE, "a bloom filter")
            for field_id in _META_PAGE_OFFSETS:
                _move(column, field_id, delta)
        _move(group, _GROUP_FILE_OFFSET, delta)
        ordinal = get_field(group, _GROUP_ORDINAL)
        if ordinal is not None:
            ordinal.value = len(self._row_groups)
        self._handle.write(view[len(MAGIC) : footer_start])
        self._offset += footer_start - len(MAGIC)
        self._row_groups.append(group)
        self._num_rows += _require(group, _GROUP_NUM_ROWS, "a row count").value

    def finish(self) -> None:
        """Write the footer (with no part appended: the rest of pyarrow's empty file of the schema)."""
        if self._first is None:
            self._handle.write(memoryview(encode_empty(self._schema, self._compression))[len(MAGIC) :])
            return
        meta = [Field(f.id, f.type, f.value) for f in self._first]
        _require(meta, _FILE_NUM_ROWS, "a row count").value = self._num_rows
        _require(meta, _FILE_ROW_GROUPS, "row groups").value = ListValue(WireType.STRUCT, self._row_groups)
        footer = bytearray()
        write_struct(footer, meta)
        self._handle.write(footer)
        self._handle.write(struct.pack("<I", len(footer)))
        self._handle.write(MAGIC)
