"""Every reader on structured garbage: the only allowed failure is a one-line BridgepackError naming the file.

Bounded (the ``ci`` profile's examples per test, inputs of a few KiB); ``fuzz/run.py`` runs the same
targets for minutes, coverage-guided. The limits readers state in ``docs/failure-behaviour.md`` (line
length, nesting, alias expansion) are each checked here with an input just past them.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _support.fuzz_strategies import (
    arrow_ipc_documents,
    golden_documents,
    json_values,
    jsonl_documents,
    metadata_documents,
    mutated,
    parquet_documents,
    sample_records,
    yaml_documents,
)
from _support.fuzz_targets import Target, check, sample_target_name, target, targets
from _support.sample_files import arrow_ipc_bytes
from bridgepack.data.samples import INPUT_FORMATS
from bridgepack.errors import BridgepackError, InputError


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    """One directory per module (hypothesis reruns a test body many times; tmp_path is per test)."""
    with tempfile.TemporaryDirectory(prefix="bridgepack-fuzz-") as tmp:
        yield Path(tmp)


@pytest.mark.parametrize("chosen", targets(), ids=lambda t: t.name)
def test_seeds_are_read(chosen: Target, workdir: Path) -> None:
    """The seeds are valid inputs: the reader returns (so mutations start from the happy path)."""
    for seed in chosen.seeds:
        path = chosen.path_in(workdir)
        path.write_bytes(seed)
        if chosen.name in ("overrides", "mlm-args"):
            check(chosen, seed, workdir)
        else:
            chosen.read(path)


@pytest.mark.parametrize("chosen", targets(), ids=lambda t: t.name)
def test_mutated_seeds(chosen: Target, workdir: Path) -> None:
    @given(mutated(chosen.seeds, max_len=8192))
    def run(data: bytes) -> None:
        check(chosen, data, workdir)

    run()


#: A file input format's name (``INPUT_FORMATS``) -> documents of that format shaped like samples.
SAMPLE_DOCUMENTS = {
    "JSON Lines": jsonl_documents(sample_records()),
    "Parquet": parquet_documents(("input_ids", "loss_mask")),
    "Arrow IPC": arrow_ipc_documents(("input_ids", "loss_mask")),
}
FILE_FORMATS = [fmt for fmt in INPUT_FORMATS if fmt.suffixes]


def test_every_file_input_format_is_fuzzed() -> None:
    """A format added to the input-format table has its target and its shaped documents here."""
    assert set(SAMPLE_DOCUMENTS) == {fmt.name for fmt in FILE_FORMATS}
    assert {sample_target_name(fmt) for fmt in FILE_FORMATS} <= {t.name for t in targets()}


STRUCTURED = [
    *((sample_target_name(fmt), SAMPLE_DOCUMENTS[fmt.name]) for fmt in FILE_FORMATS),
    ("packed-parquet", parquet_documents(("input_ids", "loss_mask", "seq_start_id"))),
    ("metadata", metadata_documents()),
    ("curves-golden", golden_documents()),
    ("curves-jsonl", jsonl_documents(st.dictionaries(st.sampled_from(["step", "lm loss"]), json_values))),
    ("bridge-yaml", yaml_documents()),
    ("model-config", yaml_documents()),
    ("overrides", st.lists(st.text(max_size=30), max_size=4).map(lambda lines: "\n".join(lines).encode())),
    ("mlm-args", st.lists(st.sampled_from(["--seq-length", "--bf16", "--lr", "4", "x", "'", "--a=b"])).map(
        lambda words: " ".join(words).encode()
    )),
]  # fmt: skip


@pytest.mark.parametrize(("name", "documents"), STRUCTURED, ids=[name for name, _ in STRUCTURED])
def test_structured_garbage(name: str, documents: st.SearchStrategy[bytes], workdir: Path) -> None:
    chosen = target(name)

    @given(documents)
    def run(data: bytes) -> None:
        check(chosen, data, workdir)

    run()


def test_legacy_npy_of_any_plain_objects(workdir: Path) -> None:
    """Object arrays of any plain data (what the restricted unpickler admits) fail only as BridgepackError."""
    chosen = target("legacy-npy")

    @given(st.lists(json_values, max_size=4))
    def run(rows: list[object]) -> None:
        array = np.empty(len(rows), dtype=object)
        array[:] = rows
        sink = workdir / "rows.npy"
        np.save(sink, array, allow_pickle=True)
        check(chosen, sink.read_bytes(), workdir)

    run()


# ------------------------------------------------------------------------------------- stated limits


def _read(name: str, data: bytes, directory: Path) -> str:
    chosen = target(name)
    path = chosen.path_in(directory)
    path.write_bytes(data)
    with pytest.raises(BridgepackError) as caught:
        chosen.read(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


def test_json_nesting_over_1024_is_refused_with_position(tmp_path: Path) -> None:
    deep = b"[" * 1025 + b"]" * 1025
    assert "depth limit exceeded" in _read("metadata", deep, tmp_path)
    assert "10_metadata.jsonl:1:1026" in _read("metadata", deep, tmp_path)
    assert "in.jsonl:1: malformed JSON" in _read("samples-jsonl", b'{"input_ids": ' + deep + b"}\n", tmp_path)
    assert "not JSON" in _read("curves-golden", b'{"a": ' + deep + b"}", tmp_path)


def test_json_nesting_at_1024_is_read_and_never_recurses_in_messages(tmp_path: Path) -> None:
    deep = b"[" * 1022 + b"]" * 1022  # inside [{...}]: 1024 levels in all
    message = _read("metadata", b'[{"pack_size": ' + deep + b"}]", tmp_path)
    assert "entry 0: missing key" in message
    doc = (
        b'[{"dataset_max_seqlen": 1, "max_samples_per_bin": 1, "packing_factor": 1, "packing_efficiency": 1,'
    )
    doc += b'"pack_size": ' + deep + b', "min_packed_seqlen": 1}]'
    assert "key 'pack_size': expected a number, found [[[...]]]" in _read("metadata", doc, tmp_path)


def test_yaml_nesting_over_64_is_refused_with_line(tmp_path: Path) -> None:
    block = "".join("  " * k + f"k{k}:\n" for k in range(65)) + "  " * 65 + "v: 1\n"
    assert "in.yaml:65:" in _read("bridge-yaml", block.encode(), tmp_path)
    assert "nested deeper than 64 levels" in _read("bridge-yaml", b"a: " + b"[" * 70 + b"]" * 70, tmp_path)
    ok = "".join("  " * k + f"k{k}:\n" for k in range(63)) + "  " * 63 + "v: 1\n"
    from bridgepack.doctor import load_config

    (tmp_path / "ok.yaml").write_text(ok)
    assert load_config(tmp_path / "ok.yaml").raw["k0"] is not None


def test_yaml_alias_cycle_and_alias_bomb_are_refused(tmp_path: Path) -> None:
    assert "(a cycle)" in _read("bridge-yaml", b"a: &a [1, *a]\n", tmp_path)
    bomb = "a: &a [" + ",".join(["x"] * 10) + "]\n"
    for level, name in enumerate("bcdef"):
        previous = "abcde"[level]
        bomb += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 10) + "]\n"
    message = _read("bridge-yaml", bomb.encode(), tmp_path)
    assert "in.yaml:6:" in message and "more than 200000 nodes with aliases expanded" in message
    # Ordinary anchors (a shared defaults block) are fine.
    (tmp_path / "ok.yaml").write_text(
        "base: &b {seq_length: 8}\nmodel:\n  <<: *b\n  context_parallel_size: 2\n"
    )
    from bridgepack.doctor import load_config

    assert load_config(tmp_path / "ok.yaml").view.model.seq_length == 8


def test_yaml_control_character_names_the_line(tmp_path: Path) -> None:
    assert "in.yaml:2: character #x0000 is not allowed" in _read("bridge-yaml", b"a: 1\nb: \x00\n", tmp_path)


def test_jsonl_line_over_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bridgepack.data.samples import _readers

    monkeypatch.setattr(_readers, "MAX_LINE_BYTES", 64)
    monkeypatch.setattr(_readers, "_READ_BLOCK", 32)  # the buffer grows 32 -> 64 bytes, then the limit
    line = b'{"input_ids": [' + b"5, " * 30 + b"2]}\n"
    message = _read("samples-jsonl", b'{"input_ids": [5, 2]}\n' + line, tmp_path)
    assert message.endswith("in.jsonl:2: line longer than 64 bytes")


def test_log_line_over_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bridgepack.curves import _logs

    monkeypatch.setattr(_logs, "BLOCK_BYTES", 32)
    monkeypatch.setattr(_logs, "MAX_LINE_BYTES", 100)
    head = b" iteration 1/ 2 | lm loss: 9.5 |\n"
    message = _read("curves-log", head + b"x" * 200, tmp_path)
    assert message.endswith("in.log:2: line longer than 100 bytes")


def test_messages_are_one_line_even_when_a_library_says_more(tmp_path: Path) -> None:
    assert (
        str(InputError("a.parquet: cannot read (first\nsecond\r\n)"))
        == "a.parquet: cannot read (first second )"
    )


def test_truncated_npy_header_is_an_input_error(tmp_path: Path) -> None:
    header = b"\x93NUMPY\x01\x00\x10\x00{'descr': '|O',  \n"
    assert "not a .npy file" in _read("legacy-npy", header, tmp_path)


def test_pickle_stream_garbage_is_an_input_error(tmp_path: Path) -> None:
    good = target("legacy-npy").seeds[0]
    start = good.index(b"\n") + 1
    message = _read("legacy-npy", good[:start] + pickle.dumps([1, 2])[:-3], tmp_path)
    assert "legacy .npy" in message


def test_golden_non_integer_start_step(tmp_path: Path) -> None:
    doc = orjson.dumps({"lm loss": {"start_step": "x", "values": [1.0]}})
    assert "field 'lm loss': 'start_step' must be an integer, found 'x'" in _read(
        "curves-golden", doc, tmp_path
    )


def test_packed_footer_with_a_negative_row_count(tmp_path: Path) -> None:
    """Found by atheris: a footer saying -2 rows made ``len(reader)`` raise ValueError."""
    seed = target("packed-parquet").seeds[0]
    size = int.from_bytes(seed[-8:-4], "little")
    start = len(seed) - 8 - size
    footer = seed[start:-8].replace(b"\x16\x04", b"\x16\x03", 1)  # num_rows (field 3, i64): zigzag 2 -> -2
    message = _read("packed-parquet", seed[:start] + footer + seed[-8:], tmp_path)
    assert "corrupt Parquet footer (row groups hold 2 rows, it says -2)" in message


def test_legacy_npy_id_beyond_int64(tmp_path: Path) -> None:
    """Found by atheris: an id of 2**70 raised OverflowError from numpy's conversion."""
    rows = np.empty(1, dtype=object)
    rows[0] = {"input_ids": [2**70], "loss_mask": [1], "seq_start_id": [0]}
    sink = tmp_path / "rows.npy"
    np.save(sink, rows, allow_pickle=True)
    assert "field 'input_ids': expected a list of integers" in _read(
        "legacy-npy", sink.read_bytes(), tmp_path
    )


def test_csv_row_with_more_cells_than_the_header(tmp_path: Path) -> None:
    assert "in.csv:3: more cells than the header has columns" in _read(
        "curves-csv", b"step,lm loss\n1,9.5\n2,9.4,oops\n", tmp_path
    )


def test_log_records_without_fields_and_odd_step_times(tmp_path: Path) -> None:
    """A record header with no ``key: value`` after it, and a ``Step Time`` that is not a number."""
    chosen = target("curves-log")
    path = chosen.path_in(tmp_path)
    path.write_bytes(b" iteration 1/ 2 |\nStep Time : 2025-s\n iteration 2/ 2 | lm loss: 9.5 |\n")
    curves = chosen.read(path)
    assert curves.metrics["lm loss"].as_dict() == {2: 9.5}  # type: ignore[attr-defined]
    check(chosen, b" iteration 1/ 2 |\n iteration 2/ 2 |\n", tmp_path)  # records, not one field


def test_override_value_the_yaml_parser_rejects() -> None:
    from bridgepack.doctor import parse_override
    from bridgepack.errors import UsageError

    with pytest.raises(UsageError, match=r"override 'a=\[1,2': cannot parse"):
        parse_override("a=[1,2")


def test_npy_header_with_mixed_key_types(tmp_path: Path) -> None:
    """Found by atheris: a header dict with a bytes key made numpy's sort raise TypeError."""
    body = b"{'descr': '|O', b'x': 1, 'fortran_order': False, 'shape': (1,), }"
    header = b"\x93NUMPY\x01\x00" + len(body + b"\n").to_bytes(2, "little") + body + b"\n"
    assert "not a .npy file" in _read("legacy-npy", header, tmp_path)


def test_validation_line_with_an_iteration_beyond_int64(tmp_path: Path) -> None:
    """Found by atheris: ``validation loss at iteration 10**30`` overflowed the int64 iteration array."""
    chosen = target("curves-log")
    check(
        chosen,
        b" iteration 1/ 2 | lm loss: 9.5 |\n validation loss at iteration "
        + b"9" * 30
        + b" | lm loss value: 9.4 |\n",
        tmp_path,
    )


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "file"])
def test_arrow_ipc_column_name_that_is_not_utf8(stream: bool, tmp_path: Path) -> None:
    """An Arrow IPC schema's names are decoded when read: a name that is not UTF-8 raised
    ``UnicodeDecodeError`` from the sample reader (found by fuzzing ``samples-arrow``)."""
    table = pa.table({"input_ids": [[5, 2]], "QQ": [1]})
    data = arrow_ipc_bytes(table, stream=stream)
    assert data.count(b"QQ") >= 1
    message = _read("samples-arrow", data.replace(b"QQ", b"\x80\x80"), tmp_path)
    assert message.startswith(f"{tmp_path / 'in.arrow'}: cannot read as Arrow IPC ("), message
