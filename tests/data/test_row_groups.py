"""Row groups encoded apart and stitched into one file: byte for byte pyarrow's sequential writer output."""

from __future__ import annotations

import io
import itertools
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _support.pack_inputs import random_examples, write_jsonl
from bridgepack.data.packset import PACKED_SCHEMA, PADDING_FREE_SCHEMA, ROW_GROUP_SIZE
from bridgepack.data.pipeline import PackOptions, pack_files
from bridgepack.data.pipeline._row_groups import (
    RowGroupStitcher,
    StitchError,
    encode_row_group,
    writer_options,
)
from bridgepack.data.pipeline._thrift_compact import ThriftError, read_struct, write_struct

COMPRESSIONS = ["snappy", "zstd", "none"]


def random_batches(seed: int, rows: int, splits: list[int], schema: pa.Schema) -> list[pa.RecordBatch]:
    """``rows`` random list rows of ``schema`` cut into record batches at ``splits``."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 40, rows)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    columns = []
    for field in schema:
        value_type = field.type.value_type
        high = 2 if value_type == pa.int8() else 50_000
        values = rng.integers(0, high, int(offsets[-1])).astype(value_type.to_pandas_dtype())
        columns.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, type=value_type)))
    table = pa.Table.from_arrays(columns, schema=schema)
    cuts = sorted({0, rows, *(s % (rows + 1) for s in splits)})
    return [
        table.slice(a, b - a).combine_chunks().to_batches()[0] for a, b in itertools.pairwise(cuts) if b > a
    ]


def sequential(batches: list[pa.RecordBatch], schema: pa.Schema, compression: str) -> bytes:
    """What pyarrow writes from the batches, one row group per batch, on one thread."""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, schema, **writer_options(compression)) as writer:
        for batch in batches:
            writer.write_batch(batch, row_group_size=batch.num_rows)
    return sink.getvalue().to_pybytes()


def stitched(batches: list[pa.RecordBatch], schema: pa.Schema, compression: str) -> bytes:
    handle = io.BytesIO()
    sink = RowGroupStitcher(handle, schema, compression)
    for batch in batches:
        sink.append(encode_row_group(batch, compression))
    sink.finish()
    return handle.getvalue()


@given(
    seed=st.integers(0, 2**16),
    rows=st.integers(1, 120),
    splits=st.lists(st.integers(0, 120), max_size=8),
    compression=st.sampled_from(COMPRESSIONS),
    schema=st.sampled_from([PACKED_SCHEMA, PADDING_FREE_SCHEMA]),
)
def test_stitched_file_is_byte_identical_to_sequential_writer(
    seed: int, rows: int, splits: list[int], compression: str, schema: pa.Schema
) -> None:
    batches = random_batches(seed, rows, splits, schema)
    got = stitched(batches, schema, compression)
    assert got == sequential(batches, schema, compression)
    table = pq.read_table(io.BytesIO(got), page_checksum_verification=True)
    assert table.equals(pa.Table.from_batches(batches))
    assert pq.ParquetFile(io.BytesIO(got)).num_row_groups == len(batches)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_every_stitched_row_group_keeps_its_page_checksums(compression: str) -> None:
    """A byte flipped in any row group's column chunk -- the last one moved furthest by stitching -- is
    refused by a reader that verifies page checksums, where one that does not may decode other values."""
    batches = random_batches(3, 90, [30, 60], PACKED_SCHEMA)
    data = stitched(batches, PACKED_SCHEMA, compression)
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    for group in range(meta.num_row_groups):
        column = meta.row_group(group).column(0)  # input_ids
        start = column.dictionary_page_offset or column.data_page_offset
        middle = start + column.total_compressed_size // 2
        damaged = bytearray(data)
        damaged[middle] ^= 0x40
        with pytest.raises(OSError, match=r"CRC|checksum"):
            pq.ParquetFile(io.BytesIO(bytes(damaged)), page_checksum_verification=True).read_row_group(group)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_no_row_groups_is_pyarrows_empty_file(compression: str) -> None:
    assert stitched([], PACKED_SCHEMA, compression) == sequential([], PACKED_SCHEMA, compression)


def footer_of(data: bytes) -> bytes:
    (length,) = struct.unpack("<I", data[-8:-4])
    return data[len(data) - 8 - length : -8]


def test_thrift_round_trip_of_a_real_footer_is_exact() -> None:
    batches = random_batches(3, 50, [20], PACKED_SCHEMA)
    footer = footer_of(sequential(batches, PACKED_SCHEMA, "snappy"))
    fields, used = read_struct(footer)
    assert used == len(footer)
    out = bytearray()
    write_struct(out, fields)
    assert bytes(out) == footer


@given(data=st.binary(max_size=200))
def test_thrift_reader_rejects_garbage_with_its_own_error(data: bytes) -> None:
    """Random bytes either fail with ThriftError (nothing else escapes) or decode to a struct that encodes
    back to exactly the bytes it was read from."""
    try:
        fields, used = read_struct(data)
    except ThriftError:
        return
    out = bytearray()
    write_struct(out, fields)
    assert used <= len(data)
    assert read_struct(bytes(out)) == (fields, len(out))


@pytest.mark.parametrize(
    ("garbage", "why"),
    [
        (b"", "truncated"),
        (b"\x15", "truncated"),  # field 1, type i32, no value
        (b"\x1d\x00", "type"),  # field 1 with type 13 (no such compact type)
        (b"\x19\xf5\xff\xff\xff\xff\x0f", "truncated"),  # a list of i32 claiming 2**32-1 elements
    ],
)
def test_thrift_reader_refuses_known_garbage(garbage: bytes, why: str) -> None:
    with pytest.raises(ThriftError, match=why):
        read_struct(garbage)


def test_truncated_footer_is_a_thrift_error() -> None:
    footer = footer_of(sequential(random_batches(1, 10, [], PACKED_SCHEMA), PACKED_SCHEMA, "snappy"))
    with pytest.raises(ThriftError, match="truncated"):
        read_struct(footer[: len(footer) // 2])


def part(row_group_size: int, **options: object) -> bytes:
    """A Parquet file of 30 rows written by pyarrow with ``options``."""
    batch = random_batches(5, 30, [], PACKED_SCHEMA)[0]
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, PACKED_SCHEMA, **options) as writer:  # type: ignore[arg-type]
        writer.write_batch(batch, row_group_size=row_group_size)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: part(10), "exactly one row group"),
        (lambda: part(30, write_page_index=True), "page index"),
        (lambda: b"PAR1 not really parquet PAR1", "footer length"),
        (lambda: b"CSV,file\n", "not a Parquet file"),
    ],
)
def test_parts_that_cannot_be_stitched_are_refused(make: Callable[[], bytes], message: str) -> None:
    sink = RowGroupStitcher(io.BytesIO(), PACKED_SCHEMA, "snappy")
    with pytest.raises(StitchError, match=message):
        sink.append(make())


def with_inline_metadata(part: bytes) -> bytes:
    """``part`` as pyarrow < 18 would mark it: ``ColumnChunk.file_offset`` set (an inline metadata copy)."""
    footer_start = len(part) - 8 - struct.unpack("<I", part[-8:-4])[0]
    meta, _ = read_struct(part[footer_start:-8])
    group = next(f for f in meta if f.id == 4).value.items[0]
    chunk = next(f for f in group if f.id == 1).value.items[0]
    next(f for f in chunk if f.id == 2).value = footer_start - 100
    footer = bytearray()
    write_struct(footer, meta)
    return part[:footer_start] + bytes(footer) + struct.pack("<I", len(footer)) + b"PAR1"


def test_parts_with_inline_column_metadata_are_refused() -> None:
    good = part(30)  # one row group of 30 rows
    RowGroupStitcher(io.BytesIO(), PACKED_SCHEMA, "snappy").append(good)
    with pytest.raises(StitchError, match="inline column metadata"):
        RowGroupStitcher(io.BytesIO(), PACKED_SCHEMA, "snappy").append(with_inline_metadata(good))


def test_parts_of_another_schema_are_refused() -> None:
    sink = RowGroupStitcher(io.BytesIO(), PACKED_SCHEMA, "snappy")
    sink.append(encode_row_group(random_batches(1, 5, [], PACKED_SCHEMA)[0], "snappy"))
    with pytest.raises(StitchError, match="different schemas"):
        sink.append(encode_row_group(random_batches(1, 5, [], PADDING_FREE_SCHEMA)[0], "snappy"))


def test_pack_output_is_identical_for_any_number_of_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pre-tokenized input, several chunks and row groups: threads scan and encode, bytes do not move
    (the run id, which every run draws afresh, held equal)."""
    monkeypatch.setattr("bridgepack.data.pipeline._run.new_run_id", lambda: "0" * 32)
    rng = np.random.default_rng(7)
    source = write_jsonl(tmp_path / "in.jsonl", random_examples(rng, 6 * ROW_GROUP_SIZE, 8))
    outputs = []
    for workers in (1, 3):
        out = tmp_path / f"w{workers}"
        opts = PackOptions.from_flat([source], out, 8, workers=workers, quiet=True, chunk_rows=64)
        result = pack_files(opts)
        outputs.append((result.packed_path.read_bytes(), result.record.fingerprint))
    assert outputs[0] == outputs[1]
    assert pq.ParquetFile(tmp_path / "w3" / "training_8.idx.parquet").num_row_groups >= 3
