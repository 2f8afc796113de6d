"""One ``bridgepack pack`` per output directory at a time, and what a killed run left behind is reclaimed.

A run claims the directory with an exclusive ``flock`` on ``.bridgepack-pack.lock`` and writes its PID and
host name into it (for the message a second run prints)::

    out/.bridgepack-pack.lock      "4242 node17\n"

The kernel drops an ``flock`` when its process dies, SIGKILL included, so a lock file left by a dead run is
simply claimable again: no PID guessing, no window in which two runs both judge a lock stale (a second run
that finds the lock held refuses at once, naming the owner). After locking, the claimant checks that the
file it locked is still the one at the path (a releasing owner unlinks it), else it retries.

Holding the lock, nothing else writes ``.bridgepack-tmp-*`` files in the directory, so the ones there were
left by a killed run and are removed. A scratch directory ``.bridgepack-scratch-<pid>-<random>`` holds its
own ``owner.lock``, flocked by its run for the run's life; it is removed only when that lock is free. A
PID says nothing here: node-local scratch is shared by jobs in other PID namespaces, where a live run's
PID looks dead (or a dead one's is reused). Scratch named ``.bridgepack-scratch-<pid>`` without an owner
lock was left by a release before owner locks and is judged by its PID, as then. Symlinks are unlinked,
never followed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import socket
from pathlib import Path

from bridgepack._io import TEMP_PREFIX
from bridgepack.errors import UsageError, param

LOCK_NAME = ".bridgepack-pack.lock"
SCRATCH_PREFIX = ".bridgepack-scratch-"
SCRATCH_OWNER = "owner.lock"
_SCRATCH_NAME = re.compile(re.escape(SCRATCH_PREFIX) + r"(\d+)(-[0-9a-f]+)?$")


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
                    f"{self.directory}: another bridgepack pack ({who}) is writing here; "
                    f"wait for it to finish or use another {param('out_dir')}"
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


def scratch_name() -> str:
    """A new scratch directory's name: unique across PID namespaces (jobs sharing node-local scratch)."""
    return f"{SCRATCH_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"


def hold_scratch(directory: Path) -> int:
    """Create and flock ``directory``'s owner lock (call right after making it); closing the fd frees it.

    The owner writes its PID and host after locking, so a reclaimer that finds the lock free but the file
    empty knows the owner is between creating and locking it, and keeps the directory.
    """
    fd = os.open(directory / SCRATCH_OWNER, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
    return fd


def scratch_owner_gone(entry: Path) -> bool:
    """Whether the run that made scratch directory ``entry`` is gone (see the module docstring)."""
    if entry.is_symlink() or not entry.is_dir():
        return True  # a planted link or a stray file: unlinked, never followed
    try:
        fd = os.open(entry / SCRATCH_OWNER, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        match = _SCRATCH_NAME.match(entry.name)
        if match is None or match.group(2) is not None:
            return False  # a current run between making its directory and locking it
        pid = int(match.group(1))
        return pid == os.getpid() or not _alive(pid)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        return bool(os.pread(fd, 64, 0).strip())
    finally:
        os.close(fd)


def _remove(entry: Path) -> None:
    """Remove a file, a symlink (never its target) or a real directory tree."""
    with contextlib.suppress(FileNotFoundError):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink()


def reclaim(directory: Path, scratch_parent: Path | None = None, data_dir: Path | None = None) -> list[Path]:
    """Remove what killed runs left in ``directory`` (and its ``data_dir``, where the HF layout writes)
    and their scratch in ``scratch_parent`` (call with the lock held); return what was removed."""
    removed = []
    temp_dirs = {directory, data_dir or directory}
    for parent in {*temp_dirs, scratch_parent or directory}:
        if not parent.is_dir() or parent.is_symlink():
            continue
        for entry in parent.iterdir():
            if _SCRATCH_NAME.match(entry.name):
                if scratch_owner_gone(entry):
                    _remove(entry)
                    removed.append(entry)
            elif entry.name.startswith(TEMP_PREFIX) and parent in temp_dirs:
                _remove(entry)
                removed.append(entry)
    return removed


def claim_output_dir(
    directory: Path, scratch_parent: Path | None = None, data_dir: Path | None = None
) -> OutputLock:
    """Lock ``directory`` for this run and reclaim what killed runs left there (see the module docstring)."""
    lock = OutputLock(directory).acquire()
    try:
        reclaim(directory, scratch_parent, data_dir)
    except BaseException:
        lock.release()
        raise
    return lock
