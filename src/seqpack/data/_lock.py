"""One ``seqpack pack`` per output directory at a time, and what a killed run left behind is reclaimed.

A run claims the directory with an exclusive ``flock`` on ``.seqpack-pack.lock`` and writes its PID and
host name into it (for the message a second run prints)::

    out/.seqpack-pack.lock      "4242 node17\n"

The kernel drops an ``flock`` when its process dies, SIGKILL included, so a lock file left by a dead run is
simply claimable again: no PID guessing, no window in which two runs both judge a lock stale (a second run
that finds the lock held refuses at once, naming the owner). After locking, the claimant checks that the
file it locked is still the one at the path (a releasing owner unlinks it), else it retries.

Holding the lock, nothing else writes ``.seqpack-tmp-*`` files in the directory, so the ones there were
left by a killed run and are removed; scratch directories ``.seqpack-scratch-<pid>`` are removed when
their PID is dead (a shared ``--scratch-dir`` may hold live runs' scratch). Symlinks are unlinked, never
followed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import socket
from pathlib import Path

from seqpack._io import TEMP_PREFIX
from seqpack.errors import UsageError

LOCK_NAME = ".seqpack-pack.lock"
SCRATCH_PREFIX = ".seqpack-scratch-"
_SCRATCH_PID = re.compile(re.escape(SCRATCH_PREFIX) + r"(\d+)$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class OutputLock:
    """The claim of this process on ``directory`` (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / LOCK_NAME
        self.token = f"{os.getpid()} {socket.gethostname()}\n"
        self._fd: int | None = None
        #: What the lock file said when this run claimed it: a dead run's PID and host, or "".
        self.previous = ""

    def acquire(self) -> OutputLock:
        for _ in range(10):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = os.pread(fd, 256, 0).decode(errors="replace").split()
                os.close(fd)
                who = f"pid {owner[0]} on {owner[1]}" if len(owner) >= 2 else "another process"
                raise UsageError(
                    f"{self.directory}: another seqpack pack ({who}) is writing here; "
                    "wait for it to finish or use another --out"
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path, follow_symlinks=False).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # locked a file its owner unlinked on release: claim the new one
                os.close(fd)
                continue
            self.previous = os.pread(fd, 256, 0).decode(errors="replace").strip()
            os.ftruncate(fd, 0)
            os.pwrite(fd, self.token.encode(), 0)
            os.fsync(fd)
            self._fd = fd
            return self
        raise UsageError(
            f"{self.directory}: could not claim the output directory ({LOCK_NAME} keeps changing)"
        )

    def release(self) -> None:
        """Unlink the lock file, then drop the lock (in that order: see the module docstring)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None


def _remove(entry: Path) -> None:
    """Remove a file, a symlink (never its target) or a real directory tree."""
    with contextlib.suppress(FileNotFoundError):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink()


def reclaim(directory: Path, scratch_parent: Path | None = None) -> list[Path]:
    """Remove what killed runs left in ``directory`` (call with the lock held); return what was removed."""
    removed = []
    for parent in {directory, scratch_parent or directory}:
        if not parent.is_dir():
            continue
        for entry in parent.iterdir():
            scratch = _SCRATCH_PID.match(entry.name)
            if scratch is not None:
                pid = int(scratch.group(1))
                if pid == os.getpid() or not _alive(pid):
                    _remove(entry)
                    removed.append(entry)
            elif entry.name.startswith(TEMP_PREFIX) and parent == directory:
                _remove(entry)
                removed.append(entry)
    return removed


def claim_output_dir(directory: Path, scratch_parent: Path | None = None) -> OutputLock:
    """Lock ``directory`` for this run and reclaim what killed runs left there (see the module docstring)."""
    lock = OutputLock(directory).acquire()
    try:
        reclaim(directory, scratch_parent)
    except BaseException:
        lock.release()
        raise
    return lock
