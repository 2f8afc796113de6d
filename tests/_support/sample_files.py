"""A table of rows written as a file (or folder) of each input format ``bridgepack pack`` reads, keyed by the
format's name in the input-format table (``bridgepack.data.samples.INPUT_FORMATS``): sweeps over input formats
take them from here and check their keys against the table, so a format added there is swept everywhere."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

#: ``(table, path) -> the path written``: the suffix of ``path`` is replaced by the format's own.
Writer = Callable[[pa.Table, Path], Path]


def jsonl_file(table: pa.Table, path: Path) -> Path:
    path = path.with_suffix(".jsonl")
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in table.to_pylist()))
    return path


def parquet_bytes(table: pa.Table, row_group_size: int = 2) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=row_group_size)
    return sink.getvalue()


def parquet_file(table: pa.Table, path: Path) -> Path:
    path = path.with_suffix(".parquet")
    pq.write_table(table, path)  # no bridgepack run id
    return path


def arrow_ipc_bytes(table: pa.Table, max_chunksize: int = 16, stream: bool = True) -> bytes:
    """``table`` as Arrow IPC: a stream (what ``datasets`` writes in its ``.arrow`` files) or a file."""
    sink = io.BytesIO()
    opened = pa.ipc.new_stream if stream else pa.ipc.new_file
    with opened(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max_chunksize)
    return sink.getvalue()


def arrow_stream_file(table: pa.Table, path: Path) -> Path:
    path = path.with_suffix(".arrow")
    path.write_bytes(arrow_ipc_bytes(table))
    return path


def arrow_file_file(table: pa.Table, path: Path) -> Path:
    """An IPC *file* under the stream's suffix: the file's magic, not its name, says which IPC it is."""
    path = path.with_suffix(".arrows")
    path.write_bytes(arrow_ipc_bytes(table, stream=False))
    return path


def datasets_dir(table: pa.Table, path: Path) -> Path:
    datasets = pytest.importorskip("datasets")
    datasets.Dataset(table).save_to_disk(str(path), num_shards=2)
    return path


#: An input format's name -> every way a table is written in it (the first is the usual one).
WRITERS: dict[str, tuple[Writer, ...]] = {
    "JSON Lines": (jsonl_file,),
    "Parquet": (parquet_file,),
    "Arrow IPC": (arrow_stream_file, arrow_file_file),
    "a datasets save_to_disk directory": (datasets_dir,),
}
