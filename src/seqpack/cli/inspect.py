"""``seqpack inspect``: check packed data and its metadata sidecar, print what the packs hold."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import typer

from seqpack._progress import progress
from seqpack.cli._common import FormatOption, OutputFormat, QuietOption, emit_json, out_console
from seqpack.cli._decode_view import decode_command
from seqpack.data.metadata import find_metadata, packed_names, pick_entry, read_metadata
from seqpack.data.packed import PackedBlock, PackedReader, read_legacy_npy
from seqpack.data.packed_stats import PackedStats, collect_stats, compare_metadata
from seqpack.diff import dump_batches
from seqpack.errors import DataError, InputError, UsageError
from seqpack.plan import (
    DEFAULT_SAMPLER_SEED,
    CostModel,
    ModelDims,
    check_batch,
    resolve_cost_model,
    row_costs,
    step_imbalance,
)

PERCENTILES = (50, 90, 99)


def _report(stats: PackedStats, pack_size: int | None) -> dict[str, Any]:
    hist = {str(k): int(v) for k, v in enumerate(stats.sequences_per_pack) if v}
    lengths = {f"p{q}": stats.length_percentile(q) for q in PERCENTILES}
    nonzero = [int(i) for i in range(stats.length_counts.size) if stats.length_counts[i]]
    return {
        "packs": stats.packs,
        "sequences": stats.sequences,
        "stored_tokens": stats.stored_tokens,
        "runtime_tokens": stats.runtime_tokens,
        "pack_size": pack_size,
        "efficiency_percent": round(stats.efficiency(pack_size), 2) if pack_size else None,
        "sequences_per_pack": hist,
        "runtime_length": {"min": nonzero[0] if nonzero else 0, **lengths, "max": stats.dataset_max_seqlen},
        "packed_runtime_tokens": {"min": stats.min_packed_seqlen or 0, "max": stats.max_packed_seqlen},
    }


def _simulation(dp: int | None, gbs: int | None, model: str | None) -> tuple[int, int, CostModel] | None:
    """Checked ``(dp, gbs, cost model)`` of the sampler simulation, or None when not asked for."""
    if dp is None and gbs is None:
        if model is not None:
            raise UsageError("--model sets the cost model of the --dp/--gbs simulation; add --dp and --gbs")
        return None
    if dp is None or gbs is None:
        raise UsageError("--dp and --gbs go together")
    check_batch(gbs, dp)
    return dp, gbs, resolve_cost_model(None if model is None else ModelDims.parse(model))


def _print_text(spec: str, files: list[str], report: dict[str, Any], meta: dict[str, Any]) -> None:
    p = out_console.print
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


def inspect_command(
    path: str = typer.Argument(..., help="Packed Parquet file, glob or directory (or a legacy .npy file)."),
    metadata: Path | None = typer.Option(
        None, "--metadata", help="Metadata sidecar (default: {N}_metadata.jsonl beside the data)."
    ),
    dp: int | None = typer.Option(None, "--dp", help="Simulate Bridge's sampler over DP ranks (with --gbs)."),
    gbs: int | None = typer.Option(None, "--gbs", help="Global batch size (packs per step) for --dp."),
    model: str | None = typer.Option(
        None, "--model", help="hidden,layers,heads,ffn,vocab[,groups] of the step-cost model (7B-like)."
    ),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
    dump: int | None = typer.Option(
        None, "--dump-batches", help="Write the first K collated batches to --out."
    ),
    out: Path | None = typer.Option(None, "--out", help="The .npz file --dump-batches writes."),
    batch_size: int = typer.Option(1, "--batch-size", help="Packs per dumped batch (GBS/DP)."),
    variant: str = typer.Option(
        "0.6.2", "--collate-variant", help="Collate as Bridge 0.6.2, main or legacy."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --out file."),
    decode: int | None = typer.Option(
        None,
        "--decode",
        help="Print the first K sequences as text, trained spans marked (needs --tokenizer).",
    ),
    tokenizer: Path | None = typer.Option(None, "--tokenizer", help="Tokenizer dir for --decode."),
) -> None:
    """Check packed data and its metadata; print packs, sequences, efficiency and length statistics.

    Every row invariant of Bridge's packed format is checked, and the six metadata values are recomputed
    from the rows. Exit 0 when all is well, 1 on the first bad row or a metadata mismatch, 2 when the data
    cannot be read.

    With --dp and --gbs it also deals the packs the way Bridge's batch sampler does (epoch 0) and
    reports the per-step imbalance: the slowest rank's estimated cost over the mean rank's.

    With --decode K --tokenizer DIR it prints the first K sequences as text instead, what the model is
    trained to predict marked, with the token ids at each trained span's ends (Bridge or flattened layout).

    Example: seqpack inspect out/training_4096.idx.parquet --format json
    """
    if decode is not None or tokenizer is not None:  # the text view: see seqpack.cli._decode_view
        if decode is None:
            raise UsageError("--tokenizer is for --decode K; add --decode")
        return decode_command(path, decode, tokenizer, output_format)
    simulation = _simulation(dp, gbs, model)
    if path.lower().endswith(".npy"):
        files = [path]
        blocks: Any = [read_legacy_npy(path)]
    else:
        reader = PackedReader(path)
        files = reader.paths
        blocks = reader.iter_blocks()
    names = packed_names(files)
    meta_path = metadata if metadata is not None else find_metadata(files)
    if metadata is not None and not metadata.exists():
        raise InputError(f"{os.fspath(metadata)}: no such file")
    entries = read_metadata(meta_path) if meta_path is not None else []
    picked = pick_entry(entries, names.split) if entries else None
    pack_size = int(picked[1]["pack_size"]) if picked else names.pack_size
    if picked and names.pack_size is not None and names.pack_size != pack_size:
        raise DataError(
            f"{meta_path}: entry {picked[0]}: pack_size {pack_size} differs from the file name's "
            f"{names.pack_size}"
        )
    with progress(quiet) as bar:
        task = bar.add_task("inspect", total=None)

        costs: list[np.ndarray] = []

        def advancing(source: Iterable[PackedBlock]) -> Iterator[PackedBlock]:
            for block in source:
                yield block  # collect_stats validates the block before asking for the next one
                bar.advance(task, block.num_rows)
                if simulation is not None:
                    runtime = block.sequence_lengths() - 1
                    costs.append(row_costs(runtime, block.sequences_per_row(), simulation[2]))

        stats = collect_stats(advancing(blocks), pack_size=pack_size)
    report = _report(stats, pack_size)
    if simulation is not None:
        sim_dp, sim_gbs, cost_model = simulation
        result = step_imbalance(np.concatenate(costs), sim_dp, sim_gbs)
        report["dp_imbalance"] = {
            "dp": sim_dp,
            "gbs": sim_gbs,
            "sampler_seed": DEFAULT_SAMPLER_SEED,
            **result.to_dict(),
            "cost_model": cost_model.to_record(),
        }
    meta: dict[str, Any]
    if meta_path is None:
        meta = {"status": "skipped", "reason": "no metadata sidecar found (pass --metadata)"}
    elif picked is None:
        meta = {
            "status": "skipped",
            "path": str(meta_path),
            "reason": f"no entry of {meta_path} names this split",
        }
    else:
        mismatches = compare_metadata(picked[1], stats)
        meta = {
            "status": "mismatch" if mismatches else "consistent",
            "path": str(meta_path),
            "entry": picked[0],
            "mismatches": [m.__dict__ for m in mismatches],
        }
    if dump is not None:  # batch dumps for `seqpack diff` (seqpack.diff)
        entry = picked[1] if picked else None
        dump_batches(path, out, dump, pack_size=pack_size, metadata=entry, batch_size=batch_size,
                     variant=variant, overwrite=overwrite)  # fmt: skip
    if output_format is OutputFormat.json:
        emit_json({"path": path, "files": files, **report, "metadata": meta})
    else:
        _print_text(path, files, report, meta)
    if meta["status"] == "mismatch":
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``seqpack inspect`` to the app."""
    app.command("inspect")(inspect_command)
