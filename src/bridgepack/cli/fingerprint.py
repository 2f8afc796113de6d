"""``bridgepack fingerprint``: the content and packing fingerprints of a packed set."""

from __future__ import annotations

import typer

from bridgepack._progress import progress
from bridgepack.cli._common import FormatOption, OutputFormat, QuietOption, emit_json, out_console
from bridgepack.data.packed import FingerprintReport, fingerprint_packed, mismatch, not_as_recorded
from bridgepack.diff import recorded_entry_fingerprint
from bridgepack.errors import UsageError
from bridgepack.fingerprint import FINGERPRINT_ALGORITHM


def _print_text(report: FingerprintReport) -> None:
    found = report.found
    out_console.print(f"path       {report.path}")
    out_console.print(f"content    {found.content}")
    out_console.print(f"packs      {found.packs}")
    out_console.print(
        f"covers     {found.num_sequences:,} sequences in {found.num_packs:,} packs, "
        f"{found.num_tokens:,} tokens ({found.num_supervised:,} supervised)"
    )
    out_console.print(f"algorithm  {found.algorithm}")
    if report.recorded is not None:
        verdict = "matches" if not report.mismatches else "DOES NOT match"
        out_console.print(f"check      {verdict} the record in {report.recorded[0]}")
        for key, (was, now) in report.mismatches.items():
            out_console.print(f"  {key}: recorded {was}, now {now}")


def fingerprint(
    path: str = typer.Argument(..., help="Packed Parquet file, glob or directory, or a legacy .npy."),
    check: bool = typer.Option(
        False,
        "--check",
        help="Compare with the fingerprint bridgepack pack recorded in the metadata sidecar.",
    ),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """Print an order-independent content hash (sequences with masks) and a hash of the packs as stored.

    Equal `content`: the same samples with the same loss masks, however they are packed. Equal `packs`:
    the same packing, byte for byte.

    With --check, exit 1 when the data no longer matches the fingerprint recorded when it was packed.

    Example: bridgepack fingerprint out/packed/training_4096.idx.parquet --format json
    """
    recorded = recorded_entry_fingerprint(path) if check else None
    if check and recorded is None:
        raise UsageError(f"{path}: no fingerprint recorded in a metadata sidecar beside it (--check)")
    algorithm = FINGERPRINT_ALGORITHM if recorded is None else str(recorded[2]["algorithm"])
    with progress(quiet) as bar:
        task = bar.add_task("fingerprint", total=None)
        found = fingerprint_packed(path, on_packs=lambda n: bar.advance(task, n), algorithm=algorithm)
    report = FingerprintReport(path, found, recorded)
    if output_format is OutputFormat.json:
        emit_json(report)
    else:
        _print_text(report)
    what = None if recorded is None else mismatch(recorded[2], found)
    if recorded is not None and what is not None:  # the report, then the one line every reader prints
        raise not_as_recorded(path, recorded[0], recorded[1], what)


#: What ``bridgepack fingerprint`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = fingerprint
