"""``bridgepack clean``: list old experiment folders (``nemo_experiments/``, checkpoints) and move them
aside."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from bridgepack.cli._common import (
    FormatOption,
    OutputFormat,
    QuietOption,
    emit_json,
    err_console,
    out_console,
)
from bridgepack.correlate import clean_experiments


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

    Example: bridgepack clean . --yes
    """
    report = clean_experiments(dirs, yes=yes, delete=delete)
    done, skipped = report.actions, report.skipped
    if done and not yes:  # nothing listed: nothing that --yes would do
        what = "delete what is listed" if delete else "move what is listed aside"
        err_console.print(f"dry run: add --yes to {what}", markup=False, soft_wrap=True)
    if fmt is OutputFormat.json:
        emit_json(report)
        if skipped and yes:
            raise typer.Exit(1)
        return
    if not done:
        out_console.print("nothing to clean", markup=False, soft_wrap=True)
        return
    for row in done:
        item = row.found
        newest = item.newest_checkpoint or "no checkpoint"
        dest = f" -> {os.fspath(row.to)}" if row.to else ""
        if row.action == "skipped":
            dest = f": {os.fspath(item.mount_point or '')} is a mount point (unmount it, or clean inside it)"
        out_console.print(
            f"{row.action}: {os.fspath(item.path)}  ({item.kind}, {_size(item.size)}, newest {newest}){dest}",
            markup=False,
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


#: What ``bridgepack clean`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = clean
