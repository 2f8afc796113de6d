"""Atomic writes: complete files only, nothing left behind on failure, modes as a plain open() gives."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from bridgepack._io import TEMP_PREFIX, atomic_path, atomic_write_bytes
from bridgepack.errors import UsageError


def test_written_file_has_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_bytes(tmp_path / "a.bin", b"data")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.bin").stat().st_mode) == 0o644
    assert (tmp_path / "a.bin").read_bytes() == b"data"


def test_failure_leaves_neither_final_nor_temp(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), atomic_path(tmp_path / "out.parquet") as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("killed mid-write")
    assert list(tmp_path.iterdir()) == []


def test_existing_file_needs_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    target.write_text("old")
    with pytest.raises(UsageError, match="already exists"):
        atomic_write_bytes(target, b"new")
    atomic_write_bytes(target, b"new", overwrite=True)
    assert target.read_text() == "new"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(TEMP_PREFIX)]
