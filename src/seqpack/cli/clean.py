"""``seqpack clean``: list old experiment folders (``nemo_experiments/``, checkpoints) and move them aside."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from seqpack.cli._common import FormatOption, OutputFormat, QuietOption, emit_json, err_console, out_console
from seqpack.correlate import Found, clean_stamp, find_experiments, move_aside_or_delete, moved_name

SCHEMA_VERSION = 1


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def clean(
    dirs: list[Path] = typer.Argument(..., help="Folders to search (only what is inside them is touched)."),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Really move (or with --delete, delete) what is listed."
    ),
    delete: bool = typer.Option(False, "--delete", help="Delete instead of moving aside (needs --yes too)."),
    fmt: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """List experiment folders that a new run would resume from; move them aside only with --yes.

    Example: seqpack clean . --yes
    """
    stamp = clean_stamp()
    found: list[tuple[Path, Found]] = []
    seen: set[str] = set()
    for top in dirs:
        for item in find_experiments(top):
            real = os.path.realpath(item.path)
            if real not in seen:
                seen.add(real)
                found.append((top, item))
    if delete and not yes:
        err_console.print("dry run: add --yes to delete what is listed", markup=False, soft_wrap=True)
    elif not yes:
        err_console.print("dry run: add --yes to move what is listed aside", markup=False, soft_wrap=True)
    done: list[dict[str, object]] = []
    for top, item in found:
        if item.mount_point is not None:  # renaming fails, deleting empties another file system: leave it
            done.append({**item.to_dict(), "action": "skipped", "to": None})
            continue
        if yes:
            target = move_aside_or_delete(item, top, delete=delete, stamp=stamp)
        else:
            target = None if delete else moved_name(item, stamp)
        action = ("deleted" if yes else "would delete") if delete else ("moved" if yes else "would move")
        done.append({**item.to_dict(), "action": action, "to": os.fspath(target) if target else None})
    skipped = [row for row in done if row["action"] == "skipped"]
    if fmt is OutputFormat.json:
        emit_json({"dry_run": not yes, "found": done}, SCHEMA_VERSION)
        if skipped and yes:
            raise typer.Exit(1)
        return
    if not done:
        out_console.print("nothing to clean", markup=False, soft_wrap=True)
        return
    for row in done:
        newest = row["newest_checkpoint"] or "no checkpoint"
        size = _size(int(row["bytes"]))  # type: ignore[call-overload]
        dest = f" -> {row['to']}" if row["to"] else ""
        if row["action"] == "skipped":
            dest = f": {row['mount_point']} is a mount point (unmount it, or clean inside it)"
        out_console.print(
            f"{row['action']}: {row['path']}  ({row['kind']}, {size}, newest {newest}){dest}", markup=False
        )
    if not quiet and yes:
        err_console.print(
            f"{len(done) - len(skipped)} folder(s) {'deleted' if delete else 'moved aside'}"
            + (f", {len(skipped)} skipped (mount points)" if skipped else ""),
            markup=False,
            soft_wrap=True,
        )
    if skipped and yes:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``clean`` command to the root app."""
    app.command("clean")(clean)
