"""``bridgepack train``: the reference trainer on packed data, or on the same samples padded."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from bridgepack._ranges import CLIP, NONNEG, RATE, SEED, SIZE
from bridgepack.cli._common import (
    FormatOption,
    OutputFormat,
    QuietOption,
    emit_json,
    err_console,
    number_option,
    out_console,
)
from bridgepack.errors import UsageError
from bridgepack.packing import ModelDims


def train_command(
    data: Path | None = typer.Option(None, "--data", help="Packed Parquet (file, glob or directory)."),
    padded_from: Path | None = typer.Option(
        None,
        "--padded-from",
        help="Train on the same samples as --data would, one per row, right-padded.",
    ),
    hidden: int = number_option(64, "--hidden", help="Hidden size.", range=SIZE),
    layers: int = number_option(2, "--layers", help="Transformer layers.", range=SIZE),
    heads: int = number_option(4, "--heads", help="Attention heads.", range=SIZE),
    ffn: int = number_option(128, "--ffn", help="MLP (SwiGLU) hidden size.", range=SIZE),
    vocab: int | None = number_option(
        None,
        "--vocab",
        help="Vocabulary size, above every token id (default: the data's largest id + 1).",
        range=SIZE,
    ),
    lr: float = number_option(1e-3, "--lr", help="AdamW learning rate (constant).", range=RATE),
    steps: int | None = number_option(
        None, "--steps", help="Optimizer steps (global batches of packs).", range=SIZE
    ),
    epochs: int | None = number_option(
        None, "--epochs", help="Epochs over the packs (default 1).", range=SIZE
    ),
    gbs: int = number_option(4, "--gbs", help="Global batch size in packs.", range=SIZE),
    mbs: int = number_option(1, "--mbs", help="Micro-batch size in packs.", range=SIZE),
    seed: int = number_option(1234, "--seed", help="Seed of the model init and the sampler.", range=SEED),
    log_interval: int = number_option(1, "--log-interval", help="Iterations per log line.", range=SIZE),
    log: Path | None = typer.Option(
        None,
        "--log",
        "--log-file",
        help="Also write the log lines to this file (under torchrun spell it --log-file: torchrun takes "
        "--log as an abbreviation of its own --log-dir).",
    ),
    tensorboard: Path | None = typer.Option(None, "--tensorboard", help="TensorBoard log directory."),
    pack_size: int | None = number_option(
        None,
        "--pack-size",
        help="Pack size the data must have (checked against its metadata).",
        range=SIZE,
    ),
    pad_multiple: int | None = number_option(
        None, "--pad-multiple", help="pad_seq_to_mult the data must have been packed with.", range=SIZE
    ),
    pad_to: int | None = number_option(
        None, "--pad-to", help="Padded mode: row length (default: pack size).", range=SIZE
    ),
    weight_decay: float = number_option(0.01, "--weight-decay", help="AdamW weight decay.", range=NONNEG),
    clip_grad: float = number_option(1.0, "--clip-grad", help="Gradient-norm clip (0: off).", range=CLIP),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda or auto."),
    dtype: str = typer.Option("float32", "--dtype", help="float32 or bfloat16 (autocast)."),
    memory_limit_gib: float | None = number_option(
        None,
        "--memory-limit-gib",
        help="Memory the run may use (default: what the machine has free).",
        range=RATE,
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --log file."),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """Train a tiny Llama-style model on packed data (or the same samples padded) with per-token loss.

    Steps are global batches of --gbs packs, drawn as Bridge's sampler draws them.

    --padded-from trains on exactly the sequences of those packs, one per row: the loss curves match.

    Log lines follow Megatron-LM's format (`bridgepack curves` reads them). Data parallel: torchrun.

    Example: bridgepack train --data out/training_512.idx.parquet --steps 50 --gbs 8 --log packed.log
    """
    from bridgepack.train import DataMode, TrainConfig, data_vocab, train  # torch

    if (data is None) == (padded_from is None):
        raise UsageError("give exactly one of --data (packed) or --padded-from (padded)")
    if hidden % heads:  # in the flags' words; ModelDims would say it in its fields'
        raise UsageError(f"--hidden {hidden} must be divisible by --heads {heads}")
    source = data if data is not None else padded_from
    assert source is not None
    if vocab is None:
        vocab = data_vocab(source)
    config = TrainConfig(
        data=source,
        mode=DataMode.packed if data is not None else DataMode.padded,
        model=ModelDims(hidden=hidden, layers=layers, heads=heads, ffn=ffn, vocab=vocab),
        lr=lr,
        steps=steps,
        epochs=epochs,
        gbs=gbs,
        mbs=mbs,
        seed=seed,
        log_interval=log_interval,
        log=log,
        tensorboard=tensorboard,
        overwrite=overwrite,
        pack_size=pack_size,
        pad_multiple=pad_multiple,
        pad_to=pad_to,
        weight_decay=weight_decay,
        clip_grad=clip_grad,
        device=device,
        dtype=dtype,
        memory_limit=int(memory_limit_gib * 2**30) if memory_limit_gib is not None else None,
        quiet=quiet,
    )
    json_out = output_format is OutputFormat.json
    # Log lines go to stdout (Megatron-LM does, `bridgepack curves` reads them); with --format json stdout
    # holds only the JSON document, so they move to stderr.
    stream = None if quiet else (sys.stderr if json_out else sys.stdout)
    result = train(config, stream=stream)
    # Under torchrun only the last rank (the one that logs, as in Megatron-LM) prints the summary.
    if result.world_size > 1 and _rank() != result.world_size - 1:
        if result.interrupted:
            raise typer.Exit(130)
        return
    if json_out:
        emit_json(result)
    else:
        out_console.print(
            f"{result.mode.value}: {result.steps_done} steps, {result.world_size} process(es), "
            f"final lm loss {result.final_loss:.6f}\n"
            f"  positions {result.positions:,} (real {result.real_tokens:,}, "
            f"padding {100 * result.padding_fraction:.1f}% of compute)\n"
            f"  {result.tokens_per_s:,.0f} tokens/s, {result.real_tokens_per_s:,.0f} real tokens/s"
            + (f"\n  log: {result.log_path}" if result.log_path is not None else "")
        )
    if result.interrupted:
        where = f"; log: {result.log_path}" if result.log_path is not None else ""
        err_console.print(f"interrupted after step {result.steps_done} of {result.steps_planned}{where}")
        raise typer.Exit(130)


def _rank() -> int:
    import os

    return int(os.environ.get("RANK", "0"))


#: What ``bridgepack train`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = train_command
