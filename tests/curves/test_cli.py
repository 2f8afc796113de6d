"""``bridgepack curves compare|show|export``: exit codes, JSON, plots, HTML, golden export round trip."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from bridgepack.cli import main
from bridgepack.curves import (
    SCHEMA_VERSION,
    CompareReport,
    ExportReport,
    Profile,
    ShowReport,
    compare_curves,
    read_curves,
)
from curves._lines import mlm_line

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def log(tmp_path: Path, name: str, losses: dict[int, float | None], extra: list[str] | None = None) -> Path:
    path = tmp_path / name
    lines = [mlm_line(it, loss) for it, loss in losses.items()] + (extra or [])
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    a = log(tmp_path, "a.log", {i: 10.9 - i / 100 for i in range(10, 110, 10)})
    b = log(tmp_path, "b.log", {i: 10.9 - i / 100 + 0.01 for i in range(10, 110, 10)})
    c = log(tmp_path, "c.log", {i: 10.9 - i / 100 + (0.5 if i >= 60 else 0.0) for i in range(10, 110, 10)})
    return a, b, c


def test_compare_match_exits_0(pair: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b, _ = pair
    assert main(["curves", "compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "verdict: match" in out and "b.log" in out


def test_compare_mismatch_exits_1_and_reports_first_divergence(
    pair: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, _, c = pair
    assert main(["curves", "compare", str(a), str(c), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1 and doc["passed"] is False
    (comp,) = doc["comparisons"]
    assert comp["first_divergence"]["step"] == 60
    assert comp["max_abs_diff"]["value"] == pytest.approx(0.5)
    assert comp["failing_steps"] == 5


def test_compare_steps_window(pair: tuple[Path, Path, Path]) -> None:
    a, _, c = pair
    assert main(["curves", "compare", str(a), str(c), "--steps", "10:50"]) == 0
    assert main(["curves", "compare", str(a), str(c), "--steps", "50:10"]) == 2
    assert main(["curves", "compare", str(a), str(c), "--steps", "x"]) == 2


def test_compare_unreadable_exits_2(tmp_path: Path, pair: tuple[Path, Path, Path]) -> None:
    a, _, _ = pair
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert main(["curves", "compare", str(a), str(empty)]) == 2
    assert main(["curves", "compare", str(a), str(tmp_path / "missing.log")]) == 2
    assert main(["curves", "compare", str(a)]) == 2


def test_metric_in_one_run_only_is_named(
    tmp_path: Path, pair: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, _ = pair
    assert main(["curves", "compare", str(a), str(b), "--metric", "mtp_1 loss"]) == 1
    err = capsys.readouterr().err
    assert "no metric 'mtp_1 loss'" in err and "Traceback" not in err


def test_plot_and_html(pair: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, b, c = pair
    png, page = tmp_path / "out.png", tmp_path / "out.html"
    assert main(["curves", "compare", str(a), str(b), str(c), "--plot", str(png), "--html", str(page)]) == 1
    assert png.read_bytes().startswith(PNG_MAGIC)
    html = page.read_text()
    assert "MISMATCH" in html and "c.log" in html
    inline = html.split("data:image/png;base64,", 1)[1].split("'", 1)[0]
    assert base64.b64decode(inline) == png.read_bytes()
    # existing outputs are not replaced without --overwrite
    assert main(["curves", "compare", str(a), str(b), "--plot", str(png)]) == 2
    assert main(["curves", "compare", str(a), str(b), "--plot", str(png), "--overwrite"]) == 0


def test_show_summary_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log(tmp_path, "run.log", {10: 10.0, 20: None, 30: 9.0, 20 + 20: 8.5})
    png = tmp_path / "show.png"
    assert main(["curves", "show", str(path), "--plot", str(png), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (run,) = doc["runs"]
    assert run["format"] == "mlm" and run["missing"] == {"lm loss": [20]}
    assert run["summary"]["first"] == [10, 10.0] and run["summary"]["last"] == [40, 8.5]
    assert png.read_bytes().startswith(PNG_MAGIC)
    assert main(["curves", "show", str(path)]) == 0
    assert "'lm loss' missing from the line at iteration(s) [20]" in capsys.readouterr().out


def test_show_of_a_metric_no_run_has_is_a_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log(tmp_path, "run.log", {10: 10.0, 20: 9.0})
    assert main(["curves", "show", str(path), "--metric", "num-zeros"]) == 1
    err = capsys.readouterr().err
    assert f"no run has metric 'num-zeros' ({path} has: " in err and "lm loss" in err
    assert main(["curves", "show", str(path), "--metric", "num-zeros", "--format", "json"]) == 1
    assert capsys.readouterr().out == ""


def test_show_of_tensorboard_tags_without_a_known_loss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("tbparse")
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(tmp_path))
    for step in (1, 2):
        summary = Summary(value=[Summary.Value(tag="my/objective", simple_value=1.0 / step)])
        writer.add_event(Event(step=step, wall_time=1.0 * step, summary=summary))
    writer.close()
    assert main(["curves", "show", str(tmp_path)]) == 1
    assert "no run has metric 'lm loss'" in capsys.readouterr().err


def test_export_golden_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log(tmp_path, "run.log", {10: 10.123456789, 20: 9.5, 40: 9.25})
    out = tmp_path / "golden_values.json"
    assert main(["curves", "export", str(path), "--golden", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["lm loss"] == {
        "start_step": 10,
        "end_step": 40,
        "step_interval": 10,
        "values": {"10": 10.12346, "20": 9.5, "30": "nan", "40": 9.25},
    }
    assert doc["iteration-time"]["values"]["10"] == pytest.approx(0.1234)
    back = read_curves(out)
    assert back.metrics["lm loss"].as_dict() == {10: 10.12346, 20: 9.5, 40: 9.25}
    assert main(["curves", "compare", str(out), str(path), "--tolerance", "golden"]) == 0
    assert main(["curves", "export", str(path), "--golden", str(out)]) == 2  # exists


def test_export_json_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log(tmp_path, "run.log", {10: 10.5, 20: 9.5})
    out = tmp_path / "golden.json"
    assert main(["curves", "export", str(path), "--golden", str(out), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["schema_version"] == 1 and summary["golden"] == str(out) and summary["source"] == str(path)
    assert json.loads(out.read_text())["lm loss"]["values"] == {"10": 10.5, "20": 9.5}


def test_export_without_loss_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = log(tmp_path, "noloss.log", {10: None, 20: None})
    assert main(["curves", "export", str(path), "--golden", str(tmp_path / "g.json")]) == 1
    assert "no 'lm loss' value to export" in capsys.readouterr().err
    assert not (tmp_path / "g.json").exists()


def test_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("compare", "show", "export"):
        assert main(["curves", command, "--help"]) == 0
        assert "Example: bridgepack curves " + command in capsys.readouterr().out


def test_a_loss_left_off_the_line_is_named_in_the_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = log(tmp_path, "ref.log", {10: 10.0, 20: 9.5, 30: 9.0})
    run = log(tmp_path, "run.log", {10: 10.0, 20: None, 30: 9.0})
    assert main(["curves", "compare", str(ref), str(run)]) == 0  # bf16: reported, not failing
    capsys.readouterr()
    assert main(["curves", "compare", str(ref), str(run), "-t", "golden", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    (comp,) = doc["comparisons"]
    assert comp["only_in_reference"] == {"count": 1, "first": [20]}
    assert any("left off the line at iteration(s) [20]" in n for n in comp["notes"])


def test_json_documents_are_the_library_reports(
    pair: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, c = pair
    runs = [read_curves(p) for p in (a, c, b)]
    profile = Profile("bf16")
    report = CompareReport(profile, (None, None), runs, compare_curves(runs[0], runs[1:], profile))
    assert main(["curves", "compare", str(a), str(c), str(b), "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out) == report.to_dict()
    assert report.to_dict()["schema_version"] == CompareReport.SCHEMA_VERSION
    assert report.passed is False and SCHEMA_VERSION == 1
    assert main(["curves", "show", str(a), str(c), "--format", "json"]) == 0
    shown = ShowReport("lm loss", runs[:2]).to_dict()
    assert shown["schema_version"] == 1
    assert json.loads(capsys.readouterr().out) == shown
    golden = tmp_path / "g.json"
    assert main(["curves", "export", str(a), "--golden", str(golden), "--format", "json"]) == 0
    exported = ExportReport(str(a), str(golden), []).to_dict()
    assert json.loads(capsys.readouterr().out) == exported and exported["schema_version"] == 1
