"""The output-directory lock: one live owner, a dead owner's lock taken over, leftovers reclaimed."""

from __future__ import annotations

import multiprocessing
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bridgepack.data.pipeline._lock import LOCK_NAME, OutputLock, claim_output_dir, reclaim
from bridgepack.errors import UsageError


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_live_owner_is_refused_with_its_pid(tmp_path: Path) -> None:
    first = claim_output_dir(tmp_path)
    with pytest.raises(UsageError) as caught:
        claim_output_dir(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path}: another bridgepack pack (pid {os.getpid()} on ")
    assert "\n" not in message
    first.release()
    assert not (tmp_path / LOCK_NAME).exists()
    claim_output_dir(tmp_path).release()


def test_a_dead_owner_is_taken_over_and_its_leftovers_reclaimed(tmp_path: Path) -> None:
    """A run killed with SIGKILL while holding the lock: its lock file stays, the lock does not."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, os.fspath(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(UsageError, match=f"pid {holder.pid} on "):
        claim_output_dir(tmp_path)
    holder.kill()
    holder.wait()
    dead = holder.pid
    assert (tmp_path / LOCK_NAME).read_text().startswith(f"{dead} ")
    (tmp_path / ".bridgepack-tmp-abc.parquet").write_bytes(b"half")
    (tmp_path / f".bridgepack-scratch-{dead}").mkdir()
    (tmp_path / f".bridgepack-scratch-{dead}" / "tokens.u32").write_bytes(b"x")
    (tmp_path / "training_8.idx.parquet").write_bytes(b"a finished file")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "tokens.u32").write_bytes(b"precious")
    (tmp_path / f".bridgepack-scratch-{os.getpid()}").symlink_to(outside)  # a planted link: unlinked only
    lock = claim_output_dir(tmp_path)
    assert lock.previous.startswith(f"{dead} ")
    assert (tmp_path / LOCK_NAME).read_text() == lock.token
    assert sorted(p.name for p in tmp_path.iterdir()) == [LOCK_NAME, "training_8.idx.parquet"]
    assert (outside / "tokens.u32").read_bytes() == b"precious"
    lock.release()


HOLD_LOCK = (
    "import sys, time; from pathlib import Path; from bridgepack.data.pipeline._lock import "
    "claim_output_dir; "
    "claim_output_dir(Path(sys.argv[1])); print('held', flush=True); time.sleep(120)"
)


def test_live_scratch_of_another_run_in_a_shared_scratch_dir_is_kept(tmp_path: Path) -> None:
    out, shared = tmp_path / "out", tmp_path / "scratch"
    out.mkdir()
    shared.mkdir()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (shared / f".bridgepack-scratch-{live.pid}").mkdir()
        (shared / f".bridgepack-scratch-{_dead_pid()}").mkdir()
        (shared / ".bridgepack-tmp-other").write_bytes(b"")  # not ours to judge: only the out dir's are
        assert len(reclaim(out, shared)) == 1  # the dead run's scratch
        assert sorted(p.name for p in shared.iterdir()) == sorted(
            [f".bridgepack-scratch-{live.pid}", ".bridgepack-tmp-other"]
        )
    finally:
        live.kill()
        live.wait()


HOLD_SCRATCH = (
    "import sys, time; from pathlib import Path; from bridgepack.data.pipeline._scratch import ScratchStore; "
    "ScratchStore(Path(sys.argv[1])); print('held', flush=True); time.sleep(120)"
)


def test_scratch_is_reclaimed_only_when_its_owner_lock_is_free(tmp_path: Path) -> None:
    """Node-local scratch is shared by jobs in other PID namespaces, where a live run's PID looks dead:
    its scratch, named after a PID that is dead here, is kept while the owner holds its lock, and
    reclaimed once the owner is killed (the kernel drops the lock)."""
    out, shared = tmp_path / "out", tmp_path / "scratch"
    out.mkdir()
    shared.mkdir()
    scratch = shared / f".bridgepack-scratch-{_dead_pid()}"  # a PID that is dead here
    owner = subprocess.Popen(
        [sys.executable, "-c", HOLD_SCRATCH, os.fspath(scratch)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "held"
        assert reclaim(out, shared) == []
        assert scratch.is_dir()
    finally:
        owner.kill()
        owner.wait()
    assert reclaim(out, shared) == [scratch]
    assert not scratch.exists()


def _racer(directory: str, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        lock = OutputLock(Path(directory)).acquire()
    except UsageError:
        results.put("refused")
        barrier.wait()
        return
    results.put("won")
    barrier.wait()  # hold the lock until every racer has tried
    lock.release()


def test_racers_on_a_stale_lock_end_with_one_owner(tmp_path: Path) -> None:
    (tmp_path / LOCK_NAME).write_text(f"{_dead_pid()} {socket.gethostname()} 1\n")
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(4)
    results = context.Queue()
    racers = [context.Process(target=_racer, args=(os.fspath(tmp_path), barrier, results)) for _ in range(4)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(60)
    outcomes = sorted(results.get(timeout=5) for _ in racers)
    assert outcomes == ["refused", "refused", "refused", "won"]
