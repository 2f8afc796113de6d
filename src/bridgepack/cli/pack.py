"""``bridgepack pack``: SFT samples in, Megatron-Bridge packed Parquet + metadata out (bridge-format §2-4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

import bridgepack.cli._pack_options as shared
from bridgepack._pack import pack as pack_samples
from bridgepack._ranges import SEED, SIZE
from bridgepack.cli._common import (
    FormatOption,
    OutputFormat,
    QuietOption,
    emit_json,
    err_console,
    number_option,
    out_console,
)
from bridgepack.data.packset import SPLITS, TRAINING, Layout, PackRecord
from bridgepack.data.pipeline import TooLong
from bridgepack.data.samples import EXAMPLE_EOS_ID, example_dataset_path
from bridgepack.errors import UsageError
from bridgepack.packing import CostModel, ModelDims


def _cost_model(model: str | None) -> CostModel | None:
    return None if model is None else CostModel.from_dims(ModelDims.parse(model))


def _print_text(summary: dict[str, Any]) -> None:
    table = Table(title="bridgepack pack", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    rows = [
        ("samples in", f"{summary['samples_in']:,}"),
        ("samples packed", f"{summary['samples_packed']:,}"),
        ("rejected / dropped", f"{summary['rejected']:,} / {summary['dropped']:,}"),
        ("truncated / split", f"{summary['truncated']:,} / {summary['split']:,}"),
        *([("assistant mask by", summary["assistant_mask"])] if "assistant_mask" in summary else []),
        ("sequences", f"{summary['sequences']:,}"),
        ("packs", f"{summary['packs']:,}"),
        ("efficiency", f"{summary['efficiency_percent']:.2f} %"),
        ("padding tokens", f"{summary['padding_tokens']:,}"),
        ("padding saved vs padding each sample", f"{summary['padding_tokens_saved']:,} tokens"),
        (
            f"time ({' / '.join(summary['seconds'])})",
            " / ".join(f"{v:.2f}s" for v in summary["seconds"].values()),
        ),
    ]
    for key, value in rows:
        table.add_row(key, value)
    out_console.print(table)
    out_console.print(f"packed:   {summary['packed_path']}")
    out_console.print(f"metadata: {summary['metadata_path']}")
    out_console.print(f"rejects:  {summary['rejects_path']}")
    if summary["overrides"]:
        out_console.print("Train on it with these Megatron-Bridge overrides:")
        out_console.print("  " + " \\\n  ".join(summary["overrides"]))
    else:
        out_console.print("Flattened layout: input_ids, position_ids, labels (-100 off-target), seq_lengths.")


def _warn_inferred_eos(record: PackRecord) -> None:
    """An EOS guessed from the rows' last tokens that pads samples deserves a warning: rows rendered by a chat
    template end with the template's end token and a newline, not with the tokenizer's EOS."""
    if record.eos_source == "inferred" and record.pad_seq_to_mult > 1:
        err_console.print(
            f"warning: EOS id {record.eos_id} was inferred from the rows' most common last token and pads "
            f"every sample to a multiple of {record.pad_seq_to_mult}; pass --eos-id ID or --tokenizer DIR "
            "to set it"
        )


def pack(
    inputs: list[Path] = typer.Argument(None, help=shared.INPUTS_HELP),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory."),
    pack_size: int = number_option(
        ...,
        "--pack-size",
        "-n",
        help="Pack capacity N in runtime tokens (stored tokens with --layout padding-free).",
        range=SIZE,
    ),
    example: bool = typer.Option(False, "--example", help="Pack the small SFT dataset bridgepack ships."),
    split: str = typer.Option(TRAINING, "--split", help=" or ".join(SPLITS) + "."),
    max_seq_length: int = number_option(
        None, "--max-seq-length", help="Longest sample kept (default N).", range=SIZE
    ),
    too_long: TooLong = typer.Option(None, "--too-long", help="reject (default), truncate or split."),
    algorithm: str = typer.Option(
        None,
        "--algorithm",
        help="balanced (default: as few packs as best_fit_decreasing, even step costs across DP ranks), "
        "best_fit_decreasing, first_fit_shuffle (compat default), first_fit_decreasing.",
    ),
    seed: int = number_option(
        None,
        "--seed",
        help="Seed of the packing shuffles, Bridge's GPTSFTDatasetConfig.seed. With --bridge-compat the "
        "default is 5678, what Bridge's recipe presets pack with (a config built by hand keeps the field's "
        "1234: pass --seed 1234); 0 otherwise.",
        range=SEED,
    ),
    bridge_compat: bool = typer.Option(False, "--bridge-compat", help="Reproduce Bridge 0.6.2 exactly."),
    model: str = shared.ModelOption,
    pad_seq_to_mult: int = number_option(
        None, "--pad-seq-to-mult", help="Pre-pad runtime lengths to a multiple.", range=SIZE
    ),
    cp: int = shared.CpOption,
    tp: int = shared.TpOption,
    sequence_parallel: bool = shared.SequenceParallelOption,
    eos_id: int = shared.EosIdOption,
    tokenizer: Path = shared.TokenizerOption,
    prompt_field: str = shared.PromptFieldOption,
    completion_field: str = shared.CompletionFieldOption,
    messages_field: str = shared.MessagesFieldOption,
    chat_template: Path = shared.ChatTemplateOption,
    tool_schemas: Path = shared.ToolSchemasOption,
    loss_mode: str = typer.Option(
        None,
        "--loss-mode",
        help="Supervised tokens: chat assistant (default), last_turn or full; "
        "prompt-completion completion (default) or full.",
    ),
    assistant_start: str = typer.Option(
        None,
        "--assistant-start",
        help="Chat: text (tokens) opening an assistant turn, with --assistant-end; not with --bridge-compat.",
    ),
    assistant_end: str = typer.Option(
        None, "--assistant-end", help="Chat: text (tokens) closing an assistant turn, trained on too."
    ),
    separator: str = typer.Option(" ", "--separator", help="Text between prompt and completion (Bridge's)."),
    prompt_template: str = typer.Option(
        "{prompt}", "--prompt-template", help="Prompt format, e.g. 'Q: {prompt}'."
    ),
    strip_whitespace: bool = typer.Option(
        True, "--strip-whitespace/--no-strip-whitespace", help="Strip spaces around prompt and completion."
    ),
    add_bos: bool = typer.Option(False, "--add-bos/--no-add-bos", help="BOS before the prompt."),
    add_sep: bool = typer.Option(False, "--add-sep/--no-add-sep", help="SEP between prompt and completion."),
    add_eos: bool = typer.Option(True, "--add-eos/--no-add-eos", help="EOS after the completion."),
    truncation_method: str = typer.Option(
        "right", "--truncation-method", help="Compat truncation keeps the head (right) or the tail (left)."
    ),
    workers: int = shared.WorkersOption,
    layout: str = typer.Option(
        Layout.bridge.value,
        "--layout",
        help="bridge (packed Parquet) or padding-free (flattened, for transformers/TRL; hf: its old name).",
    ),
    chunk_rows: int | None = number_option(
        None,
        "--chunk-rows",
        help="Records per chunk handed to a worker (default: 1024 rows of token ids, 256 of text).",
        range=SIZE,
    ),
    scratch_dir: Path = typer.Option(
        None, "--scratch-dir", help="Where the scratch store goes (default: DIR)."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace an existing {split}_{N} pack set (ray: restart, not resume)."
    ),
    engine: str = typer.Option(
        "local", "--engine", help="local (this machine) or ray (a Ray cluster; a directory of shards)."
    ),
    ray_address: str = typer.Option(
        None, "--ray-address", help="Ray cluster to run on (auto, HOST:PORT); default: start one here."
    ),
    shards: int | None = number_option(
        None,
        "--shards",
        help="Input slices and output shards of a ray run, one plan (default: the cluster's CPUs).",
        range=SIZE,
    ),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """Pack SFT samples into Megatron-Bridge's offline packed format.

    Example: bridgepack pack data.jsonl --out packed/ --pack-size 4096 --cp 2
    """
    if example:
        if inputs:
            raise UsageError("--example packs the shipped dataset; give no input files with it")
        inputs = [example_dataset_path()]
        if eos_id is None:  # the shipped dataset's EOS is known: nothing to infer, nothing to warn about
            eos_id = EXAMPLE_EOS_ID
    if not inputs:
        raise UsageError("give input files (or --example for the shipped dataset)")
    result = pack_samples(
        inputs,
        out,
        pack_size,
        tokenizer=tokenizer,
        eos_id=eos_id,
        chat_template=chat_template,
        tool_schemas=tool_schemas,
        prompt_field=prompt_field,
        completion_field=completion_field,
        messages_field=messages_field,
        loss_mode=loss_mode,
        assistant_start=assistant_start,
        assistant_end=assistant_end,
        separator=separator,
        prompt_template=prompt_template,
        strip_whitespace=strip_whitespace,
        add_bos=add_bos,
        add_sep=add_sep,
        add_eos=add_eos,
        truncation_method=truncation_method,
        bridge_compat=bridge_compat,
        algorithm=algorithm,
        cost_model=_cost_model(model),
        seed=seed,
        pad_seq_to_mult=pad_seq_to_mult,
        cp=cp,
        tp=tp,
        sequence_parallel=sequence_parallel,
        max_seq_length=max_seq_length,
        too_long=too_long,
        split=split,
        layout=layout,
        workers=workers,
        chunk_rows=chunk_rows,
        scratch_dir=scratch_dir,
        overwrite=overwrite,
        quiet=quiet or output_format is OutputFormat.json,
        engine=engine,  # type: ignore[arg-type]  # checked by pack_samples, like every value
        ray_address=ray_address,
        shards=shards,
    )
    if output_format is OutputFormat.json:
        emit_json(result)
    else:
        _print_text(result.to_dict())
    _warn_inferred_eos(result.record)
    not_packed = result.counts.rejected + result.counts.dropped
    if not quiet and not_packed:
        err_console.print(f"{not_packed} sample(s) not packed: see {result.rejects_path}")


#: What ``bridgepack pack`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = pack
