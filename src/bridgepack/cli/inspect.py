"""``bridgepack inspect``: check packed data and its metadata sidecar, print what the packs hold."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer

from bridgepack._progress import progress
from bridgepack._ranges import COUNT0, RANKS, SIZE
from bridgepack.batching import dump_batches
from bridgepack.cli._common import (
    FormatOption,
    OutputFormat,
    QuietOption,
    emit_json,
    number_option,
    out_console,
)
from bridgepack.cli._decode_view import decode_command
from bridgepack.data.packed import CONSISTENT, MISMATCH, EosCheck, Inspection, PackedBlock, inspect_packed
from bridgepack.errors import UsageError
from bridgepack.packing import CostModel, ModelDims, resolve_cost_model
from bridgepack.sizing import SamplerSimulation


def _simulation(dp: int | None, gbs: int | None, model: str | None) -> SamplerSimulation | None:
    """The sampler simulation asked for with ``--dp``/``--gbs`` (checked), or None."""
    if dp is None and gbs is None:
        if model is not None:
            raise UsageError("--model sets the cost model of the --dp/--gbs simulation; add --dp and --gbs")
        return None
    if dp is None or gbs is None:
        raise UsageError("--dp and --gbs go together")
    cost_model: CostModel = resolve_cost_model(None if model is None else ModelDims.parse(model))
    return SamplerSimulation(dp, gbs, cost_model)


def _print_text(inspection: Inspection) -> None:
    p = out_console.print
    spec, files = inspection.path, inspection.files
    report, meta = inspection.to_dict(), inspection.metadata.to_dict()
    p(f"packed data      {spec} ({len(files)} file{'s' if len(files) != 1 else ''})")
    p(f"packs            {report['packs']}")
    p(f"sequences        {report['sequences']}")
    p(
        f"tokens           {report['stored_tokens']} stored, "
        f"{report['runtime_tokens']} runtime (stored - 1 per sequence)"
    )
    if report["pack_size"]:
        p(f"pack size        {report['pack_size']}")
        p(f"efficiency       {report['efficiency_percent']:.2f} % of pack capacity")
    hist = "  ".join(f"{k}: {v}" for k, v in report["sequences_per_pack"].items())
    p(f"sequences/pack   {hist}")
    rl = report["runtime_length"]
    p("runtime length   " + "  ".join(f"{k} {v}" for k, v in rl.items()))
    pr = report["packed_runtime_tokens"]
    p(f"pack fill        min {pr['min']}  max {pr['max']} runtime tokens")
    sim = report.get("dp_imbalance")
    if sim is not None:
        p(
            f"DP imbalance     DP {sim['dp']}, GBS {sim['gbs']}, {sim['steps']} steps of Bridge's sampler: "
            f"mean {sim['mean']:.3f}  p95 {sim['p95']:.3f}  worst {sim['worst']:.3f} "
            f"(slowest rank / mean rank; {sim['step_time_saving']:.1%} of step time spent waiting)"
        )
    status = meta["status"]
    if status == "consistent":
        p(f"metadata         {meta['path']} entry {meta['entry']}: consistent (6 Bridge keys recomputed)")
    elif status == "mismatch":
        p(f"metadata         {meta['path']} entry {meta['entry']}: MISMATCH")
        for m in meta["mismatches"]:
            p(f"  {m['key']}: file says {m['stored']}, rows give {m['recomputed']}")
    else:
        p(f"metadata         not checked: {meta['reason']}")
    if inspection.eos is not None:
        _print_eos(inspection.eos)


def _print_eos(eos: EosCheck) -> None:
    p = out_console.print
    recorded = f"{eos.recorded} ({eos.recorded_source or 'unknown source'})"
    if eos.status == CONSISTENT:
        p(f"eos              {recorded} recorded, the tokenizer's too: consistent")
    elif eos.status == MISMATCH:
        p(f"eos              {recorded} recorded, the tokenizer's is {eos.tokenizer_eos}: MISMATCH")
        p(f"  {eos.message}")
    else:
        reason = "no EOS id recorded" if eos.recorded is None else f"{eos.tokenizer} has no EOS token"
        p(f"eos              not checked: {reason}")


def inspect_command(
    path: str = typer.Argument(..., help="Packed Parquet file, glob or directory (or a legacy .npy file)."),
    metadata: Path | None = typer.Option(
        None, "--metadata", help="Metadata sidecar (default: {N}_metadata.jsonl beside the data)."
    ),
    dp: int | None = number_option(
        None, "--dp", help="Simulate Bridge's sampler over DP ranks (with --gbs).", range=RANKS
    ),
    gbs: int | None = number_option(
        None, "--gbs", help="Global batch size (packs per step) for --dp.", range=SIZE
    ),
    model: str | None = typer.Option(
        None, "--model", help="hidden,layers,heads,ffn,vocab[,groups] of the step-cost model (7B-like)."
    ),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
    dump: int | None = number_option(
        None, "--dump-batches", help="Write the first K collated batches to --out.", range=SIZE
    ),
    out: Path | None = typer.Option(None, "--out", help="The .npz file --dump-batches writes."),
    batch_size: int = number_option(1, "--batch-size", help="Packs per dumped batch (GBS/DP).", range=SIZE),
    variant: str = typer.Option(
        "0.6.2", "--collate-variant", help="Collate as Bridge 0.6.2, main or legacy."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --out file."),
    decode: int | None = number_option(
        None,
        "--decode",
        help="Print the first K sequences as text, trained spans marked (needs --tokenizer).",
        range=COUNT0,
    ),
    tokenizer: Path | None = typer.Option(
        None,
        "--tokenizer",
        help="Tokenizer dir: for --decode; without it, check the EOS id the metadata records against it.",
    ),
) -> None:
    """Check packed data and its metadata; print packs, sequences, efficiency and length statistics.

    Every row invariant of Bridge's packed format is checked, and the six metadata values are recomputed
    from the rows. Exit 0 when all is well, 1 on the first bad row or a metadata mismatch, 2 when the data
    cannot be read.

    With --dp and --gbs it also deals the packs the way Bridge's batch sampler does (epoch 0) and
    reports the per-step imbalance: the slowest rank's estimated cost over the mean rank's.

    With --decode K --tokenizer DIR it prints the first K sequences as text instead, what the model is
    trained to predict marked, with the token ids at each trained span's ends (Bridge or flattened layout).

    With --tokenizer DIR alone it also checks the EOS id the metadata records (the id readers pad and mask
    with) against the tokenizer's: a different one is a finding (exit 1).

    Example: bridgepack inspect out/training_4096.idx.parquet --format json
    """
    if decode is not None:  # the text view: see bridgepack.cli._decode_view
        return decode_command(path, decode, tokenizer, output_format)
    simulation = _simulation(dp, gbs, model)
    with progress(quiet) as bar:
        task = bar.add_task("inspect", total=None)

        def on_block(block: PackedBlock) -> None:
            bar.advance(task, block.num_rows)
            if simulation is not None:
                simulation.add(block)

        inspection = inspect_packed(
            path,
            metadata=metadata,
            on_packs=lambda total: bar.update(task, total=total),  # N/total, not N/?
            on_block=on_block,
            tokenizer=tokenizer,
        )
    if simulation is not None:
        inspection = replace(inspection, dp_imbalance=simulation.result())
    if dump is not None:  # batch dumps for `bridgepack diff`
        dump_batches(path, out, dump, pack_size=inspection.pack_size, metadata=inspection.metadata_entry,
                     batch_size=batch_size, variant=variant, overwrite=overwrite)  # fmt: skip
    if output_format is OutputFormat.json:
        emit_json(inspection)
    else:
        _print_text(inspection)
    if not inspection.ok:
        raise typer.Exit(1)


#: What ``bridgepack inspect`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = inspect_command
