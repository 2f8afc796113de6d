"""Log reader on logs built from the documented line formats: what the real excerpts do not show."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.curves import read_curves
from bridgepack.errors import InputError
from curves._lines import mlm_line, nemo_line, validation_block


def write(tmp_path: Path, lines: list[str], name: str = "train.log", newline: bool = True) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + ("\n" if newline else ""))
    return path


def test_restart_in_one_file_splits_segments_and_later_values_win(tmp_path: Path) -> None:
    first = [mlm_line(i, 10.0 - i / 100) for i in range(10, 60, 10)]
    resumed = [
        "loading checkpoint from iteration 30",
        *[mlm_line(i, 20.0 - i / 100) for i in range(40, 80, 10)],
    ]
    curves = read_curves(write(tmp_path, first + resumed))
    assert curves.restarts == 1
    seg_a, seg_b = curves.segments
    assert (seg_a.first_iteration, seg_a.last_iteration, seg_a.records, seg_a.line) == (10, 50, 5, 1)
    assert (seg_b.first_iteration, seg_b.last_iteration, seg_b.records, seg_b.line) == (40, 70, 4, 7)
    loss = curves.metrics["lm loss"].as_dict()
    assert sorted(loss) == [10, 20, 30, 40, 50, 60, 70]
    assert loss[30] == pytest.approx(9.7) and loss[40] == pytest.approx(19.6)  # resumed run wins
    assert any("restart" in note and ":7:" in note for note in curves.notes)


def test_printed_nan_and_inf_are_real_values(tmp_path: Path) -> None:
    path = write(
        tmp_path, [mlm_line(1, 10.9), mlm_line(2, "nan", nans=1), mlm_line(3, "inf"), mlm_line(4, "-inf")]
    )
    loss = read_curves(path).metrics["lm loss"].as_dict()
    assert loss[1] == 10.9 and math.isnan(loss[2]) and loss[3] == math.inf and loss[4] == -math.inf


def test_nan_loss_left_off_the_line_is_a_missing_loss_not_a_skip(tmp_path: Path) -> None:
    lines = [mlm_line(10, 9.0), mlm_line(20, None), mlm_line(30, None, skipped=10), mlm_line(40, 8.5)]
    curves = read_curves(write(tmp_path, lines))
    assert sorted(curves.metrics["lm loss"].as_dict()) == [10, 40]
    assert curves.missing["lm loss"].tolist() == [20]
    assert curves.skipped.tolist() == [30]
    # grad norm is present on every line, so the record itself was read
    assert sorted(curves.metrics["grad-norm"].as_dict()) == [10, 20, 30, 40]


def test_timestamps_prefixes_old_fork_keys_and_seconds(tmp_path: Path) -> None:
    lines = [
        mlm_line(1, 10.5, timestamp="2026-08-22 10:00:00.123456", prefix="[default3]:"),
        mlm_line(2, 10.4, timestamp="2026-08-22 10:00:01", prefix="[lrdn3321:3]:"),
        mlm_line(3, 10.3, prefix="[default0]:", loss_key="lm-loss", time_ms=2500.0, time_unit="s"),
        mlm_line(4, 10.2),
    ]
    curves = read_curves(write(tmp_path, lines))
    assert curves.metrics["lm loss"].as_dict() == {1: 10.5, 2: 10.4, 3: 10.3, 4: 10.2}
    times = curves.metrics["iteration-time"].as_dict()
    assert times[1] == pytest.approx(0.1234) and times[3] == pytest.approx(2.5)


def test_two_records_on_one_physical_line(tmp_path: Path) -> None:
    glued = (
        mlm_line(10, 9.0)
        + mlm_line(20, 8.0).lstrip()
        + "[Rank 0] (after 20 iterations) memory (MB) | allocated: 1.0"
    )
    curves = read_curves(write(tmp_path, [glued, mlm_line(30, 7.0)]))
    assert curves.metrics["lm loss"].as_dict() == {10: 9.0, 20: 8.0, 30: 7.0}
    assert "allocated" not in curves.metrics


def test_truncated_last_line_is_dropped_with_a_note(tmp_path: Path) -> None:
    cut = mlm_line(30, 7.0)[:-60]
    curves = read_curves(write(tmp_path, [mlm_line(10, 9.0), mlm_line(20, 8.0), cut], newline=False))
    assert sorted(curves.metrics["lm loss"].as_dict()) == [10, 20]
    assert any("cut off" in n and "iteration 30" in n for n in curves.notes)


def test_non_numeric_value_is_noted_and_the_rest_kept(tmp_path: Path) -> None:
    curves = read_curves(write(tmp_path, [mlm_line(10, 9.0, extra="grad norm: n/a"), mlm_line(20, 8.0)]))
    assert curves.metrics["lm loss"].as_dict() == {10: 9.0, 20: 8.0}
    assert any("train.log:1: iteration 10: field 'grad norm': not a number: 'n/a'" in n for n in curves.notes)
    assert curves.metrics["grad-norm"].as_dict() == {10: 1.234, 20: 1.234}  # the word is not a NaN


def test_validation_sets_and_named_sets(tmp_path: Path) -> None:
    lines = [
        mlm_line(10, 9.0),
        validation_block(10, 8.9),
        validation_block(10, 8.8, " on validation set"),
        validation_block(10, 8.7, " on test set"),
        validation_block(10, 8.6, " on validation set-wiki"),
    ]
    m = read_curves(write(tmp_path, lines)).metrics
    assert m["lm loss validation"].as_dict() == {10: 8.8}  # the final block replaces the periodic one
    assert m["lm loss test"].as_dict() == {10: 8.7}
    assert m["lm loss validation-wiki"].as_dict() == {10: 8.6}


def test_step_time_attaches_to_the_next_iteration(tmp_path: Path) -> None:
    lines = [
        "Step Time : 0.81s GPU utilization: 123.4MODEL_TFLOP/s/GPU",
        mlm_line(10, 9.0),
        "Step Time : 0.79s GPU utilization: 125.0MODEL_TFLOP/s/GPU",
        mlm_line(20, 8.0),
    ]
    curves = read_curves(write(tmp_path, lines))
    assert curves.format == "bridge"
    assert curves.metrics["step-time"].as_dict() == {10: 0.81, 20: 0.79}
    assert curves.metrics["gpu-utilization"].as_dict() == {10: 123.4, 20: 125.0}


def test_nemo_iterations_shift_by_one(tmp_path: Path) -> None:
    curves = read_curves(write(tmp_path, [nemo_line(0, 10.84), nemo_line(1, 10.80)]))
    assert curves.format == "nemo"
    assert curves.metrics["lm loss"].as_dict() == {1: 10.84, 2: 10.80}


def test_forced_format_mlm_on_a_nemo_log_keeps_lightning_counting(tmp_path: Path) -> None:
    path = write(tmp_path, [nemo_line(0, 10.84), nemo_line(1, 10.80)])
    assert read_curves(path, "mlm").metrics["lm loss"].as_dict() == {0: 10.84, 1: 10.80}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty file"),
        ("hello\nworld\n", "no training iteration line found (tried formats: mlm, bridge, nemo"),
    ],
)
def test_unreadable_logs_name_the_problem(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.log"
    path.write_text(content)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        read_curves(path)


def test_missing_file_and_directory_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_curves(tmp_path / "nope.log")


def test_blocks_are_stitched_across_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record split by the block boundary is read whole (tiny blocks force many boundaries)."""
    from bridgepack.curves import _logs

    monkeypatch.setattr(_logs, "BLOCK_BYTES", 97)
    lines = [mlm_line(i, 10.0 - i / 1000) for i in range(1, 41)]
    lines.insert(20, "Step Time : 0.5s GPU utilization: 1.0TFLOP/s/GPU")
    curves = read_curves(write(tmp_path, lines))
    loss = curves.metrics["lm loss"]
    assert loss.iterations.tolist() == list(range(1, 41))
    np.testing.assert_allclose(loss.values, 10.0 - np.arange(1, 41) / 1000)
    assert curves.metrics["step-time"].as_dict() == {21: 0.5}


@given(st.lists(st.floats(min_value=1e-3, max_value=1e3, allow_nan=False), min_size=1, max_size=30))
def test_values_round_trip_through_the_printed_format(values: list[float]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), [mlm_line(k + 1, v) for k, v in enumerate(values)])
        got = read_curves(path).metrics["lm loss"].values
    np.testing.assert_allclose(got, [float(f"{v:E}") for v in values])


@given(
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from(["{:E}", "{:.3E}", "{!r}", "{:.1f}", "{:g}", "{:.17g}"]),
)
def test_kernel_parses_numbers_exactly_like_python_float(value: float, fmt: str) -> None:
    """The kernel's fast path and its fallback give the same double as ``float()``."""
    from bridgepack.curves import _kernel

    text = fmt.format(value)
    line = f" iteration 1/ 2 | x: {text} |\n".encode()
    out = _kernel.scan_records(line, b"iteration", 0)
    status, parsed = int(out.status[0]), float(out.value[0])
    assert status in (_kernel.STATUS_OK, _kernel.STATUS_SLOW)
    if status == _kernel.STATUS_OK:
        assert parsed == float(text) or (parsed == 0.0 and float(text) == 0.0)


def test_crlf_lines_odd_fields_and_long_numbers(tmp_path: Path) -> None:
    lines = [
        " iteration 1/ 10 | lm loss: 1.23456789012345678E+00 | no colon here | tiny: 1e-30 | neg: -0.5 |\r",
        " iteration 2/ 10 | lm loss: 9.5 |\r",
    ]
    curves = read_curves(write(tmp_path, lines))
    assert curves.metrics["lm loss"].as_dict() == {1: 1.23456789012345678, 2: 9.5}
    assert curves.metrics["tiny"].as_dict() == {1: 1e-30}
    assert curves.metrics["neg"].as_dict() == {1: -0.5}


def test_progress_is_advanced_by_the_bytes_read(tmp_path: Path) -> None:
    class Recorder:
        def __init__(self) -> None:
            self.total: float | None = None
            self.done = 0.0

        def add_task(self, description: str, total: float | None = None) -> int:
            self.total = total
            return 0

        def advance(self, task: int, advance: float = 1) -> None:
            self.done += advance

    path = write(tmp_path, [mlm_line(i, 9.0) for i in range(1, 50)])
    bar = Recorder()
    read_curves(path, progress=bar)
    assert bar.total == bar.done == path.stat().st_size
