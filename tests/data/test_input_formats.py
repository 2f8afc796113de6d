"""The table of input formats: Arrow IPC as ``datasets`` writes it (streams: its cache files and a
``save_to_disk`` directory's shards) and as ``pyarrow`` writes a file, read as the same samples as JSONL; a
damaged ``.arrow`` is one InputError line naming the file (exit 2), never a traceback and never a silently
shorter dataset; what no entry reads is refused naming the formats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bridgepack
from _support.pack_inputs import random_examples, write_jsonl
from bridgepack.cli import main
from bridgepack.data.samples import INPUT_FORMATS, iter_chunks
from bridgepack.errors import InputError

ROWS = random_examples(np.random.default_rng(7), 40, 30)
SHORT = random_examples(np.random.default_rng(8), 5, 3)  # three batches of a damaged file, each byte tried


def _samples(path: Path | list[Path]) -> list[dict[str, Any]]:
    """The rows every chunk of ``path`` holds, as Python values (chunk order)."""
    paths = path if isinstance(path, list) else [path]
    rows: list[dict[str, Any]] = []
    for chunk in iter_chunks(paths, 7):
        assert chunk.batch is not None
        rows += chunk.batch.to_pylist()
    return rows


def _stream(path: Path, rows: list[dict[str, Any]], batch: int = 8) -> Path:
    table = pa.Table.from_pylist(rows)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        for part in table.to_batches(max_chunksize=batch):
            writer.write_batch(part)
    return path


def _ipc_file(path: Path, rows: list[dict[str, Any]], batch: int = 8) -> Path:
    table = pa.Table.from_pylist(rows)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=batch)
    return path


def test_datasets_arrow_files_read_as_their_rows(tmp_path: Path) -> None:
    """A ``save_to_disk`` directory's two shards and a ``map`` cache file, as ``datasets`` wrote them."""
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_list(ROWS)
    dataset.save_to_disk(str(tmp_path / "saved"), num_shards=2)
    shards = sorted((tmp_path / "saved").glob("data-*.arrow"))
    assert len(shards) == 2
    assert _samples(shards) == ROWS == _samples(tmp_path / "saved")  # the directory, through datasets
    cached = tmp_path / "cache" / "train.arrow"
    cached.parent.mkdir()
    dataset.map(lambda row: row, cache_file_name=str(cached), writer_batch_size=16)
    assert _samples(cached) == ROWS


def test_ipc_file_and_stream_pack_as_jsonl_does(tmp_path: Path) -> None:
    jsonl = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    inputs = {
        "jsonl": jsonl,
        "stream": _stream(tmp_path / "rows.arrows", ROWS, batch=5),
        "file": _ipc_file(tmp_path / "rows.arrow", ROWS, batch=11),
    }
    packed = {
        kind: pq.read_table(bridgepack.pack(path, tmp_path / kind, 64, eos_id=2).packed_path)
        for kind, path in inputs.items()
    }
    assert packed["stream"].equals(packed["jsonl"]) and packed["file"].equals(packed["jsonl"])


@pytest.mark.parametrize("write", [_stream, _ipc_file], ids=["stream", "file"])
def test_every_cut_is_an_error_naming_the_file(tmp_path: Path, write: Any) -> None:
    """Cut anywhere -- inside a batch, at a batch boundary (a stream then reads cleanly to its cut: only
    the missing end-of-stream marker tells), in the footer -- the reader refuses the file in one line."""
    whole = write(tmp_path / "whole.arrow", SHORT, batch=2).read_bytes()
    cut = tmp_path / "cut.arrow"
    for size in range(len(whole)):
        cut.write_bytes(whole[:size])
        with pytest.raises(InputError) as refused:
            _samples(cut)
        message = str(refused.value)
        assert message.startswith(f"{cut}: ") and "\n" not in message, message


def test_a_flipped_byte_is_read_or_refused_never_a_crash(tmp_path: Path) -> None:
    """IPC has no checksums: a flipped value byte reads as another value (a token id out of range is
    the sample rule's DataError); a flipped offset or length is refused, as the full validation finds."""
    whole = _stream(tmp_path / "whole.arrow", SHORT, batch=2).read_bytes()
    flipped = tmp_path / "flipped.arrow"
    outcomes = set()
    for at in range(len(whole)):
        data = bytearray(whole)
        data[at] ^= 0x41
        flipped.write_bytes(bytes(data))
        try:
            _samples(flipped)
            outcomes.add("read")
        except InputError as error:
            assert str(error).startswith(f"{flipped}: "), error
            outcomes.add("refused")
    assert outcomes == {"read", "refused"}


def _rows_before_the_error(batches: Any) -> int:
    """Rows pyarrow itself hands out before it stops on the damage."""
    rows = 0
    try:
        for batch in batches:
            rows += batch.num_rows
    except (pa.ArrowException, OSError):
        return rows
    raise AssertionError("pyarrow read the damaged file whole")


def test_a_truncated_arrow_file_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arrow = _stream(tmp_path / "data-00000-of-00001.arrow", ROWS, batch=10)
    arrow.write_bytes(arrow.read_bytes()[: arrow.stat().st_size // 2])
    read = _rows_before_the_error(pa.ipc.open_stream(arrow.read_bytes()))
    code = main(["pack", str(arrow), "--out", str(tmp_path / "out"), "--pack-size", "64", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: {arrow}: damaged after row {read - 1} (") and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_what_no_format_reads_is_refused_naming_the_formats(tmp_path: Path) -> None:
    listed = "JSON Lines (.jsonl .json .ndjson +.gz +.zst +.zstd +.bz2); Parquet (.parquet .pq); Arrow IPC"
    for name in ("rows.csv", "rows.parquet.gz"):  # a Parquet file is compressed inside, never as a whole
        (tmp_path / name).write_bytes(b"x")
        with pytest.raises(InputError, match=f"{name}: unknown input format") as refused:
            list(iter_chunks([tmp_path / name]))
        assert listed in str(refused.value)
    (tmp_path / "folder").mkdir()
    with pytest.raises(InputError, match="folder: a directory of no input format bridgepack reads"):
        list(iter_chunks([tmp_path / "folder"]))
    assert [f.name for f in INPUT_FORMATS][:3] == ["JSON Lines", "Parquet", "Arrow IPC"]


def test_a_damaged_parquet_row_group_names_the_last_row_read(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), path, row_group_size=10)
    data = bytearray(path.read_bytes())
    footer = pq.ParquetFile(path).metadata.row_group(2).column(0)
    data[footer.data_page_offset + footer.total_compressed_size // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    read = _rows_before_the_error(pq.ParquetFile(path, page_checksum_verification=True).iter_batches(7))
    assert 20 <= read < 30  # the third row group
    with pytest.raises(InputError, match=rf"rows\.parquet: damaged after row {read - 1} \("):
        _samples(path)
