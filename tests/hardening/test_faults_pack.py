"""``bridgepack pack`` killed, starved of disk and raced: nothing half-written ever looks complete.

A run is killed (SIGKILL, in a child process) at a seeded random point of each pass -- pass 1 (``read``,
per input chunk), planning, pass 2 (``write``, per row group) and the two commit steps -- through the
``BRIDGEPACK_FAULT`` hook (:mod:`bridgepack._faults`). After each kill:

1. ``bridgepack inspect`` accepts nothing in the output directory (no packed file exists under a final name
   unless it is the complete, committed one);
2. the same command run again succeeds, reclaims the killed run's temp files, scratch and lock, and
3. writes byte-identical files to an undisturbed run's.

A full disk is simulated with ``RLIMIT_FSIZE`` in a child that ignores SIGXFSZ (writes fail with EFBIG);
a real small tmpfs is used where this process may mount one.
"""

from __future__ import annotations

import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from _support import warm_bridgepack
from _support.pack_inputs import EOS, random_examples, write_jsonl
from bridgepack.cli import main

ROOT = Path(__file__).resolve().parents[2]
#: The claim on an output directory, as docs/pack.md and docs/failure-behaviour.md name it.
LOCK_NAME = ".bridgepack-pack.lock"
PACK_SIZE = 16


def _inputs(directory: Path) -> Path:
    import numpy as np

    rows = random_examples(np.random.default_rng(7), 3000, 20)  # some too long: a rejects file too
    return write_jsonl(directory / "in.jsonl", rows)


def _args(source: Path, out: Path) -> list[str]:
    return ["pack", os.fspath(source), "--out", os.fspath(out), "--pack-size", str(PACK_SIZE),
            "--eos-id", str(EOS), "--chunk-rows", "256", "--quiet"]  # fmt: skip


def _child(
    args: list[str], env: dict[str, str] | None = None, **kw: object
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "bridgepack", *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )  # type: ignore[call-overload]


def _killed_at(point: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own, SIGKILLed by the fault hook at ``point``: a fork of the warm
    server (``_support.warm_bridgepack``), since how a process starts is not what these tests hold."""
    env = {**os.environ, "BRIDGEPACK_FAULT": f"{point}:kill"}
    command = [*warm_bridgepack.bridgepack(), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)


def _files(out: Path) -> dict[str, object]:
    """Every file of the directory but a killed run's leftovers (``.bridgepack-*``, checked on their own),
    with the run id blanked (two runs' files differ by nothing else).

    A Parquet file's run id sits in its footer (and, base64, in the Arrow schema there): its content
    and row groups are compared instead of its bytes.
    """
    files: dict[str, object] = {}
    for path in sorted(p for p in out.iterdir() if p.is_file() and not p.name.startswith(".bridgepack")):
        if path.suffix == ".parquet":
            handle = pq.ParquetFile(path)
            groups = [handle.metadata.row_group(i).num_rows for i in range(handle.num_row_groups)]
            files[path.name] = (handle.read().replace_schema_metadata(None), groups)
        else:
            files[path.name] = re.sub(rb'"run_id": ?"[0-9a-f]{32}"', b'"run_id":"RUN"', path.read_bytes())
    return files


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """The input and an undisturbed run's files (the input path is the same for every run)."""
    base = tmp_path_factory.mktemp("faults")
    source = _inputs(base)
    out = base / "reference"
    assert main(_args(source, out)) == 0
    files = _files(out)
    assert pq.ParquetFile(out / "training_16.idx.parquet").num_row_groups >= 3  # pass 2 has points to kill at
    assert sorted(files) == [
        f"{PACK_SIZE}_metadata.jsonl",
        f"rejects_training_{PACK_SIZE}.jsonl",
        "training_16.idx.parquet",
    ]
    return source, files


def _kill_points() -> list[str]:
    """One seeded random point per pass: the n-th chunk of pass 1, the n-th row group of pass 2, ..."""
    rng = random.Random(11)
    return [f"read:{rng.randint(1, 11)}", "plan:1", f"write:{rng.randint(1, 3)}", "commit:1", "rename:1"]


@pytest.mark.slow
@pytest.mark.parametrize("point", _kill_points())
def test_sigkill_at_any_point_leaves_nothing_inspect_accepts(
    point: str, reference: tuple[Path, dict[str, bytes]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, expected = reference
    out = tmp_path / "out"
    killed = _killed_at(point, _args(source, out))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not (out / "training_16.idx.parquet").exists()
    assert main(["inspect", os.fspath(out), "--quiet"]) != 0  # nothing there that inspect accepts
    capsys.readouterr()
    assert main(_args(source, out)) == 0, capsys.readouterr().err  # the same command, no --overwrite
    assert _files(out) == expected
    assert not [p.name for p in out.iterdir() if p.name.startswith(".bridgepack")]  # temp, scratch, lock
    assert main(["inspect", os.fspath(out), "--quiet"]) == 0


def _fsize_limit(limit: int) -> None:
    """In the child before exec: writes past ``limit`` bytes fail with EFBIG instead of killing it."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.parametrize("failing", ["scratch", "rejects"])
def test_exhausted_disk_is_a_clear_error_and_leaves_nothing(
    failing: str, reference: tuple[Path, dict[str, bytes]], tmp_path: Path
) -> None:
    """EFBIG (RLIMIT_FSIZE) is handled like ENOSPC: one line naming the directory, exit 2, no file left
    under a final name, no temp file, no scratch, no lock. The limit is per file: 4 KiB stops pass 1's
    scratch store; with mostly too-long samples (small scratch, long rejects file) it stops the rejects."""
    source, expected = reference
    limit = 4096
    if failing == "rejects":
        rows = [{"input_ids": [5] * 40 + [EOS]}] * 400 + [{"input_ids": [5, EOS]}] * 10
        source = write_jsonl(tmp_path / "long.jsonl", rows)
        limit = 16384
        assert len(rows) * 60 > limit > 10 * 2 * 4
    out = tmp_path / "out"
    out.mkdir()
    full = _child(_args(source, out), preexec_fn=lambda: _fsize_limit(limit))
    assert full.returncode == 2, full.stderr
    [line] = full.stderr.strip().splitlines()
    assert line.startswith(f"error: {out}"), line  # the output directory, or the scratch directory in it
    said = (
        "no space left for the scratch store" if failing == "scratch" else "the disk is full (File too large)"
    )
    assert said in line, line
    assert "Traceback" not in full.stderr
    assert list(out.iterdir()) == []
    assert main(_args(source, out)) == 0  # with room again, the same command succeeds
    if failing == "scratch":
        assert _files(out) == expected


def test_small_tmpfs_fills_up_cleanly(reference: tuple[Path, dict[str, bytes]], tmp_path: Path) -> None:
    """A real ENOSPC: a 64 KiB tmpfs, where this process may mount one (root in a permissive container)."""
    source, _ = reference
    mount = tmp_path / "small"
    mount.mkdir()
    tried = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", os.fspath(mount)], capture_output=True, text=True
    ) if shutil.which("mount") else None  # fmt: skip
    if tried is None or tried.returncode != 0:
        reason = "no mount command" if tried is None else tried.stderr.strip() or "mount refused"
        pytest.skip(f"cannot mount a tmpfs here ({reason}); EFBIG via RLIMIT_FSIZE covers the same code path")
    try:
        out = mount / "out"
        full = _child(_args(source, out))
        assert full.returncode == 2, full.stderr
        assert "the disk is full (No space left on device)" in full.stderr
        assert not out.exists()  # the failed run removes the folder it made
    finally:
        subprocess.run(["umount", os.fspath(mount)], check=False)


def test_two_runs_into_one_directory(
    reference: tuple[Path, dict[str, bytes]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run A (a process of its own) is held (SIGSTOP) in pass 2; run B (in this process) refuses, naming A. A
    then finishes: its output is whole. Then A is killed while held: its lock file stays but B takes the
    directory over and succeeds."""
    source, expected = reference
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")]),
           "BRIDGEPACK_FAULT": "write:1:stop"}  # fmt: skip
    for finish in ("continue", "kill"):
        holder = subprocess.Popen(
            [sys.executable, "-m", "bridgepack", *_args(source, out), "--overwrite"],
            env=env, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            _wait_stopped(holder.pid)
            capsys.readouterr()
            assert main([*_args(source, out), "--overwrite"]) == 2
            [line] = capsys.readouterr().err.strip().splitlines()
            assert f"{out}: another bridgepack pack (pid {holder.pid} on " in line
        finally:
            os.kill(holder.pid, signal.SIGCONT if finish == "continue" else signal.SIGKILL)
            holder.wait(60)
        if finish == "continue":
            assert holder.returncode == 0
            assert _files(out) == expected
        else:
            assert (out / LOCK_NAME).exists()  # left by the killed run
            assert main([*_args(source, out), "--overwrite"]) == 0, capsys.readouterr().err
            assert _files(out) == expected
            assert not (out / LOCK_NAME).exists()


def _wait_stopped(pid: int) -> None:
    """Until the process is in state T (stopped by the fault hook)."""
    import time

    for _ in range(600):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "?"
        if state == "T":
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never stopped")


def _readers(out: Path) -> dict[str, list[str]]:
    """Every command that reads a pack set, on the training split of ``out``."""
    packed = os.fspath(out / "training_16.idx.parquet")
    return {
        "inspect": ["inspect", os.fspath(out), "--quiet"],
        "doctor": ["doctor", "--packed", packed, "--seq-length", str(PACK_SIZE)],
        "train": ["train", "--data", packed, "--steps", "1", "--gbs", "1", "--vocab", "1024", "--quiet"],
        "fingerprint": ["fingerprint", packed, "--check", "--quiet"],
        "diff": ["diff", packed, packed, "--quiet"],
    }


@pytest.mark.slow
@pytest.mark.parametrize("point", ["write:1", "commit:1", "rename:1"])
def test_killed_overwrite_leaves_the_old_set_or_a_mix_every_reader_refuses(
    point: str, reference: tuple[Path, dict[str, bytes]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#16.1: the new run packs the same samples in another order, so Bridge's six metadata values are the
    same for both runs and only the run ids tell the new metadata from the old packed file. Killed
    before its first commit step the old set stays whole and readable; killed after it (``commit``:
    metadata written; ``rename``: rejects too), every reader refuses, naming both files."""
    source, expected = reference
    out = tmp_path / "out"
    shutil.copytree(source.parent / "reference", out)
    lines = source.read_bytes().splitlines(keepends=True)
    random.Random(3).shuffle(lines)
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_bytes(b"".join(lines))
    old_meta = (out / f"{PACK_SIZE}_metadata.jsonl").read_bytes()
    killed = _killed_at(point, [*_args(shuffled, out), "--overwrite"])
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    new_meta = (out / f"{PACK_SIZE}_metadata.jsonl").read_bytes()
    if point == "write:1":
        assert new_meta == old_meta
        assert _files(out) == expected
    else:
        assert new_meta != old_meta
        six = ("dataset_max_seqlen", "max_samples_per_bin", "packing_factor", "packing_efficiency",
               "pack_size", "min_packed_seqlen")  # fmt: skip
        old_entry, new_entry = orjson.loads(old_meta)[0], orjson.loads(new_meta)[0]
        assert {k: old_entry[k] for k in six} == {k: new_entry[k] for k in six}  # the six cannot tell
    for name, args in _readers(out).items():
        code = main(args)
        err = capsys.readouterr().err
        if point == "write:1":
            assert code == 0, (name, err)
        else:
            assert code == 1, (name, err)
            assert "come from different bridgepack pack runs" in err, (name, err)
            assert "training_16.idx.parquet (run " in err and "16_metadata.jsonl entry 0 (run " in err, err


def test_sigterm_cleans_up_like_ctrl_c_and_exits_143(
    reference: tuple[Path, dict[str, bytes]], tmp_path: Path
) -> None:
    """Slurm's scancel and preemption send SIGTERM: the run stops, removes its temp files, scratch and
    lock, and leaves a previous set as it was."""
    source, expected = reference
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")]),
           "BRIDGEPACK_FAULT": "write:1:stop"}  # fmt: skip
    for first in (True, False):
        out = tmp_path / ("first" if first else "again")
        if not first:
            shutil.copytree(source.parent / "reference", out)
        run = subprocess.Popen(
            [sys.executable, "-m", "bridgepack", *_args(source, out), "--overwrite"],
            env=env, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        _wait_stopped(run.pid)
        os.kill(run.pid, signal.SIGTERM)
        os.kill(run.pid, signal.SIGCONT)
        _, err = run.communicate(timeout=60)
        assert run.returncode == 143, err
        assert err.strip().splitlines()[-1] == "Terminated."
        if first:  # the folder the stopped run made is gone with it
            assert not out.exists()
            continue
        assert not [p.name for p in out.iterdir() if p.name.startswith(".bridgepack")]
        assert _files(out) == expected
