"""Damaged pack sets: every reader refuses each kind of damage with one exit code and one message.

Before: a byte flipped at offset 5000 of a 3,000-row pack set was decoded into token id
18346451021070591 and ``inspect`` and ``doctor --packed`` exited 0; swapped rows and edited tokens or
masks passed ``inspect``, ``doctor`` and ``train``; ten dropped rows (run id kept) passed ``doctor`` and
``train``. Now pages carry checksums that every read verifies, and every reader that reads a split whole
compares it with the fingerprint and counts ``pack`` recorded (:mod:`bridgepack.data.packed._recorded`).

The readers are the commands whose input is packed data, found in the Typer app by their help text
(:func:`test_every_reader_of_packed_data_is_swept`), so a reader added later must join the sweep.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import typer

from _support.pack_inputs import random_examples, write_jsonl
from _support.sharded_sets import packed_readers
from bridgepack._parquet import BAD_CHECKSUM
from bridgepack.cli import app, main

PACK_SIZE = 1024
PACKED = f"training_{PACK_SIZE}.idx.parquet"
META = f"{PACK_SIZE}_metadata.jsonl"


def readers(packed: str) -> dict[str, list[str]]:
    """Every command that reads a pack set, on one packed file."""
    return packed_readers(packed, PACK_SIZE)


def test_every_reader_of_packed_data_is_swept() -> None:
    found = set()

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))
        if getattr(command, "commands", None) is None:
            for param in command.params:
                if (param.help or "").lower().startswith("packed"):
                    found.add(" ".join(path))

    walk(typer.main.get_command(app), ())
    assert found == set(readers("x"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("damage")
    source = write_jsonl(root / "in.jsonl", random_examples(np.random.default_rng(29), 3000, 600))
    assert main(["pack", str(source), "--out", str(root / "ref"), "-n", str(PACK_SIZE), "-q"]) == 0
    return root / "ref"


def _rewrite(path: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    """Rewrite the packed file with ``change`` applied, keeping its key/value metadata (the run id)."""
    table = pq.read_table(path)
    changed = change(table).replace_schema_metadata(table.schema.metadata)
    pq.write_table(changed, path, row_group_size=500)


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[5000] ^= 0x01
    path.write_bytes(bytes(data))


def _swap_rows(path: Path) -> None:
    _rewrite(path, lambda t: t.take([1, 0, *range(2, t.num_rows)]))


def _edit_column(name: str, row: int, position: int) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        def change(table: pa.Table) -> pa.Table:
            rows = table.column(name).to_pylist()
            value = rows[row][position]
            rows[row][position] = 1 - value if name == "loss_mask" else value + 1
            column = pa.array(rows, type=table.schema.field(name).type)
            return table.set_column(table.schema.get_field_index(name), name, column)

        _rewrite(path, change)

    return edit


def _drop_rows(path: Path) -> None:
    _rewrite(path, lambda t: t.slice(0, t.num_rows - 10))


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _not_as_recorded(what: str) -> Callable[[str, int], str]:
    return lambda packed, rows: (
        f"{packed}: does not match what bridgepack pack recorded in {Path(packed).parent / META} entry 0 "
        f"({what.format(rows=rows, rows_left=rows - 10)}); the packs changed after they were written: "
        "pack again, or restore the files"
    )


#: kind -> (damage, exit code, the message every reader prints)
DAMAGE: dict[str, tuple[Callable[[Path], None], int, Callable[[str, int], str]]] = {
    "byte flipped in a page": (_flip_byte, 2, lambda p, _: f"{p}: row group 0 is damaged ({BAD_CHECKSUM})"),
    "rows swapped": (
        _swap_rows,
        1,
        _not_as_recorded("packs fingerprint differs: packs reordered, or a sequence moved between packs"),
    ),
    "token edited": (
        _edit_column("input_ids", 5, 3),
        1,
        _not_as_recorded("content fingerprint differs: a token or a mask value changed"),
    ),
    "mask edited": (
        _edit_column("loss_mask", 7, 2),
        1,
        _not_as_recorded("content fingerprint differs: a token or a mask value changed"),
    ),
    "rows dropped": (_drop_rows, 1, _not_as_recorded("num_packs recorded {rows}, found {rows_left}")),
    "file cut short": (_truncate, 2, lambda p, _: f"{p}: cannot read as Parquet"),
}


@pytest.mark.parametrize("kind", DAMAGE)
def test_every_reader_refuses_each_kind_of_damage_alike(
    kind: str, reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damage, expected_code, expected = DAMAGE[kind]
    out = tmp_path / "set"
    shutil.copytree(reference, out)
    packed = out / PACKED
    rows = pq.ParquetFile(packed).metadata.num_rows
    damage(packed)
    message = expected(str(packed), rows)
    messages = {}
    for name, argv in readers(str(packed)).items():
        code = main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == expected_code, (name, err)
        assert err and err[-1].startswith(f"error: {message}"), (name, err[-1:], message)
        messages[name] = err[-1]
    assert len(set(messages.values())) == 1, messages  # one message, whichever command read it


def test_undamaged_set_passes_every_reader(reference: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, argv in readers(str(reference / PACKED)).items():
        if name == "train":
            continue  # trains a model: its own tests cover the undamaged path
        assert main(argv) == 0, (name, capsys.readouterr().err)
        capsys.readouterr()


def test_pages_carry_checksums_that_survive_stitching(reference: Path) -> None:
    """The packed file's row groups were encoded on threads and stitched: every page still verifies, and
    the one flipped byte is refused by pyarrow itself when it verifies checksums."""
    meta = pq.ParquetFile(reference / PACKED).metadata
    assert meta.num_row_groups >= 2
    table = pq.read_table(reference / PACKED, page_checksum_verification=True)
    assert pc.max(pc.list_flatten(table.column("input_ids"))).as_py() < 1000


@pytest.mark.parametrize("sidecar", [META, f"rejects_training_{PACK_SIZE}.jsonl"])
def test_a_sidecar_of_another_run_is_refused_by_every_reader(
    sidecar: str, reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The metadata or rejects file of another pack run (same names, same pack size, other samples) copied
    beside the packed file: every reader refuses the set, naming both files."""
    rows = random_examples(np.random.default_rng(30), 400, 1500)  # some longer than 1024: rejects
    other = tmp_path / "other"
    write_jsonl(tmp_path / "other.jsonl", rows)
    assert main(["pack", str(tmp_path / "other.jsonl"), "--out", str(other), "-n", str(PACK_SIZE), "-q"]) == 0
    capsys.readouterr()
    assert (other / sidecar).stat().st_size > 0
    out = tmp_path / "set"
    shutil.copytree(reference, out)
    shutil.copy(other / sidecar, out / sidecar)
    for name, argv in readers(str(out / PACKED)).items():
        code = main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 1, (name, err)
        assert "come from different bridgepack pack runs" in err[-1], (name, err[-1:])
        assert sidecar in err[-1], (name, err[-1:])


def _record_with(out: Path, algorithm: str) -> None:
    """Record the set's fingerprint with ``algorithm`` (what a bridgepack of that algorithm wrote)."""
    from bridgepack.data.packed import fingerprint_packed

    entries = json.loads((out / META).read_text())  # Bridge's metadata: one JSON list
    assert entries[0]["bridgepack"]["fingerprint"]["algorithm"] == "bridgepack-fp3"
    entries[0]["bridgepack"]["fingerprint"] = fingerprint_packed(out / PACKED, algorithm=algorithm).to_dict()
    (out / META).write_text(json.dumps(entries))


@pytest.mark.parametrize("kind", [None, "rows swapped", "token edited", "mask edited"])
def test_a_record_of_the_previous_algorithm_is_still_checked(
    kind: str | None, reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A set packed before fp3 records fp2 fingerprints: every reader checks it with fp2 (the same damage
    refused with the same message), never reads it unchecked."""
    out = tmp_path / "set"
    shutil.copytree(reference, out)
    _record_with(out, "bridgepack-fp2")
    packed = out / PACKED
    rows = pq.ParquetFile(packed).metadata.num_rows
    if kind is not None:
        DAMAGE[kind][0](packed)
    for name, argv in readers(str(packed)).items():
        if kind is None and name == "train":
            continue  # trains a model: its own tests cover the undamaged path
        code = main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        if kind is None:
            assert code == 0, (name, err)
            continue
        assert code == 1, (name, err)
        assert err[-1].startswith(f"error: {DAMAGE[kind][2](str(packed), rows)}"), (name, err[-1:])


def test_a_record_of_an_algorithm_bridgepack_does_not_compute_is_named(
    reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "set"
    shutil.copytree(reference, out)
    entries = json.loads((out / META).read_text())
    entries[0]["bridgepack"]["fingerprint"]["algorithm"] = "bridgepack-fp9"
    (out / META).write_text(json.dumps(entries))
    assert main(["fingerprint", str(out / PACKED), "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert "fingerprint recorded with 'bridgepack-fp9', which this bridgepack does not compute" in err


def _record_algorithm(change: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    """Replace the sidecar's fingerprint record with what ``change`` makes of it."""

    def edit(meta: Path) -> None:
        entries = json.loads(meta.read_text())
        entries[0]["bridgepack"]["fingerprint"] = change(entries[0]["bridgepack"]["fingerprint"])
        meta.write_text(json.dumps(entries))

    return edit


#: kind -> (the record's change, exit code, what every reader says after the entry's name)
UNCHECKABLE: dict[str, tuple[Callable[[Path], None], int, str]] = {
    "an algorithm this bridgepack does not compute": (
        _record_algorithm(lambda fp: {**fp, "algorithm": "bridgepack-fp4"}),
        2,
        "fingerprint recorded with 'bridgepack-fp4', which this bridgepack does not compute",
    ),
    "no algorithm": (
        _record_algorithm(lambda fp: {k: v for k, v in fp.items() if k != "algorithm"}),
        1,
        "the fingerprint record names no algorithm (algorithm None;",
    ),
    "an algorithm that is not a name": (
        _record_algorithm(lambda fp: {**fp, "algorithm": 3}),
        1,
        "the fingerprint record names no algorithm (algorithm 3;",
    ),
    "not an object": (
        _record_algorithm(lambda fp: "bridgepack-fp3"),
        1,
        "the fingerprint record is 'bridgepack-fp3'",
    ),
}


@pytest.mark.parametrize("kind", UNCHECKABLE)
def test_a_record_no_reader_can_check_is_refused_by_every_reader(
    kind: str, reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record bridgepack cannot check was skipped: a set edited after packing and its record's algorithm
    changed to one this bridgepack does not know passed inspect and doctor. Every reader refuses it now: exit
    2
    for an algorithm of another bridgepack (input this version cannot read, as a file of another format),
    exit 1 for a record without one (the sidecar was read and is invalid: bridgepack always writes it)."""
    change, expected_code, what = UNCHECKABLE[kind]
    out = tmp_path / "set"
    shutil.copytree(reference, out)
    _edit_column("input_ids", 5, 3)(out / PACKED)  # tampered: would fail the record's check
    change(out / META)
    messages = {}
    for name, argv in readers(str(out / PACKED)).items():
        code = main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == expected_code, (name, err[-1:])
        assert err[-1].startswith(f"error: {out / META} entry 0: {what}"), (name, err[-1:])
        messages[name] = err[-1]
    assert len(set(messages.values())) == 1, messages
