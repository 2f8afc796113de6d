"""Atomic file writes: a crash never leaves a half-written file under its final name.

Every writer in bridgepack goes through :func:`atomic_path` (or :func:`atomic_write_bytes`): data is written
to a hidden temporary name in the *same directory* (so the rename cannot cross file systems), fsynced,
and renamed over the final name only when complete. On any exception the temporary file is removed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bridgepack.errors import InputError, UsageError, param

TEMP_PREFIX = ".bridgepack-tmp-"
#: errno values that mean "the disk (or this process's file-size or quota limit) is full".
_DISK_FULL = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
#: How libraries that drop the errno (Arrow) spell the same conditions.
_DISK_FULL_TEXT = ("No space left on device", "File too large", "Disk quota exceeded")


def is_disk_full(exc: OSError) -> bool:
    """Is ``exc`` a full disk, an exceeded quota or an exceeded file-size limit (EFBIG, as RLIMIT_FSIZE)?"""
    return exc.errno in _DISK_FULL or any(text in str(exc) for text in _DISK_FULL_TEXT)


def disk_full_error(directory: str | os.PathLike[str], exc: OSError) -> InputError:
    """One line naming the directory that could not be written (``exc`` says which limit)."""
    reason = exc.strerror or str(exc).split(":")[-1].strip() or "no space"
    return InputError(
        f"{os.fspath(directory)}: cannot write, the disk is full ({reason}); "
        "nothing was left under a final name"
    )


def missing_dirs(path: Path) -> list[Path]:
    """``path`` and its ancestors that do not exist yet, outermost first: what ``mkdir -p path`` creates,
    so that a run that fails removes exactly those (:func:`remove_made_dirs`) and leaves the output
    location as it found it."""
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    return missing[::-1]


def make_dirs(path: Path) -> list[Path]:
    """``mkdir -p path``, returning the directories it created (:func:`missing_dirs`)."""
    missing = missing_dirs(path)
    path.mkdir(parents=True, exist_ok=True)
    return missing


def remove_made_dirs(made: list[Path]) -> None:
    """Remove the directories :func:`make_dirs` created, innermost first, where they are empty again."""
    for directory in reversed(made):
        with contextlib.suppress(OSError):
            directory.rmdir()


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort on file systems that refuse it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _default_file_mode() -> int:
    """The mode a plain ``open(path, "w")`` would give (0o666 less the umask); mkstemp's 0o600 is too strict
    for shared training data."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_path(
    final: str | os.PathLike[str], *, overwrite: bool = False, durable: bool = True
) -> Iterator[Path]:
    """Yield a temporary path next to ``final``; on success fsync it and rename it to ``final``.

    ``durable=False`` renames without the fsyncs: for a cache that is recomputed when lost, where an fsync
    of gigabytes would cost more than making it (``datasets`` does not fsync its cache files either).

    >>> with atomic_path("out/packs.parquet") as tmp:   # doctest: +SKIP
    ...     pq.write_table(table, tmp)
    """
    final_path = Path(final)
    if final_path.exists() and not overwrite:
        raise UsageError(f"{os.fspath(final)}: already exists (pass {param('overwrite')} to replace it)")
    directory = final_path.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=final_path.suffix, dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        if durable:
            with open(tmp, "rb+") as handle:
                os.fsync(handle.fileno())
        os.chmod(tmp, _default_file_mode())
        os.replace(tmp, final_path)
        if durable:
            fsync_dir(directory)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _backup(path: Path) -> Path:
    """A second name for ``path``'s current bytes in its folder: a hard link, else a copy."""
    fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".old", dir=path.parent)
    os.close(fd)
    backup = Path(name)
    try:
        os.unlink(backup)
        os.link(path, backup)  # never follows a name planted meanwhile: link() fails on an existing one
    except OSError:
        shutil.copyfile(path, backup)
    return backup


@contextlib.contextmanager
def restored_on_failure(*paths: Path) -> Iterator[None]:
    """Put ``paths`` back as they were if the block fails: a file that existed gets its old bytes back (kept
    as a hard link, or a copy where links are refused, under a temp name a later run reclaims), one that
    did not is removed. For several files renamed into place one after another, so an error or Ctrl-C
    between two renames leaves the earlier ones as they were (a SIGKILL cannot be handled; the run ids
    catch that case)."""
    kept: dict[Path, Path | None] = {}
    try:
        for path in paths:
            if not path.exists():
                kept[path] = None
                continue
            kept[path] = _backup(path)
        yield
    except BaseException:
        for path, backup in kept.items():
            with contextlib.suppress(OSError):
                if backup is None:
                    path.unlink()
                elif os.path.exists(path) and os.path.samefile(backup, path):
                    backup.unlink()  # never replaced: rename() between two links of one file does nothing
                else:
                    os.replace(backup, path)
        raise
    else:
        for backup in kept.values():
            if backup is not None:
                with contextlib.suppress(OSError):
                    backup.unlink()


def atomic_write_bytes(final: str | os.PathLike[str], data: bytes, *, overwrite: bool = False) -> None:
    """Write ``data`` to ``final`` atomically."""
    with atomic_path(final, overwrite=overwrite) as tmp:
        tmp.write_bytes(data)


def unreadable(path: str | os.PathLike[str], exc: OSError | None = None) -> InputError:
    """Why ``path`` cannot be opened, in words, for every reader that found it missing or failed to open it.

    ``Path.exists()`` is False for a symlink loop and a dangling link alike, so "no such file" would
    send the user looking for a file that is there: the reason is asked of the OS (``exc``, or a fresh
    ``stat``) and said as such -- ``too many levels of symbolic links``, ``a symbolic link to a missing
    file``, ``permission denied``.
    """
    text = os.fspath(path)
    if exc is None:
        try:
            os.stat(path)
        except OSError as error:
            exc = error
    if exc is None or exc.errno == errno.ENOENT:
        if os.path.islink(path):
            return InputError(f"{text}: a symbolic link to a missing file ({os.readlink(path)})")
        return InputError(f"{text}: no such file")
    if exc.errno == errno.ELOOP:
        return InputError(f"{text}: too many levels of symbolic links (a symlink loop)")
    if exc.errno == errno.EISDIR:
        return InputError(f"{text}: is a directory, expected a file")
    return InputError(f"{text}: cannot read ({(exc.strerror or str(exc)).lower()})")


#: What ``stat`` says a path is, in words, for each kind that is neither a regular file nor a directory.
_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)
#: The kinds a path may be asked to be.
FILE, DIRECTORY, FILE_OR_DIRECTORY = "a file", "a directory", "a file or a directory"
#: What a tokenizer path must be, in messages (the CLI's check and ``load_tokenizer`` word it alike).
TOKENIZER_DIRECTORY = "a tokenizer directory (the folder holding tokenizer.json or the vocabulary files)"


def path_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is (``a file``, ``a directory``, ``a named pipe (FIFO)``, ...), following links;
    ``None`` when there is nothing there (or it cannot be asked: :func:`unreadable` says why)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISDIR(mode):
        return DIRECTORY
    return next((name for test, name in _SPECIAL_KINDS if test(mode)), "not a file nor a directory")


def wrong_kind(path: str | os.PathLike[str], expected: str, what: str | None = None) -> InputError | None:
    """The one-line error for ``path`` when it exists and is not ``expected`` (:data:`FILE`,
    :data:`DIRECTORY` or :data:`FILE_OR_DIRECTORY`), else ``None``; ``what`` names it as the caller
    knows it (``a tokenizer directory``). Asked with ``stat`` before anything opens it: a named pipe
    would block the open, then give its bytes to one reader only (bridgepack reads an input twice: its
    hash, then its rows), so it is refused rather than read as an empty or malformed file.

    >>> str(wrong_kind("/", FILE))
    '/: is a directory, expected a file'
    """
    found = path_kind(path)
    if found is None or found == expected or (expected == FILE_OR_DIRECTORY and found in (FILE, DIRECTORY)):
        return None
    return InputError(f"{os.fspath(path)}: is {found}, expected {what or expected}")


def expect_kind(path: str | os.PathLike[str], expected: str, what: str | None = None) -> None:
    """Raise :func:`wrong_kind`'s error, if any (a missing path is left to the caller: it says why)."""
    error = wrong_kind(path, expected, what)
    if error is not None:
        raise error


#: Compression a JSONL input may carry, by magic bytes (the name is not trusted: ``data.jsonl`` may be
#: gzipped) and the suffix shown in messages. Decoded by Arrow's codecs, which bridgepack already needs.
COMPRESSION_MAGIC: dict[bytes, str] = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"BZh": "bz2"}
COMPRESSED_SUFFIXES: tuple[str, ...] = (".gz", ".zst", ".zstd", ".bz2")


def compression_of(path: str | os.PathLike[str]) -> str | None:
    """``gzip``, ``zstd``, ``bz2`` when the file starts with that codec's magic bytes, else None."""
    expect_kind(path, FILE)
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        raise unreadable(path, exc) from None
    return next((codec for magic, codec in COMPRESSION_MAGIC.items() if head.startswith(magic)), None)


def open_input(path: str | os.PathLike[str]) -> Any:
    """Open ``path`` for binary reading, decompressing gzip/zstd/bz2 transparently (``readinto`` works).

    A ``.jsonl.gz`` read as plain bytes used to fail deep in the JSON parser ("str is not valid UTF-8:
    surrogates not allowed"); here the codec is recognised at the door, whatever the file is called.
    """
    codec = compression_of(path)
    try:
        if codec is None:
            return open(path, "rb")
        import pyarrow as pa

        if not pa.Codec.is_available(codec):
            raise InputError(f"{os.fspath(path)}: compressed input ({codec}) and this pyarrow cannot read it")
        return pa.input_stream(os.fspath(path), compression=codec)
    except OSError as exc:
        raise unreadable(path, exc) from None


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """Read a whole (small) file, turning OS errors into an :class:`InputError` naming the path."""
    expect_kind(path, FILE)
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise unreadable(path, exc) from None
