"""``seqpack fingerprint``: the content and packing fingerprints of a packed set."""

from __future__ import annotations

import typer

from seqpack.cli._common import FormatOption, OutputFormat, emit_json, out_console
from seqpack.diff import fingerprint_packed


def register(app: typer.Typer) -> None:
    """Add ``seqpack fingerprint`` to ``app``."""

    @app.command("fingerprint")
    def fingerprint(
        path: str = typer.Argument(..., help="Packed Parquet file, glob or directory, or a legacy .npy."),
        output_format: OutputFormat = FormatOption,
    ) -> None:
        """Print an order-independent content hash (sequences with masks) and a hash of the packs as stored.

        Equal `content`: the same samples with the same loss masks, however they are packed. Equal `packs`:
        the same packing, byte for byte.

        Example: seqpack fingerprint out/packed/training_4096.idx.parquet --format json
        """
        result = fingerprint_packed(path)
        if output_format is OutputFormat.json:
            emit_json({"path": path, **result.to_dict()})
            return
        out_console.print(f"path       {path}")
        out_console.print(f"content    {result.content}")
        out_console.print(f"packs      {result.packs}")
        out_console.print(
            f"covers     {result.num_sequences:,} sequences in {result.num_packs:,} packs, "
            f"{result.num_tokens:,} tokens ({result.num_supervised:,} supervised)"
        )
        out_console.print(f"algorithm  {result.algorithm}")
