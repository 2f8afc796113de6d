"""Progress without a terminal: plain lines at most every interval, totals where they are known, --quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridgepack._progress import LineProgress
from bridgepack.cli import main


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lines_at_most_every_interval_with_done_total_and_rate() -> None:
    clock, lines = Clock(), []
    bar = LineProgress(lines.append, interval=10.0, clock=clock)
    task = bar.add_task("read", total=1000)
    for _ in range(50):  # 50 advances at 0..49 s: a line at 10, 20, 30, 40 s, not one per advance
        bar.advance(task, 20)
        clock.now += 1.0
    assert lines == [  # at 10 s, 11 advances of 20 are done: 220 in 10 s
        "bridgepack: read 220/1,000 (22%) 22/s, 10s",
        "bridgepack: read 420/1,000 (42%) 21/s, 20s",
        "bridgepack: read 620/1,000 (62%) 21/s, 30s",
        "bridgepack: read 820/1,000 (82%) 20/s, 40s",
    ]
    bar.close()  # a long command ends with its final state
    assert lines[-1] == "bridgepack: read 1,000/1,000 (100%) 20/s, 50s"


def test_a_short_command_prints_nothing() -> None:
    clock, lines = Clock(), []
    bar = LineProgress(lines.append, interval=10.0, clock=clock)
    bar.advance(bar.add_task("inspect", total=None), 5)
    clock.now = 3.0
    bar.close()
    assert lines == []


def test_commands_print_plain_lines_without_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BRIDGEPACK_PROGRESS_SECONDS", "0")  # every update is "10 s later"
    out = tmp_path / "out"
    assert main(["pack", "--example", "-o", str(out), "-n", "512", "--format", "json"]) == 0
    assert "bridgepack:" not in capsys.readouterr().err  # --format json: no progress next to the document
    assert main(["pack", "--example", "-o", str(out), "-n", "512", "--overwrite"]) == 0
    err = capsys.readouterr().err
    assert "bridgepack: read " in err and "/1,000 (" in err  # Parquet input: the total is known
    assert "bridgepack: write " in err and "\r" not in err and "\x1b[" not in err
    assert main(["inspect", str(out), "--format", "json"]) == 0
    capsys.readouterr()
    assert main(["inspect", str(out)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("bridgepack: inspect")]
    packs = lines[-1].split()[2]
    assert packs.split("/")[0] == packs.split("/")[1]  # N/N, not N/?
    assert main(["inspect", str(out), "--quiet"]) == 0
    assert "bridgepack:" not in capsys.readouterr().err
