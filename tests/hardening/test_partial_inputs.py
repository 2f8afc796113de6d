"""Inputs read only in part are never a silent, shorter result.

Before: a TensorBoard event file cut short inside its last record read as a run one step shorter, with no
note, and ``curves compare`` called it a match; a log whose last line was cut off was noted, but compared
as a match too. Now the damage is a note naming the file and record (TFRecord framing and its length
checksums are walked), and a comparison whose other run has steps past what was read is a mismatch,
whichever side is damaged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _support.fuzz_targets import _tensorboard_seed
from bridgepack.cli import main
from bridgepack.curves import read_curves

LOG = (
    b" iteration       10/     100 | lm loss: 9.9E+00 | grad norm: 1.0 |\n"
    b" iteration       20/     100 | lm loss: 9.5E+00 |\n"
    b" iteration       30/     100 | lm loss: 9.1E+00 |\n"
)


def _events(tmp_path: Path, data: bytes, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "events.out.tfevents.1.x").write_bytes(data)
    return folder


@pytest.fixture(scope="module")
def events() -> bytes:
    data = _tensorboard_seed()
    if not data:
        pytest.skip("the tensorboard extra is not installed")
    return data


def _cuts(data: bytes) -> list[int]:
    """Every length that ends inside the last record (its header, data or trailing checksum)."""
    import struct

    offset, starts = 0, []
    while offset < len(data):
        starts.append(offset)
        (length,) = struct.unpack("<Q", data[offset : offset + 8])
        offset += 12 + length + 4
    return list(range(starts[-1] + 1, len(data)))


def test_a_whole_event_file_has_no_note(events: bytes, tmp_path: Path) -> None:
    curves = read_curves(_events(tmp_path, events, "whole"))
    assert curves.notes == [] and curves.damaged == []


def test_every_cut_inside_the_last_record_is_noted_and_never_a_match(
    events: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = _events(tmp_path, events, "whole")
    for n, cut in enumerate(_cuts(events)):
        folder = _events(tmp_path, events[:cut], f"cut{n}")
        curves = read_curves(folder)
        assert curves.damaged and "cut short inside record" in curves.damaged[0], cut
        assert curves.damaged[0] in curves.notes
        for pair in ([str(whole), str(folder)], [str(folder), str(whole)]):
            assert main(["curves", "compare", *pair, "--format", "json"]) == 1, (cut, pair)
            assert "was read only in part" in capsys.readouterr().out


def test_a_damaged_length_is_noted(events: bytes, tmp_path: Path) -> None:
    damaged = bytearray(events)
    damaged[2] ^= 0x10  # the first record's length no longer matches its checksum
    curves = read_curves(_events(tmp_path, bytes(damaged), "bad")) if _readable(damaged, tmp_path) else None
    notes = curves.damaged if curves is not None else ["refused"]
    assert notes and ("record 1 at byte 0 is damaged" in notes[0] or notes == ["refused"])


def _readable(data: bytes, tmp_path: Path) -> bool:
    try:
        read_curves(_events(tmp_path, data, "probe"))
    except Exception:  # tbparse refuses some damage itself: an error is not silence either
        return False
    return True


def test_a_log_cut_off_is_a_mismatch_when_it_hides_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "full.log").write_bytes(LOG)
    for cut in (len(LOG) - 5, len(LOG) - 20):
        (tmp_path / "cut.log").write_bytes(LOG[:cut])
        assert read_curves(tmp_path / "cut.log").damaged
        for pair in (["full.log", "cut.log"], ["cut.log", "full.log"]):
            assert main(["curves", "compare", *(str(tmp_path / p) for p in pair)]) == 1
            assert "was read only in part" in capsys.readouterr().out
    assert main(["curves", "compare", str(tmp_path / "full.log"), str(tmp_path / "full.log")]) == 0
