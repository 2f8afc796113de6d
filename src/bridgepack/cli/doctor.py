"""``bridgepack doctor``: check a training config against every packing and long-context rule before
launch."""

from __future__ import annotations

import enum
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import typer

from bridgepack._io import atomic_path, read_bytes
from bridgepack._ranges import COUNT0, RANKS, SIZE
from bridgepack.cli._common import QuietOption, emit_json, err_console, number_option, print_blocks
from bridgepack.cli._doctor_view import explanation, print_catalog, print_github, print_report
from bridgepack.doctor import (
    CATALOG,
    DatasetKind,
    DoctorOptions,
    LoadedConfig,
    Report,
    RuleCatalog,
    catalog_entry,
    check,
    checked_lang,
    default_lang,
    fixed_yaml,
    known_versions,
    load_config,
    parse_stack,
    suggest_fixes,
)
from bridgepack.env import env_findings, installed_packages
from bridgepack.errors import DataError, InputError, UsageError
from bridgepack.findings import Finding
from bridgepack.translate import Translation, load_model_args, mlm_to_bridge, split_mlm_args

_DATASET_KINDS: tuple[DatasetKind, ...] = ("sft", "sft_in_batch", "pretrain")


class DoctorFormat(str, enum.Enum):
    """The doctor's output formats: ``text`` and ``json`` as every command, ``github`` for Actions logs."""

    text = "text"
    json = "json"
    github = "github"


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
    """``bridgepack env``'s conclusions about the installed stack among doctor's findings (English only)."""
    return [replace(f, allowed=f.id in allowed) for f in env_findings()]


def _launcher(config: Path | None, mlm_flags: object) -> str | None:
    """Which launcher runs the config: a Bridge YAML alone -> Bridge, Megatron-LM flags alone -> Megatron-LM,
    both or neither -> unknown (the atlas then applies the defects of either)."""
    if config is not None and not mlm_flags:
        return "bridge"
    if config is None and mlm_flags:
        return "mlm"
    return None


def doctor(
    config: Path | None = typer.Argument(
        None,
        help="Bridge YAML config (a --dry-run dump or an override file); several are checked one by one.",
    ),
    overrides: list[str] | None = typer.Argument(
        None, help="KEY=VALUE overrides applied on top, as run_recipe (or more CONFIG files)."
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
    write_config: Path | None = typer.Option(
        None,
        "--write-config",
        help="With --fix: write CONFIG with the fixes applied here (comments and order kept; the original "
        "is never touched), only if the doctor then finds no error. Needs bridgepack[yaml].",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --write-config file."),
    list_rules: bool = typer.Option(
        False, "--list-rules", help="List every rule and known defect (id, severity, title) and exit."
    ),
    explain: str | None = typer.Option(
        None, "--explain", help="Explain one rule or defect (what, why, fix, links, versions), e.g. SP005."
    ),
    lang: str | None = typer.Option(None, "--lang", help="Message language: en or zh (default: the locale)."),
    env: bool = typer.Option(
        False,
        "--env",
        help="Also check the installed stack (as `bridgepack env` does); run it on the training machine.",
    ),
    output_format: DoctorFormat = typer.Option(
        DoctorFormat.text,
        "--format",
        help="text (a table on a terminal, plain blocks otherwise), json, or github (Actions annotations).",
    ),
    quiet: bool = QuietOption,
) -> None:
    """Check a Bridge config (or MLM flags, or plain options) against every packing and CP rule.

    Through a pipe the text is plain and never wrapped: per finding "[file:line:col: ]ID severity: message",
    then "why:", "fields:", "upstream:" and one "fix: key=value" line per override.

    Example: bridgepack doctor --cp 2 --seq-length 510 --mbs 1 --gbs 8 --world-size 8

    Example: bridgepack doctor --explain SP005 --lang zh
    """
    lang = checked_lang(lang or default_lang())
    if list_rules or explain is not None:
        return _catalog_command(list_rules, explain, config, overrides, output_format, lang)
    configs, overrides = _split_inputs(config, overrides or [])
    _check_usage(configs, dataset_kind, fix, write_config, output_format)
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
    kind: DatasetKind | None = dataset_kind  # type: ignore[assignment]  # checked by _check_usage
    mlm = _mlm_translation(mlm_args, model_config)

    def load(path: Path | None) -> LoadedConfig:
        return load_config(path, overrides, mlm=mlm, options=options, dataset_kind=kind)

    def doctor_options(path: Path | None) -> DoctorOptions:
        return DoctorOptions(
            world_size=world_size,
            dp=dp,
            model_family=model_family,
            recipe=recipe,
            kernel_chunk=kernel_chunk,
            packed=packed,
            allow=[a for a in allow or [] if not a.startswith(_ENV_PREFIX)],
            lang=lang,
            stack=parse_stack(stack or []),
            installed=known_versions(installed_packages()),
            gpu=gpu,
            launcher=_launcher(path, mlm_args or model_config),
        )

    failed = False
    targets: list[Path | None] = [*configs] or [None]
    for path in targets:
        report = _check_config(path, load, doctor_options(path), env=env, allow=allow or [], fix=fix)
        if output_format == DoctorFormat.json:
            emit_json(report)
        elif output_format == DoctorFormat.github:
            print_github(report)
        else:
            print_report(report, os.fspath(path) if len(configs) > 1 and path is not None else None)
        if write_config is not None and path is not None and report.fixes is not None:
            _write_fixed(path, report.fixes, write_config, overwrite, load, doctor_options(path))
            if not quiet:
                err_console.print(f"wrote {write_config} (the doctor finds no error in it)")
        failed = failed or report.has_error
    if failed:
        if output_format == DoctorFormat.text and not quiet:
            err_console.print("doctor: the config has errors (exit 1)")
        raise typer.Exit(1)


def _check_config(
    path: Path | None,
    load: Callable[[Path | None], LoadedConfig],
    options: DoctorOptions,
    *,
    env: bool,
    allow: list[str],
    fix: bool,
) -> Report:
    """One config's report: the rules and the atlas, ``--env``'s findings, ``--fix``'s overrides."""
    loaded = load(path)
    report = check(loaded, options)
    if env:
        report.findings.extend(_env_findings(allowed=allow))
    report.fixes = suggest_fixes(loaded, options) if fix else None
    return report


def _split_inputs(config: Path | None, words: list[str]) -> tuple[list[Path], list[str]]:
    """The positional words as config files and overrides: a word is an override when it has ``=`` (or is a
    ``~key`` deletion) and names no existing file; pre-commit passes several files, an override list none."""
    configs: list[Path] = []
    overrides: list[str] = []
    for word in ([os.fspath(config)] if config is not None else []) + words:
        if ("=" in word or word.startswith("~")) and not os.path.exists(word):
            overrides.append(word)
        elif overrides:
            raise UsageError(f"{word!r}: config files come before the KEY=VALUE overrides")
        else:
            configs.append(Path(word))
    return configs, overrides


def _check_usage(
    configs: list[Path],
    dataset_kind: str | None,
    fix: bool,
    write_config: Path | None,
    output_format: DoctorFormat,
) -> None:
    if dataset_kind is not None and dataset_kind not in _DATASET_KINDS:
        raise UsageError(f"--dataset-kind {dataset_kind!r}: expected one of {', '.join(_DATASET_KINDS)}")
    if len(configs) > 1 and (output_format == DoctorFormat.json or write_config is not None):
        what = "--format json" if write_config is None else "--write-config"
        raise UsageError(f"{what} checks one CONFIG at a time ({len(configs)} given)")
    if write_config is not None and (not fix or not configs):
        raise UsageError("--write-config needs --fix and a CONFIG file to apply the fixes to")


def _catalog_command(
    list_rules: bool,
    explain: str | None,
    config: Path | None,
    overrides: list[str] | None,
    output_format: DoctorFormat,
    lang: str,
) -> None:
    """``--list-rules`` / ``--explain ID``: the rule catalog, no config read."""
    if list_rules and explain is not None:
        raise UsageError("give --list-rules or --explain, not both")
    if config is not None or overrides or output_format == DoctorFormat.github:
        raise UsageError("--list-rules and --explain take no CONFIG or overrides and print text or json")
    entries = list(CATALOG) if list_rules else [catalog_entry(explain or "")]
    if output_format == DoctorFormat.json:
        emit_json(RuleCatalog(entries, lang))
    elif list_rules:
        print_catalog(entries, lang)
    else:
        print_blocks([explanation(entries[0], lang)])


def _write_fixed(
    config: Path,
    fixes: list[str],
    out: Path,
    overwrite: bool,
    load: Callable[[Path | None], LoadedConfig],
    options: DoctorOptions,
) -> None:
    """Write ``config`` with ``fixes`` applied to ``out`` (atomically), after the doctor found no error in it
    under the same overrides and options; ``config`` itself is never written."""
    if out.exists() and config.exists() and os.path.samefile(out, config):
        raise UsageError(f"--write-config {out}: that is the config itself; the original is never touched")
    try:
        text = read_bytes(config).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{config}: not UTF-8 text") from None
    fixed = fixed_yaml(text, fixes, name=os.fspath(config))
    with atomic_path(out, overwrite=overwrite) as tmp:
        tmp.write_text(fixed, encoding="utf-8")
        errors = [f for f in check(load(tmp), options).findings if f.severity == "error" and not f.allowed]
        if errors:
            listed = "; ".join(f"{f.id} {f.message}" for f in errors)
            raise DataError(f"--write-config {out}: not written, the fixed config still has errors: {listed}")


#: What ``bridgepack doctor`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = doctor
