"""The tables of formats ``bridgepack curves`` reads: a line format is an entry (any header word, no kernel
edit), the kernel returns named arrays, and what no entry reads is an error, never a guess."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.cli import main
from bridgepack.curves import CURVE_FORMATS, FORMATS, _kernel, _log_lines, detect_format, read_curves
from bridgepack.curves._log_lines import LogLine
from bridgepack.errors import InputError, UsageError
from curves._lines import mlm_line, nemo_line

HEADER = st.text("abcdefghjklmnopqrstuvwxyz_", min_size=1, max_size=14)


@given(
    header=HEADER,
    records=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 999)), min_size=1, max_size=6),
    offset=st.integers(0, 2),
)
def test_the_kernel_finds_records_of_any_header_word(
    header: str, records: list[tuple[int, int]], offset: int
) -> None:
    """The header word is data: a word of any length and first letter (the kernel used to compare 9 bytes
    and look for an ``i``) finds each record and its fields, as a regular expression reads them."""
    lines = [f"[rank0] {header}  {it}/ 99 | loss: {v}.5 | lr: 1e-4 |" for it, v in records]
    block = ("\n".join(lines) + "\n").encode()
    scan = _kernel.scan_records(block, header.encode(), offset)
    pattern = re.compile(rf"{re.escape(header)}\s+(\d+)\s*/\s*\d+\s*\|")
    assert scan.iterations.tolist() == [int(m.group(1)) + offset for m in pattern.finditer(block.decode())]
    assert scan.iterations.size == len(records) and scan.closed.all()
    assert scan.value[scan.field_key == scan.field_key[0]].tolist() == [v + 0.5 for _, v in records]
    assert scan.newlines == len(records)


def test_a_header_word_must_start_visibly() -> None:
    with pytest.raises(ValueError, match="visible character"):
        _kernel.scan_records(b"x", b" iteration", 0)


def test_a_new_line_format_is_one_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A made-up trainer printing ``step N/M | ...`` from step 0: registered in the table, detected by its
    hint, its steps shifted to Megatron's numbering, read by the same kernel."""
    steps = LogLine("steps", "Steptrain", b"step", iteration_offset=1, hint=re.compile(rb"steptrain v"))
    monkeypatch.setattr(_log_lines, "LOG_LINES", (*_log_lines.LOG_LINES, steps))
    log = tmp_path / "run.log"
    log.write_text("steptrain v1.0\n" + "".join(f"step {i}/3 | lm loss: {9 - i}.25 |\n" for i in range(3)))
    curves = read_curves(log)
    assert curves.format == "steps"
    assert curves.metrics["lm loss"].as_dict() == {1: 9.25, 2: 8.25, 3: 7.25}
    assert f"{log}: Steptrain iterations count from 0; shown as Megatron iterations (+1)" in curves.notes
    assert detect_format(log) == "steps"


def test_line_formats_are_told_apart_by_their_hints(tmp_path: Path) -> None:
    nemo, mlm = tmp_path / "nemo.log", tmp_path / "mlm.log"
    nemo.write_text("\n".join(nemo_line(i, 9.0 - i) for i in range(3)) + "\n")  # NeMo counts from 0
    mlm.write_text("\n".join(mlm_line(i, 10.0 - i) for i in range(1, 4)) + "\n")
    assert (detect_format(nemo), detect_format(mlm)) == ("nemo", "mlm")
    assert read_curves(nemo).metrics["lm loss"].as_dict() == read_curves(mlm).metrics["lm loss"].as_dict()
    assert [f.name for f in CURVE_FORMATS] == list(FORMATS)
    assert {"mlm", "bridge", "nemo"} <= set(FORMATS)


def test_a_binary_file_is_no_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It used to be scanned as a text log (and a renamed TensorBoard file reported as a log without
    iteration lines): now the error names the formats and how to force one."""
    blob = tmp_path / "run.bin"
    blob.write_bytes(b"\x18\x00\x00\x00\x00\x00\x00\x00\xa3\x7f\x4b\x22" + bytes(range(256)))
    with pytest.raises(
        InputError, match=r"run\.bin: binary, and of no format bridgepack curves detects \(trainer-state, "
    ):
        read_curves(blob)
    assert main(["curves", "show", str(blob)]) == 2
    assert "force one with --input-format" in capsys.readouterr().err


def test_an_unknown_forced_format_is_a_usage_error(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text(mlm_line(1, 2.0) + "\n")
    with pytest.raises(
        UsageError, match="input_format: expected one of trainer-state, tensorboard, csv, jsonl"
    ):
        read_curves(log, "wandb")
    assert read_curves(log, "bridge").format == "bridge"  # forced: no guessing
