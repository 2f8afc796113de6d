"""Hostile files: pickles that run code, YAML that names Python objects, symlinks planted in an output
directory, and paths that must stay the user's own.

Each payload here is real: the test first shows that the unsafe way of reading it (``pickle.loads``,
``yaml.unsafe_load``) *does* create the marker file, then that bridgepack's reader refuses it and the marker
never appears.
"""

from __future__ import annotations

import io
import os
import pickle
import pickletools
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import orjson
import pytest
import yaml

from _support.pack_inputs import run, write_jsonl
from bridgepack.cli import main
from bridgepack.data.packed import read_legacy_npy
from bridgepack.errors import DataError, InputError


class _CreateFile:
    """Unpickling this object opens (creates) ``path`` for writing: a stand-in for any code execution."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (open, (os.fspath(self.path), "w"))


def _npy_with_pickle(path: Path, payload: bytes) -> Path:
    """A legacy ``.npy``: a valid object-array header followed by ``payload`` as its pickle stream."""
    sink = io.BytesIO()
    np.lib.format.write_array_header_1_0(sink, {"descr": "|O", "fortran_order": False, "shape": (1,)})
    path.write_bytes(sink.getvalue() + payload)
    return path


def _rows_with(value: object) -> np.ndarray:
    rows = np.empty(1, dtype=object)
    rows[0] = {"input_ids": [5, 2], "loss_mask": [1, 0], "seq_start_id": [0], "extra": value}
    return rows


@pytest.mark.parametrize("protocol", [2, 4])
def test_legacy_npy_payload_that_creates_a_file_is_refused(tmp_path: Path, protocol: int) -> None:
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_rows_with(_CreateFile(marker)), protocol=protocol)
    pickle.loads(payload)  # the payload is real: unpickled the ordinary way, it creates the file
    assert marker.exists()
    marker.unlink()
    evil = _npy_with_pickle(tmp_path / "training_8.npy", payload)
    with pytest.raises(
        DataError, match=r"training_8\.npy: unsafe or invalid pickle.*refused to load '(builtins|io)\.open'"
    ):
        read_legacy_npy(evil)
    assert not marker.exists()
    code = main(["inspect", os.fspath(evil), "--quiet"])  # the CLI path that reads legacy files
    assert code == 1 and not marker.exists()


def test_legacy_npy_amplifiers_are_refused(tmp_path: Path) -> None:
    """A few bytes that would allocate without bound: builtins (bytes(n)) and numpy's _reconstruct."""
    huge_bytes = b"\x80\x02cbuiltins\nbytes\nJ\x00\x00\x00\x40\x85R."  # bytes(2**30)
    with pytest.raises(DataError, match=r"refused to load 'builtins\.bytes'"):
        read_legacy_npy(_npy_with_pickle(tmp_path / "a.npy", huge_bytes))
    reconstruct = (
        b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n"
        b"\x8a\x06\x00\x00\x00\x00\x00\x01\x85C\x01b\x87R."  # _reconstruct(ndarray, (2**40,), b"b")
    )
    pickletools.dis(reconstruct, out=io.StringIO())  # a well-formed stream: refused by content, not syntax
    with pytest.raises(DataError, match="anything but an empty ndarray"):
        read_legacy_npy(_npy_with_pickle(tmp_path / "b.npy", reconstruct))


@pytest.mark.parametrize(
    "opcode",
    [b"B" + struct.pack("<I", 2**31), b"\x8e" + struct.pack("<Q", 2**33), b"\x96" + struct.pack("<Q", 2**33)],
    ids=["BINBYTES", "BINBYTES8", "BYTEARRAY8"],
)
def test_legacy_npy_declared_lengths_allocate_nothing(tmp_path: Path, opcode: bytes) -> None:
    """Found by fuzzing: BINBYTES/BINBYTES8 declare a length the C unpickler allocates before reading
    (13 bytes of pickle claimed 4 GiB), BYTEARRAY8 one the pure-Python unpickler allocates. Now: a
    truncation error and a peak of a few KiB."""
    bomb = _npy_with_pickle(tmp_path / "bomb.npy", b"\x80\x04" + opcode + b"x.")
    tracemalloc.start()
    try:
        with pytest.raises((InputError, DataError), match=r"bomb\.npy: .*legacy \.npy"):
            read_legacy_npy(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20


def test_legacy_npy_object_state_that_reads_past_its_list_is_refused(tmp_path: Path) -> None:
    """Found by fuzzing: numpy's own ``ndarray.__setstate__`` builds an object array of shape (2,) from a
    list of one item and reads a pointer past the list (a crash). The checked BUILD refuses it."""
    good = pickle.dumps(np.array([{"a": 1}], dtype=object), protocol=2)
    evil = good.replace(b"K\x01\x85", b"K\x02\x85", 1)  # the state's shape (1,) -> (2,)
    assert evil != good
    code = (
        "import pickle, sys; a = pickle.loads(sys.stdin.buffer.read()); print(len(a), [repr(x) for x in a])"
    )
    with pytest.raises(DataError, match=r"object array of shape \(2,\) with mismatched items"):
        read_legacy_npy(_npy_with_pickle(tmp_path / "c.npy", evil))
    # In a child process (it may crash), plain pickle builds the broken array without complaint.
    child = subprocess.run([sys.executable, "-c", code], input=evil, capture_output=True, timeout=60)
    assert child.returncode != 0 or child.stdout.startswith(b"2 ")


def test_legacy_npy_plain_arrays_and_scalars_still_load(tmp_path: Path) -> None:
    rows = np.empty(2, dtype=object)
    rows[0] = {"input_ids": np.array([5, 6, 2], dtype=">i8"), "loss_mask": [True, True, False],
               "seq_start_id": [np.int32(0)]}  # fmt: skip
    rows[1] = {"input_ids": [7, 2], "loss_mask": np.array([1, 0], dtype=np.uint8), "seq_start_id": [0]}
    for protocol in (2, 3, 4, 5):
        path = _npy_with_pickle(tmp_path / f"p{protocol}.npy", pickle.dumps(rows, protocol=protocol))
        block = read_legacy_npy(path)
        assert block.input_ids.tolist() == [5, 6, 2, 7, 2]
        assert block.loss_mask.tolist() == [1, 1, 0, 1, 0]


PYTHON_TAGS = [
    "!!python/object/apply:builtins.open [{marker}, w]",
    "!!python/object/new:builtins.open [{marker}, w]",
    "!!python/name:builtins.open",
]


@pytest.mark.parametrize("tag", PYTHON_TAGS)
def test_yaml_python_tags_are_refused(tmp_path: Path, tag: str, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "pwned"
    config = tmp_path / "config.yaml"
    config.write_text(f"model:\n  seq_length: 8\n  x: {tag.format(marker=marker)}\n")
    if "apply" in tag:
        yaml.unsafe_load(config.read_text())  # the payload is real
        assert marker.exists()
        marker.unlink()
    for args in (
        ["doctor", os.fspath(config)],
        ["translate", "mlm-to-bridge", "--model-config", os.fspath(config)],
    ):
        code = main(args)
        err = capsys.readouterr().err
        assert code == 2, err
        assert f"{config}:3:6:" in err and "python/" in err
        assert len(err.strip().splitlines()) == 1
    assert not marker.exists()


def test_markup_in_a_path_is_printed_not_interpreted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file name holding rich markup (``[/x]``) must not break the one error line (found in review)."""
    odd = tmp_path / "in[/bold]x[red].jsonl"
    code = main(["pack", os.fspath(odd), "--out", os.fspath(tmp_path / "out"), "--pack-size", "8"])
    err = capsys.readouterr().err
    assert code == 2 and f"{odd}: no such file" in err


def test_symlinks_in_the_output_directory_are_replaced_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every file pack writes goes through a temp name + rename in the output directory: a planted link
    is replaced by the new file, and what it pointed to is never written, truncated or deleted."""
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = {name: outside / name for name in ("packed", "meta", "rejects", "tokens.u32")}
    for victim in victims.values():
        victim.write_bytes(b"precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "training_8.idx.parquet").symlink_to(victims["packed"])
    (out / "rejects_training_8.jsonl").symlink_to(victims["rejects"])
    (out / "8_metadata.jsonl").symlink_to(tmp_path / "missing.jsonl")  # dangling
    scratch = outside / "scratch"
    scratch.mkdir()
    (scratch / "tokens.u32").symlink_to(victims["tokens.u32"])
    (out / f".bridgepack-scratch-{os.getpid()}").symlink_to(scratch)  # this process's scratch name
    source = write_jsonl(tmp_path / "in.jsonl", [{"input_ids": [5, 6, 2]}, {"input_ids": [5] * 12 + [2]}])
    code, _, err = run(
        [os.fspath(source), "--out", os.fspath(out), "--pack-size", "8", "--overwrite"], capsys
    )
    assert code == 0, err
    for victim in victims.values():
        assert victim.read_bytes() == b"precious"
    assert not (tmp_path / "missing.jsonl").exists()
    for name in ("training_8.idx.parquet", "rejects_training_8.jsonl", "8_metadata.jsonl"):
        assert not (out / name).is_symlink() and (out / name).is_file()
    assert sorted(p.name for p in out.iterdir()) == [
        "8_metadata.jsonl", "rejects_training_8.jsonl", "training_8.idx.parquet"
    ]  # fmt: skip


def test_paths_in_rejects_and_messages_are_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Relative paths stay relative, a symlinked input is named by the link, never by its target."""
    real = tmp_path / "real"
    real.mkdir()
    write_jsonl(real / "data.jsonl", [{"input_ids": [5, 2]}, {"input_ids": [5] * 20 + [2]}])
    (tmp_path / "link.jsonl").symlink_to(real / "data.jsonl")
    monkeypatch.chdir(tmp_path)
    given = ["link.jsonl", "real/../real/data.jsonl"]
    code, _, err = run([*given, "--out", "out", "--pack-size", "8"], capsys)
    assert code == 0, err
    lines = (tmp_path / "out" / "rejects_training_8.jsonl").read_bytes().splitlines()
    assert [orjson.loads(line)["source"] for line in lines] == given
    meta = orjson.loads((tmp_path / "out" / "8_metadata.jsonl").read_bytes())
    assert meta[0]["bridgepack"]["inputs"] == given
    (real / "data.jsonl").write_bytes(b'{"input_ids": [5, 2]}\n{"input_ids": oops}\n')
    code, _, err = run(["link.jsonl", "--out", "out2", "--pack-size", "8"], capsys)
    assert code == 1 and err.strip().startswith("error: link.jsonl:2: malformed JSON"), err
    assert str(real) not in err


def test_overrides_cannot_reach_the_environment(capsys: pytest.CaptureFixture[str]) -> None:
    """``${oc.env:...}`` in an override is kept as text (configs are never resolved), so no secret leaks."""
    from bridgepack.doctor import load_config

    loaded = load_config(None, overrides=["model.seq_length=${oc.env:HOME}"])
    assert loaded.raw["model"]["seq_length"] == "${oc.env:HOME}"


def test_input_error_types() -> None:
    assert issubclass(InputError, Exception) and InputError("a\nb").args == ("a b",)
