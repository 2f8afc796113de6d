"""``bridgepack plan``: choose the pack size and global batch from the data's own lengths (issue 9)."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.table import Table

import bridgepack.cli._pack_options as shared
from bridgepack._io import atomic_path
from bridgepack._plot import pyplot
from bridgepack._ranges import RANKS, SIZE
from bridgepack.cli._common import (
    FormatOption,
    OutputFormat,
    QuietOption,
    emit_json,
    err_console,
    number_option,
    out_console,
    print_blocks,
    stdout_is_terminal,
)
from bridgepack.data.pipeline import read_lengths
from bridgepack.packing import ModelDims, resolve_cost_model
from bridgepack.sizing import (
    DEFAULT_TOKEN_SLOTS,
    Candidate,
    Imbalance,
    PlanReport,
    Topology,
    balance_worthwhile,
    evaluate,
    overrides_for_candidate,
    pack_command,
    parse_pack_sizes,
    recommend,
)

LEGEND = """\
efficiency: real tokens / token slots. padding saved: token slots saved vs one padded row per sample.
GBS: token slots // pack size (~: not exact), MBS 1. rejected: samples longer than the pack. pad multiple:
pad_seq_to_mult (+ tokens its pre-padding adds). FLOP/step: forward+backward, SI prefixes, for {model}.
DP imbalance: mean over steps of the slowest rank's cost / the mean rank's, under Bridge's sampler (with
--dp or --world-size), for balanced packs (bridgepack pack's default) and best_fit_decreasing's.
est. epoch time: (FLOPs of every token slot + attention) x the better imbalance, relative to the
recommended pack size (marked), which has the least of those rejecting fewest samples ("-": it rejects
more, so it trains on less data)."""


def _flops(value: float) -> str:
    """FLOPs with an SI prefix: 1.23e15 -> '1.23 P'."""
    if value <= 0:
        return "0"
    exponent = min(int(math.log10(value) // 3), 6)
    return f"{value / 10 ** (3 * exponent):.2f} {['', 'K', 'M', 'G', 'T', 'P', 'E'][exponent]}"


def _imbalance_text(value: Imbalance | None) -> str:
    return "-" if value is None else f"{value.mean:.3f}"


def _pad_text(c: Candidate) -> str:
    """``pad_seq_to_mult`` and the tokens its pre-padding adds (only when it adds any)."""
    return f"{c.pad_multiple}" if c.pad_tokens == 0 else f"{c.pad_multiple} (+{c.pad_cost:.2%})"


def _metrics(candidates: list[Candidate], chosen: Candidate, with_flops: bool) -> list[tuple[str, list[str]]]:
    """Each metric's name and its value for every candidate, in the order the table shows them."""
    dp_text = {None: "-", True: "yes", False: "no"}
    rows: list[tuple[str, list[str]]] = [
        ("packs", [f"{c.packs:,}" for c in candidates]),
        ("efficiency", [f"{c.efficiency:.2%}" for c in candidates]),
        ("padding saved", [f"{c.padding_saved_fraction:.1%}" for c in candidates]),
        ("GBS", [f"{c.gbs}" + ("" if c.gbs_exact else " ~") for c in candidates]),
        ("DP divides GBS", [dp_text[c.dp_divides] for c in candidates]),
        ("steps / epoch", [f"{c.steps_per_epoch:,}" for c in candidates]),
        ("rejected", [f"{c.rejected:,}" for c in candidates]),
        ("pad multiple", [_pad_text(c) for c in candidates]),
        ("attention share", [f"{c.attention_share:.1%}" for c in candidates]),
    ]
    if with_flops:
        rows.append(("dense FLOP/step", [_flops(c.dense_flops_per_step) for c in candidates]))
        rows.append(("attention FLOP/step", [_flops(c.attention_flops_per_step) for c in candidates]))
    if any(c.imbalance is not None for c in candidates):
        rows += [
            ("DP imbalance (balanced)", [_imbalance_text(c.imbalance_balanced) for c in candidates]),
            ("DP imbalance (best_fit_decreasing)", [_imbalance_text(c.imbalance) for c in candidates]),
        ]
    rows.append(
        (
            "est. epoch time",
            [
                f"{c.estimated_epoch_cost / chosen.estimated_epoch_cost:.3f}"
                if c.rejected <= chosen.rejected
                else "-"
                for c in candidates
            ],
        )
    )
    return rows


def _table(candidates: list[Candidate], chosen: Candidate, metrics: list[tuple[str, list[str]]]) -> Table:
    """One column per candidate pack size (fits a terminal for any number of metrics)."""
    table = Table(title="bridgepack plan", title_justify="left")
    table.add_column("pack size", style="bold", no_wrap=True)
    for c in candidates:
        table.add_column(f"{c.pack_size}" + (" *" if c is chosen else ""), justify="right", no_wrap=True)
    for name, values in metrics:
        table.add_row(name, *values)
    return table


def _print_candidates(candidates: list[Candidate], chosen: Candidate, with_flops: bool) -> None:
    """The candidates as a table on a terminal; elsewhere one block per pack size, one metric a line."""
    metrics = _metrics(candidates, chosen, with_flops)
    if stdout_is_terminal():
        out_console.print(_table(candidates, chosen, metrics))
        return
    blocks = []
    for i, c in enumerate(candidates):
        heading = f"pack size {c.pack_size}" + (" (recommended)" if c is chosen else "")
        blocks.append((heading, [(name, values[i]) for name, values in metrics]))
    print_blocks(blocks)


def _plot(candidates: list[Candidate], path: Path, overwrite: bool) -> None:
    plt = pyplot()
    sizes = [str(c.pack_size) for c in candidates]
    fig, left = plt.subplots(figsize=(6, 3.5))
    left.plot(sizes, [100 * c.efficiency for c in candidates], "o-", color="tab:blue", label="efficiency")
    left.set_xlabel("pack size (runtime tokens)")
    left.set_ylabel("packing efficiency (%)", color="tab:blue")
    right = left.twinx()
    right.plot(sizes, [100 * c.attention_share for c in candidates], "s--", color="tab:red")
    right.set_ylabel("attention share of FLOPs (%)", color="tab:red")
    left.set_title("bridgepack plan")
    fig.tight_layout()
    with atomic_path(path, overwrite=overwrite) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def plan(
    inputs: list[Path] = typer.Argument(..., help=shared.INPUTS_HELP),
    tokenizer: Path = shared.TokenizerOption,
    prompt_field: str = shared.PromptFieldOption,
    completion_field: str = shared.CompletionFieldOption,
    messages_field: str = shared.MessagesFieldOption,
    chat_template: Path = shared.ChatTemplateOption,
    tool_schemas: Path = shared.ToolSchemasOption,
    eos_id: int = shared.EosIdOption,
    pack_sizes: str = typer.Option("2048,4096,8192,16384", "--pack-sizes", help="Candidate pack sizes."),
    token_slots: int = number_option(
        DEFAULT_TOKEN_SLOTS,
        "--token-slots",
        help="Tokens per step kept equal: GBS = slots // pack.",
        range=SIZE,
    ),
    tp: int | None = shared.TpOption,
    cp: int | None = shared.CpOption,
    sequence_parallel: bool = shared.SequenceParallelOption,
    dp: int = number_option(None, "--dp", help="Data-parallel size.", range=RANKS),
    world_size: int = number_option(
        None, "--world-size", help="GPUs in all; DP = world / (TP x CP).", range=RANKS
    ),
    model: str = shared.ModelOption,
    workers: int = shared.WorkersOption,
    plot: Path = typer.Option(None, "--plot", help="Write a PNG of efficiency and attention share."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --plot file."),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """Evaluate candidate pack sizes on your data and recommend one, with its Bridge overrides.

    Example: bridgepack plan data.jsonl --pack-sizes 4096,8192,16384 --dp 8 --model 4096,32,32,11008,32000
    """
    tp, cp = tp or 1, cp or 1
    sizes = parse_pack_sizes(pack_sizes)
    dims = None if model is None else ModelDims.parse(model)
    cost_model = resolve_cost_model(dims)
    topology = Topology.resolve(tp, cp, sequence_parallel, dp, world_size)
    lengths = read_lengths(
        list(inputs),
        tokenizer=tokenizer,
        eos_id=eos_id,
        prompt_field=prompt_field,
        completion_field=completion_field,
        messages_field=messages_field,
        chat_template=chat_template,
        tool_schemas=tool_schemas,
        workers=workers,
        quiet=quiet or output_format is OutputFormat.json,
    )
    candidates = evaluate(lengths, sizes, token_slots, topology, cost_model)
    chosen = recommend(candidates)
    balance = balance_worthwhile(chosen)
    overrides = overrides_for_candidate(chosen, topology)
    carried = [
        ("--tokenizer", tokenizer),
        ("--prompt-field", prompt_field),
        ("--completion-field", completion_field),
        ("--messages-field", None if messages_field == shared.DEFAULT_MESSAGES_FIELD else messages_field),
        ("--chat-template", chat_template),
        ("--tool-schemas", tool_schemas),
        ("--eos-id", eos_id),
        ("--model", model),
    ]
    command = pack_command([str(p) for p in inputs], chosen, topology, carried=carried)
    if plot is not None:
        _plot(candidates, plot, overwrite)
    report = PlanReport(
        samples=int(lengths.shape[0]),
        longest=int(lengths.max()),
        token_slots=token_slots,
        topology=topology,
        cost_model=cost_model,
        candidates=candidates,
        chosen=chosen,
        recommend_balance=balance,
        overrides=overrides,
        pack_command=command,
    )
    if output_format is OutputFormat.json:
        emit_json(report)
        return
    out_console.print(
        f"{report.samples:,} samples, longest {report.longest:,} runtime tokens, "
        f"token slots per step {token_slots:,}, pad multiple {topology.pad_multiple}"
        + ("" if topology.dp is None else f", DP {topology.dp}")
    )
    _print_candidates(candidates, chosen, dims is not None)
    for c in candidates:
        for note in c.notes:
            err_console.print(f"note: {note}")
    model_name = "the --model dims" if dims is not None else "a 7B-like decoder (default)"
    out_console.print(LEGEND.format(model=model_name))
    out_console.print(
        f"Recommended: pack size {chosen.pack_size}, GBS {chosen.gbs} "
        f"({chosen.efficiency:.2%} efficient, {chosen.steps_per_epoch:,} steps per epoch)."
    )
    if balance:
        assert chosen.imbalance is not None and chosen.imbalance_balanced is not None
        out_console.print(
            f"Balanced packs (the default) lower the simulated DP imbalance from "
            f"{chosen.imbalance.mean:.3f} (best_fit_decreasing) to {chosen.imbalance_balanced.mean:.3f}."
        )
    elif chosen.imbalance_balanced is not None:
        out_console.print(
            "Balanced packs (the default) do not lower the simulated DP imbalance here "
            "(the longest sequences alone set the most expensive packs); they cost nothing either."
        )
    out_console.print("Pack it with:")
    out_console.print(f"  {command}")
    out_console.print(
        "Then train with these Megatron-Bridge overrides (plus the paths `bridgepack pack` prints):"
    )
    out_console.print("  " + " \\\n  ".join(overrides))
    if plot is not None:
        out_console.print(f"plot: {plot}")


#: What ``bridgepack plan`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = plan
