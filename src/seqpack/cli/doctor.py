"""``seqpack doctor``: check a training config against every packing and long-context rule before launch."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer
from rich.table import Table

from seqpack._console import styled
from seqpack._ranges import COUNT0, RANKS, SIZE
from seqpack.cli._common import (
    FormatOption,
    OutputFormat,
    QuietOption,
    emit_json,
    err_console,
    number_option,
    out_console,
)
from seqpack.doctor import (
    DatasetKind,
    DoctorOptions,
    Report,
    check,
    default_lang,
    known_versions,
    load_config,
    parse_stack,
    stack_summary,
    suggest_fixes,
)
from seqpack.env import env_findings, installed_packages
from seqpack.errors import UsageError
from seqpack.findings import Finding
from seqpack.translate import Translation, load_model_args, mlm_to_bridge, split_mlm_args

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_DATASET_KINDS: tuple[DatasetKind, ...] = ("sft", "sft_in_batch", "pretrain")


def _mlm_translation(mlm_args: str | None, model_config: Path | None) -> Translation | None:
    """The model_config's flags, then ``--mlm-args`` on top (a flag in both takes the --mlm-args value)."""
    if mlm_args is None and model_config is None:
        return None
    result = Translation()
    if model_config is not None:
        result = mlm_to_bridge(load_model_args(model_config))
    if mlm_args is not None:
        extra = mlm_to_bridge(split_mlm_args(mlm_args))
        result.overrides.update(extra.overrides)
        result.origin.update(extra.origin)
        result.conflicts += extra.conflicts
        result.untranslated += extra.untranslated
        result.reasons.update(extra.reasons)
    return result


_ENV_PREFIX = "ENV"


def _env_findings(allowed: list[str]) -> list[Finding]:
    """``seqpack env``'s conclusions about the installed stack among doctor's findings (English only)."""
    return [replace(f, allowed=f.id in allowed) for f in env_findings()]


def _launcher(config: Path | None, mlm_flags: object) -> str | None:
    """Which launcher runs the config: a Bridge YAML alone -> Bridge, Megatron-LM flags alone -> Megatron-LM,
    both or neither -> unknown (the atlas then applies the defects of either)."""
    if config is not None and not mlm_flags:
        return "bridge"
    if config is None and mlm_flags:
        return "mlm"
    return None


def _print_text(report: Report, fixes: list[str] | None) -> None:
    out_console.print(f"config era: {report.config_era}")
    out_console.print(f"stack: {stack_summary(report.stack)}", markup=False)
    if not report.findings:
        out_console.print("no findings: every rule passes")
    else:
        table = Table(show_lines=True)
        table.add_column("id", no_wrap=True)
        table.add_column("severity", no_wrap=True)
        table.add_column("finding", ratio=3, overflow="fold")
        table.add_column("fix", ratio=2, overflow="fold")
        for f in report.findings:
            severity = styled((f.severity, _SEVERITY_STYLE[f.severity]), " (allowed)" if f.allowed else "")
            details = f"{f.why}\nfields: {', '.join(f.fields)}\nupstream: {f.upstream}"
            table.add_row(f.id, severity, styled(f"{f.message}\n", (details, "dim")), "\n".join(f.fix) or "-")
        out_console.print(table)
        counts = {
            s: sum(1 for f in report.findings if f.severity == s and not f.allowed) for s in _SEVERITY_STYLE
        }
        out_console.print(
            f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"
        )
    if fixes is not None:
        out_console.print("corrected overrides:" if fixes else "corrected overrides: none needed")
        for item in fixes:
            out_console.print(item, markup=False)


def doctor(
    config: Path | None = typer.Argument(
        None, help="Bridge YAML config (a --dry-run dump or an override file)."
    ),
    overrides: list[str] | None = typer.Argument(
        None, help="KEY=VALUE overrides applied on top, as run_recipe."
    ),
    mlm_args: str | None = typer.Option(
        None, "--mlm-args", help='Megatron-LM flags, e.g. "--seq-length 4096 --bf16".'
    ),
    model_config: Path | None = typer.Option(
        None, "--model-config", help="Megatron-LM functional-test model_config.yaml."
    ),
    packed: str | None = typer.Option(
        None, "--packed", help="Packed training data (file, glob or directory) to check."
    ),
    tp: int | None = number_option(None, "--tp", help="Tensor-parallel size.", range=RANKS),
    pp: int | None = number_option(None, "--pp", help="Pipeline-parallel size.", range=RANKS),
    cp: int | None = number_option(None, "--cp", help="Context-parallel size.", range=RANKS),
    ep: int | None = number_option(None, "--ep", help="Expert-parallel size.", range=RANKS),
    sequence_parallel: bool = typer.Option(False, "--sequence-parallel", help="Sequence parallelism on."),
    mbs: int | None = number_option(None, "--mbs", help="Micro-batch size.", range=SIZE),
    gbs: int | None = number_option(None, "--gbs", help="Global batch size.", range=SIZE),
    seq_length: int | None = number_option(
        None, "--seq-length", help="Sequence length (dataset and model).", range=SIZE
    ),
    pack_size: int | None = number_option(
        None, "--pack-size", help="Offline packing with this packed_sequence_size.", range=SIZE
    ),
    pad_seq_to_mult: int | None = number_option(
        None, "--pad-seq-to-mult", help="Offline packing pad multiple.", range=SIZE
    ),
    pad_cu_seqlens: bool = typer.Option(
        False, "--pad-cu-seqlens", help="Offline packing pad_cu_seqlens=true."
    ),
    pad_to_max_length: bool = typer.Option(False, "--pad-to-max-length", help="Fixed-width packed rows."),
    in_batch_packing: bool = typer.Option(False, "--in-batch-packing", help="In-batch (VLM) packing on."),
    per_token_loss: bool = typer.Option(
        False, "--per-token-loss", help="model.calculate_per_token_loss=true."
    ),
    average_in_collective: bool = typer.Option(
        False, "--average-in-collective", help="ddp.average_in_collective=true."
    ),
    mtp_num_layers: int | None = number_option(
        None, "--mtp-num-layers", help="Multi-token prediction layers.", range=COUNT0
    ),
    cuda_graph_impl: str | None = typer.Option(
        None, "--cuda-graph-impl", help="none, local, transformer_engine or full_iteration."
    ),
    world_size: int | None = number_option(
        None, "--world-size", help="Total ranks; DP = world / (TP*PP*CP).", range=RANKS
    ),
    dp: int | None = number_option(
        None, "--dp", help="Data-parallel size (instead of --world-size).", range=RANKS
    ),
    dataset_kind: str | None = typer.Option(None, "--dataset-kind", help="sft, sft_in_batch or pretrain."),
    model_family: str | None = typer.Option(
        None, "--model-family", help="Model family, e.g. qwen3-next, glm-4.5."
    ),
    recipe: str | None = typer.Option(
        None, "--recipe", help="Bridge recipe name (used to infer the family)."
    ),
    kernel_chunk: int | None = number_option(
        None,
        "--kernel-chunk",
        help="An attention-kernel chunk the pack width must be a multiple of.",
        range=SIZE,
    ),
    allow: list[str] | None = typer.Option(None, "--allow", help="Accept a finding by id (repeatable)."),
    stack: list[str] | None = typer.Option(
        None,
        "--stack",
        help="Versions for the known-defect atlas, e.g. megatron-bridge==0.6.2,megatron-core==0.19.2 "
        "(default: the installed ones).",
    ),
    gpu: str | None = typer.Option(
        None,
        "--gpu",
        help="GPU architecture of the training machine for the atlas: ampere, ada, hopper, blackwell or "
        "blackwell-rtx (sm_120) (default: unknown, taken for a data-centre GPU).",
    ),
    fix: bool = typer.Option(False, "--fix", help="Print the corrected overrides."),
    lang: str | None = typer.Option(None, "--lang", help="Message language: en or zh (default: the locale)."),
    env: bool = typer.Option(
        False,
        "--env",
        help="Also check the installed stack (as `seqpack env` does); run it on the training machine.",
    ),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """Check a Bridge config (or MLM flags, or plain options) against every packing and CP rule.

    Example: seqpack doctor --cp 2 --seq-length 510 --mbs 1 --gbs 8 --world-size 8
    """
    if config is not None and "=" in str(config) and not config.exists():
        overrides = [str(config), *(overrides or [])]
        config = None
    if dataset_kind is not None and dataset_kind not in _DATASET_KINDS:
        raise UsageError(f"--dataset-kind {dataset_kind!r}: expected one of {', '.join(_DATASET_KINDS)}")
    options = {
        "tp": tp,
        "pp": pp,
        "cp": cp,
        "ep": ep,
        "sequence_parallel": sequence_parallel,
        "mbs": mbs,
        "gbs": gbs,
        "seq_length": seq_length,
        "pack_size": pack_size,
        "pad_seq_to_mult": pad_seq_to_mult,
        "pad_cu_seqlens": pad_cu_seqlens,
        "pad_to_max_length": pad_to_max_length,
        "in_batch_packing": in_batch_packing,
        "per_token_loss": per_token_loss,
        "average_in_collective": average_in_collective,
        "mtp_num_layers": mtp_num_layers,
        "cuda_graph_impl": cuda_graph_impl,
    }
    loaded = load_config(
        config,
        overrides or [],
        mlm=_mlm_translation(mlm_args, model_config),
        options=options,
        dataset_kind=dataset_kind,
    )
    doctor_options = DoctorOptions(
        world_size=world_size,
        dp=dp,
        model_family=model_family,
        recipe=recipe,
        kernel_chunk=kernel_chunk,
        packed=packed,
        allow=[a for a in allow or [] if not a.startswith(_ENV_PREFIX)],
        lang=lang or default_lang(),
        stack=parse_stack(stack or []),
        installed=known_versions(installed_packages()),
        gpu=gpu,
        launcher=_launcher(config, mlm_args or model_config),
    )
    report = check(loaded, doctor_options)
    if env:
        report.findings.extend(_env_findings(allowed=allow or []))
    report.fixes = suggest_fixes(loaded, doctor_options) if fix else None
    if output_format == OutputFormat.json:
        emit_json(report)
    else:
        _print_text(report, report.fixes)
    if report.has_error:
        if output_format != OutputFormat.json and not quiet:
            err_console.print("doctor: the config has errors (exit 1)")
        raise typer.Exit(1)


#: What ``seqpack doctor`` runs (``seqpack.cli._commands`` registers it under the module's name).
COMMAND = doctor
