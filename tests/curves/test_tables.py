"""Golden JSON, CSV, JSONL and TensorBoard readers, and format detection."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.curves import detect_format, read_curves, read_runs
from bridgepack.errors import DataError, InputError, UsageError


def test_golden_nan_string_is_not_recorded_but_numbers_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "golden_values.json"
    doc = {
        "lm loss": {
            "start_step": 1,
            "end_step": 4,
            "step_interval": 1,
            "values": {"1": "nan", "2": 10.5, "3": 10.4},
        },
        "num-zeros": {
            "start_step": 1,
            "end_step": 3,
            "step_interval": 1,
            "values": {"1": 5.0, "2": 6.0, "3": 7},
        },
    }
    path.write_text(json.dumps(doc))
    curves = read_curves(path)
    assert curves.format == "golden"
    assert curves.metrics["lm loss"].as_dict() == {2: 10.5, 3: 10.4}
    assert curves.metrics["num-zeros"].as_dict() == {1: 5.0, 2: 6.0, 3: 7.0}


def test_golden_values_as_a_list_use_start_and_interval(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(
        json.dumps({"lm loss": {"start_step": 0, "end_step": 10, "step_interval": 5, "values": [1, 2, 3]}})
    )
    assert read_curves(path).metrics["lm loss"].as_dict() == {0: 1.0, 5: 2.0, 10: 3.0}


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("", InputError, "empty file"),
        ("{not json", InputError, "not JSON"),
        ('{"lm loss": [1, 2]}', InputError, "field 'lm loss': expected an object with 'values'"),
        ('{"lm loss": {"values": {"1": "abc"}}}', DataError, "step 1: not a number: 'abc'"),
        ('{"lm loss": {"values": {"one": 1.0}}}', DataError, "step keys must be integers"),
    ],
)
def test_golden_bad_input(tmp_path: Path, text: str, error: type[Exception], message: str) -> None:
    path = tmp_path / "g.json"
    path.write_text(text)
    with pytest.raises(error, match=message):
        read_curves(path, "golden")


def test_wandb_csv_export(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text(
        "_step,run_name,lm loss,grad norm,_runtime\n10,a,10.5,1.2,3\n20,a,,1.1,4\n30,a,nan,1.0,5\n"
    )
    curves = read_curves(path)
    assert curves.format == "csv"
    loss = curves.metrics["lm loss"].as_dict()
    assert list(loss) == [10, 30] and loss[10] == 10.5 and math.isnan(loss[30])  # empty cell: no value
    assert curves.metrics["grad-norm"].as_dict() == {10: 1.2, 20: 1.1, 30: 1.0}
    assert "run_name" not in curves.metrics and "_runtime" not in curves.metrics


WANDB_PANEL = (
    '"Step","sft - v2 - lm loss","sft - v2 - lm loss__MIN","sft - v2 - lm loss__MAX",'
    '"base - lm loss","base - lm loss__MIN","base - lm loss__MAX"\n'
    "1,2.5,2.5,2.5,2.75,2.75,2.75\n2,2.25,2.25,2.25,,,\n3,2.0,2.0,2.0,2.5,2.5,2.5\n"
)


def test_wandb_panel_of_two_runs_is_two_runs(tmp_path: Path) -> None:
    path = tmp_path / "panel.csv"
    path.write_text(WANDB_PANEL)
    sft, base = read_runs(path)
    assert (sft.run, base.run) == ("sft - v2", "base")  # a run name may hold " - "
    assert sft.source == f"{path} (run 'sft - v2')"
    assert sft.metrics["lm loss"].as_dict() == {1: 2.5, 2: 2.25, 3: 2.0}
    assert base.metrics["lm loss"].as_dict() == {1: 2.75, 3: 2.5}  # its blank step stays blank
    assert set(sft.metrics) == set(base.metrics) == {"lm loss"}  # __MIN/__MAX are not metrics
    assert [c.run for c in read_runs(path, runs=["base", "sft - v2"])] == ["base", "sft - v2"]
    assert read_curves(path, run="base").metrics["lm loss"].as_dict() == {1: 2.75, 3: 2.5}
    with pytest.raises(
        UsageError, match=r"panel\.csv holds 2 runs \('sft - v2', 'base'\): choose with runs NAME"
    ):
        read_curves(path)
    with pytest.raises(UsageError, match=r"^runs 'sft': .*panel\.csv holds 2 run\(s\): 'sft - v2', 'base'"):
        read_runs(path, runs=["sft"])


def test_wandb_panel_runs_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bridgepack.cli import main

    path = tmp_path / "panel.csv"
    path.write_text(WANDB_PANEL)
    assert main(["curves", "compare", str(path)]) == 2
    assert "holds 2 runs ('sft - v2', 'base')" in capsys.readouterr().err
    argv = ["curves", "compare", str(path), "--run", "base", "--run", "sft - v2", "--format", "json"]
    assert main([*argv, "-t", "golden"]) == 1  # the runs are 9% and 20% apart at steps 1 and 3
    doc = json.loads(capsys.readouterr().out)
    (comp,) = doc["comparisons"]
    assert comp["reference"] == f"{path} (run 'base')" and comp["shared_steps"] == 2
    assert comp["only_in_candidate"] == {"count": 1, "first": [2]}


def test_csv_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbfStep,lm loss\n1,2.5\n2,2.25\n")
    assert read_curves(path).metrics["lm loss"].as_dict() == {1: 2.5, 2: 2.25}


def test_golden_with_bare_nan_as_python_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "golden.json"
    values = {"1": 2.5, "2": float("nan"), "3": float("inf")}
    path.write_text(
        json.dumps({"lm loss": {"start_step": 1, "end_step": 3, "step_interval": 1, "values": values}})
    )
    assert "NaN" in path.read_text()
    curves = read_curves(path)
    assert curves.metrics["lm loss"].as_dict() == {1: 2.5, 3: math.inf}  # NaN: a step not recorded
    assert curves.notes == [f'{path}: steps marked "nan" (not recorded): lm loss 1']


def test_csv_word_in_a_numeric_column_names_the_row(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("step,lm loss\n1,10.5\n2,oops\n")
    with pytest.raises(DataError, match=r"bad.csv:3: field 'lm loss': expected a number, found 'oops'"):
        read_curves(path)


def test_csv_without_step_column(tmp_path: Path) -> None:
    path = tmp_path / "nostep.csv"
    path.write_text("epoch,lm loss\n1,10.5\n")
    with pytest.raises(InputError, match="no step column"):
        read_curves(path)


def test_jsonl_history_with_step_preference(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    rows = [
        {"_step": 0, "iteration": 10, "lm loss": 10.5, "_wandb": {"runtime": 1}},
        {"_step": 1, "iteration": 20, "lm loss": "inf", "tag": "x"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    curves = read_curves(path)
    assert curves.format == "jsonl"
    assert curves.metrics["lm loss"].as_dict() == {10: 10.5, 20: math.inf}


def test_jsonl_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"step": 1, "lm loss": 1}\n[1, 2]\n')
    with pytest.raises(InputError, match=r"h.jsonl:2: expected a JSON object"):
        read_curves(path)


def test_detection(tmp_path: Path) -> None:
    golden = tmp_path / "g"
    golden.write_text('{\n  "lm loss": {"values": {"1": 1.0}}\n}\n')
    jsonl = tmp_path / "j"
    jsonl.write_text('{"step": 1, "lm loss": 1.0}\n')
    log = tmp_path / "l"
    log.write_text("hello\n")
    assert (detect_format(golden), detect_format(jsonl), detect_format(log)) == ("golden", "jsonl", "mlm")
    assert detect_format(tmp_path) == "tensorboard"
    with pytest.raises(UsageError, match=r"^input_format: expected"):
        read_curves(log, "parquet")


def test_tensorboard_events_through_tbparse(tmp_path: Path) -> None:
    pytest.importorskip("tbparse")
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(tmp_path))
    for step, (loss, gnorm) in enumerate([(10.9, 1.5), (10.5, 1.25), (10.25, 1.0)], start=1):
        summary = Summary(
            value=[
                Summary.Value(tag="lm loss", simple_value=loss),
                Summary.Value(tag="grad-norm", simple_value=gnorm),
            ]
        )
        writer.add_event(Event(step=step, wall_time=1.0 * step, summary=summary))
    writer.close()
    curves = read_curves(tmp_path)
    assert curves.format == "tensorboard"
    assert curves.metrics["lm loss"].as_dict() == {1: pytest.approx(10.9), 2: 10.5, 3: 10.25}
    assert curves.metrics["grad-norm"].as_dict() == {1: 1.5, 2: 1.25, 3: 1.0}


def test_tensorboard_directory_without_events(tmp_path: Path) -> None:
    pytest.importorskip("tbparse")
    with pytest.raises(InputError, match="no scalar values"):
        read_curves(tmp_path)


def test_tensorboard_without_the_extra_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "tbparse", None)  # import fails as if not installed
    with pytest.raises(
        InputError, match=r"needs the 'tensorboard' extra \(pip install 'bridgepack\[tensorboard\]'\)"
    ):
        read_curves(tmp_path)


def _mask(crc: int) -> int:
    """TFRecord's mask of a CRC (TensorFlow's ``crc32c::Mask``)."""
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


@pytest.mark.parametrize(
    ("data", "crc"),
    [  # CRC-32C check values: the catalogue's "123456789" and RFC 3720 B.4's iSCSI vectors
        (b"123456789", 0xE3069283),
        (bytes(32), 0x8A9136AA),
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
    ],
)
def test_record_checksums_are_crc32c(data: bytes, crc: int) -> None:
    pytest.importorskip("google_crc32c")
    from bridgepack.curves._tables import _masked_crc32c

    assert _masked_crc32c(data) == _mask(crc)


@given(st.binary(max_size=300))
def test_record_checksums_match_tensorboards_own(data: bytes) -> None:
    pytest.importorskip("google_crc32c")
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    from bridgepack.curves._tables import _masked_crc32c

    assert _masked_crc32c(data) == masked_crc32c(data)


def test_a_flipped_byte_in_a_records_data_is_noted(tmp_path: Path) -> None:
    """The length's checksum alone passed a flipped data byte; TensorBoard then stops at that record
    without a word, and the run read as a shorter one."""
    pytest.importorskip("tbparse")
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(tmp_path / "run"))
    for step in range(1, 5):
        value = Summary.Value(tag="lm loss", simple_value=10.0 - step)
        writer.add_event(Event(step=step, wall_time=float(step), summary=Summary(value=[value])))
    writer.close()
    [events] = (tmp_path / "run").glob("events.out.tfevents*")
    assert read_curves(tmp_path / "run").damaged == []
    data = bytearray(events.read_bytes())
    starts = [0]
    while starts[-1] < len(data):
        starts.append(starts[-1] + 12 + int.from_bytes(data[starts[-1] : starts[-1] + 8], "little") + 4)
    third = starts[2]
    data[third + 12 + 3] ^= 0x01  # inside the third record's data
    events.write_bytes(bytes(data))
    curves = read_curves(tmp_path / "run")
    assert curves.damaged == [
        f"{events}: record 3 at byte {third} fails its data checksum; later records are not read"
    ]
