"""``seqpack fingerprint``: the content and packing fingerprints of a packed set."""

from __future__ import annotations

from typing import Any

import typer

from seqpack._progress import progress
from seqpack.cli._common import FormatOption, OutputFormat, QuietOption, emit_json, out_console
from seqpack.data.packed import CHECKED, fingerprint_packed, mismatch, not_as_recorded
from seqpack.diff import recorded_entry_fingerprint
from seqpack.errors import UsageError

#: What --check compares with the record seqpack pack wrote: the fingerprints and the counts they cover.
_CHECKED = ("algorithm", *CHECKED)


def _print_text(path: str, result: dict[str, Any]) -> None:
    out_console.print(f"path       {path}")
    out_console.print(f"content    {result['content']}")
    out_console.print(f"packs      {result['packs']}")
    out_console.print(
        f"covers     {result['num_sequences']:,} sequences in {result['num_packs']:,} packs, "
        f"{result['num_tokens']:,} tokens ({result['num_supervised']:,} supervised)"
    )
    out_console.print(f"algorithm  {result['algorithm']}")


def fingerprint(
    path: str = typer.Argument(..., help="Packed Parquet file, glob or directory, or a legacy .npy."),
    check: bool = typer.Option(
        False,
        "--check",
        help="Compare with the fingerprint seqpack pack recorded in the metadata sidecar.",
    ),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """Print an order-independent content hash (sequences with masks) and a hash of the packs as stored.

    Equal `content`: the same samples with the same loss masks, however they are packed. Equal `packs`:
    the same packing, byte for byte.

    With --check, exit 1 when the data no longer matches the fingerprint recorded when it was packed.

    Example: seqpack fingerprint out/packed/training_4096.idx.parquet --format json
    """
    recorded = recorded_entry_fingerprint(path) if check else None
    if check and recorded is None:
        raise UsageError(f"{path}: no fingerprint recorded in a metadata sidecar beside it (--check)")
    with progress(quiet) as bar:
        task = bar.add_task("fingerprint", total=None)
        found = fingerprint_packed(path, on_packs=lambda n: bar.advance(task, n))
    result = found.to_dict()
    stored = recorded[2] if recorded else {}
    mismatches = {k: [stored.get(k), result[k]] for k in _CHECKED if recorded and stored.get(k) != result[k]}
    if output_format is OutputFormat.json:
        extra = {"check": {"metadata": recorded[0], "mismatches": mismatches}} if recorded else {}
        emit_json({"path": path, **result, **extra})
    else:
        _print_text(path, result)
        if recorded is not None:
            verdict = "matches" if not mismatches else "DOES NOT match"
            out_console.print(f"check      {verdict} the record in {recorded[0]}")
            for key, (was, now) in mismatches.items():
                out_console.print(f"  {key}: recorded {was}, now {now}")
    if recorded is not None and mismatches:  # the report, then the one line every reader prints
        what = mismatch(stored, found) or f"algorithm recorded {stored.get('algorithm')}"
        raise not_as_recorded(path, recorded[0], recorded[1], what)


#: What ``seqpack fingerprint`` runs (``seqpack.cli._commands`` registers it under the module's name).
COMMAND = fingerprint
