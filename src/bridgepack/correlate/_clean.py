"""Find old experiment folders and move them aside (or delete them), never touching anything else.

Bridge recipes write to ``nemo_experiments/`` and silently resume from a checkpoint they find there
(bridge-format §12), so a fresh correlation run needs those folders gone; ``rm -rf`` is the wrong answer.
Detection rules, applied to every folder strictly *below* a named folder, walking without following symlinks:

1. a folder named ``nemo_experiments`` (the Bridge recipes' output base), or
2. a checkpoint folder: it holds ``latest_train_state.pt`` (Bridge tracker),
   ``latest_checkpointed_iteration.txt`` (Megatron-LM tracker), or an ``iter_NNNNNNN`` folder (seven
   digits: one saved iteration).

A found folder is not searched further. Never found: symlinks (neither listed nor entered), the named folders
themselves, and ``bridgepack-clean-*`` folders (what an earlier clean moved aside)::

    runs/                                   runs/
      nemo_experiments/      --yes  ->        bridgepack-clean-20260830-101500/
      old/ckpt/iter_0000010/                    nemo_experiments/
                                              old/
                                                bridgepack-clean-20260830-101500/ckpt/
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from bridgepack.errors import InputError, UsageError

EXPERIMENT_DIR_NAMES = ("nemo_experiments",)
TRACKER_FILES = ("latest_train_state.pt", "latest_checkpointed_iteration.txt")
ITER_DIR = re.compile(r"^iter_(\d{7})$")
MOVED_PREFIX = "bridgepack-clean-"


@dataclass(frozen=True)
class Found:
    """An experiment folder: why it matched, its size in bytes, and its newest saved iteration."""

    path: Path
    kind: str
    size: int
    newest_checkpoint: str | None
    #: The folder itself or one below it when it is a mount point: a mount cannot be renamed, and deleting
    #: the tree would empty another file system and then fail (EBUSY), so such a folder is left alone.
    mount_point: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": os.fspath(self.path),
            "kind": self.kind,
            "bytes": self.size,
            "newest_checkpoint": self.newest_checkpoint,
            "mount_point": os.fspath(self.mount_point) if self.mount_point else None,
        }


def _kind(entry: os.DirEntry[str]) -> str | None:
    if entry.name in EXPERIMENT_DIR_NAMES:
        return "experiments"
    try:
        children = list(os.scandir(entry.path))
    except OSError:
        return None
    for child in children:
        if child.name in TRACKER_FILES and child.is_file(follow_symlinks=False):
            return "checkpoints"
        if ITER_DIR.match(child.name) and child.is_dir(follow_symlinks=False):
            return "checkpoints"
    return None


def _walk_dirs(top: Path) -> Iterator[tuple[Path, int]]:
    """Every real (non-symlink) folder under ``top`` with the total size of what is in it (lstat sizes)."""
    for root, dirs, files in os.walk(top, followlinks=False):
        size = 0
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            try:
                size += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
        yield Path(root), size


def _describe(path: Path, kind: str) -> Found:
    size = 0
    newest: tuple[int, str] | None = None
    mount: Path | None = None
    for folder, folder_size in _walk_dirs(path):
        size += folder_size
        if mount is None and os.path.ismount(folder):
            mount = folder
        match = ITER_DIR.match(folder.name)
        if match and (newest is None or int(match.group(1)) > newest[0]):
            newest = (int(match.group(1)), os.fspath(folder.relative_to(path)))
    return Found(path, kind, size, newest[1] if newest else None, mount)


def find_experiments(top: str | os.PathLike[str]) -> list[Found]:
    """Experiment folders strictly inside ``top`` (see the module rules), in path order."""
    root = Path(top)
    if root.is_symlink() or not root.is_dir():
        raise InputError(f"{os.fspath(top)}: not a folder (symlinks are not followed)")
    found: list[Found] = []
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            raise InputError(f"{os.fspath(folder)}: cannot list ({exc.strerror})") from None
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False) or entry.name.startswith(MOVED_PREFIX):
                continue
            kind = _kind(entry)
            if kind is not None:
                found.append(_describe(Path(entry.path), kind))
            else:
                pending.append(Path(entry.path))
    return sorted(found, key=lambda f: f.path)


def _inside(path: Path, top: Path) -> bool:
    real, real_top = os.path.realpath(path), os.path.realpath(top)
    return os.path.commonpath([real, real_top]) == real_top and real != real_top


def moved_name(found: Found, stamp: str) -> Path:
    """Where ``--yes`` moves a folder: a ``bridgepack-clean-<stamp>`` folder beside it, same name inside."""
    return found.path.parent / f"{MOVED_PREFIX}{stamp}" / found.path.name


def clean_stamp(now: _dt.datetime | None = None) -> str:
    """The time stamp of one clean (UTC, to the second)."""
    return (now or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y%m%d-%H%M%S")


def move_aside_or_delete(found: Found, top: Path, *, delete: bool, stamp: str) -> Path | None:
    """Move ``found`` aside (returns where) or delete it (returns ``None``); re-checks it is still inside."""
    mode = os.lstat(found.path).st_mode
    if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode) or not _inside(found.path, top):
        raise UsageError(f"{os.fspath(found.path)}: changed since it was listed (not a folder inside {top})")
    if found.mount_point is not None:
        raise UsageError(
            f"{os.fspath(found.mount_point)}: a mount point; nothing under it is moved or deleted"
        )
    if delete:
        shutil.rmtree(found.path)
        return None
    target = moved_name(found, stamp)
    if target.exists():
        raise UsageError(f"{os.fspath(target)}: already exists (never overwritten)")
    target.parent.mkdir(exist_ok=True)
    os.rename(found.path, target)
    return target


@dataclass(frozen=True)
class CleanAction:
    """What one clean did (or, in a dry run, would do) with a found folder, and where it went."""

    found: Found
    #: ``moved`` / ``would move`` / ``deleted`` / ``would delete``, or ``skipped`` (a mount point).
    action: str
    to: Path | None

    def to_dict(self) -> dict[str, Any]:
        return {**self.found.to_dict(), "action": self.action, "to": os.fspath(self.to) if self.to else None}


@dataclass(frozen=True)
class CleanReport:
    """One ``bridgepack clean``: every folder found under the named ones (each once), in order, and its
    fate."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    dry_run: bool
    actions: list[CleanAction]

    @property
    def skipped(self) -> list[CleanAction]:
        return [a for a in self.actions if a.action == "skipped"]

    def to_dict(self) -> dict[str, Any]:
        """``bridgepack clean --format json``'s document."""
        return {
            "schema_version": self.SCHEMA_VERSION,
            "dry_run": self.dry_run,
            "found": [a.to_dict() for a in self.actions],
        }


def clean_experiments(
    tops: Iterable[str | os.PathLike[str]], *, yes: bool, delete: bool, stamp: str | None = None
) -> CleanReport:
    """Find the experiment folders under ``tops`` (a folder reached twice counts once) and, with ``yes``,
    move each aside (or ``delete`` it); without ``yes`` only say what would happen. Mount points are
    skipped. Raises on the first folder that changed since it was found (earlier ones stay done)."""
    stamp = stamp or clean_stamp()
    found: list[tuple[Path, Found]] = []
    seen: set[str] = set()
    for top in tops:
        for item in find_experiments(top):
            real = os.path.realpath(item.path)
            if real not in seen:
                seen.add(real)
                found.append((Path(top), item))
    actions: list[CleanAction] = []
    for top, item in found:
        if item.mount_point is not None:  # renaming fails, deleting empties another file system: leave it
            actions.append(CleanAction(item, "skipped", None))
            continue
        if yes:
            target = move_aside_or_delete(item, top, delete=delete, stamp=stamp)
        else:
            target = None if delete else moved_name(item, stamp)
        action = ("deleted" if yes else "would delete") if delete else ("moved" if yes else "would move")
        actions.append(CleanAction(item, action, target))
    return CleanReport(dry_run=not yes, actions=actions)
