"""``bridgepack translate``: Megatron-LM flags <-> Megatron-Bridge overrides, through the one flag table."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer

from bridgepack.cli._common import FormatOption, OutputFormat, QuietOption, emit_json, out_console
from bridgepack.doctor import load_config, range_problem
from bridgepack.errors import UsageError
from bridgepack.translate import (
    DEFAULT_RECIPE,
    bridge_to_mlm_report,
    format_override,
    load_model_args,
    mlm_to_bridge,
)

translate_app = typer.Typer(
    help="Translate Megatron-LM flags to Bridge overrides and back.", no_args_is_help=True
)


@translate_app.command(
    "mlm-to-bridge", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def mlm_to_bridge_cmd(
    flags: list[str] | None = typer.Argument(None, help="Megatron-LM flags (after --)."),
    model_config: Path | None = typer.Option(
        None, "--model-config", help="Megatron-LM model_config.yaml (a whole launch: implies --full)."
    ),
    recipe: str = typer.Option(
        DEFAULT_RECIPE, "--recipe", help="The Bridge recipe the overrides apply to (run_recipe.py --recipe)."
    ),
    full: bool = typer.Option(
        False,
        "--full",
        help="The flags are the whole launch: also write Megatron-LM's defaults wherever the recipe differs.",
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Exit 1 when anything is untranslated (a flag, or a required one missing)."
    ),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,  # nothing on stderr to silence: taken as every command takes it
) -> None:
    """Print Bridge overrides (KEY=VALUE, one per line), then notes and untranslated flags as # comments.

    Example: bridgepack translate mlm-to-bridge --full -- --num-layers 12 --hidden-size 768
    --num-attention-heads 12 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 4
    --global-batch-size 32 --train-iters 1000 --lr 3e-4 --swiglu --bf16
    """
    if (model_config is None) == (not flags):
        raise UsageError("give exactly one of --model-config FILE or flags after --")
    translation = mlm_to_bridge(
        load_model_args(model_config) if model_config else list(flags or []),
        recipe=recipe,
        full=full or model_config is not None,
    )
    for key, value in translation.overrides.items():
        _in_range(translation.origin.get(key, key), key, value)
    if output_format is OutputFormat.json:
        emit_json(translation)
    else:
        for key, value in translation.overrides.items():
            out_console.print(format_override(key, value), markup=False)
        for line in translation.conflicts:
            out_console.print(f"# conflict: {line}", markup=False)
        for line in translation.notes:
            out_console.print(f"# note: {line}", markup=False)
        for item in translation.untranslated:
            out_console.print(f"# untranslated: {item}  ({translation.reason(item)})", markup=False)
    if strict and translation.untranslated:
        raise typer.Exit(1)


@translate_app.command("bridge-to-mlm")
def bridge_to_mlm_cmd(
    overrides: list[str] | None = typer.Argument(None, help="KEY=VALUE Bridge overrides."),
    config: Path | None = typer.Option(None, "--config", help="Bridge YAML config to translate."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any key has no Megatron-LM flag."),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,  # nothing on stderr to silence: taken as every command takes it
) -> None:
    """Print Megatron-LM flags for Bridge overrides, then keys without a flag as # comments.

    Example: bridgepack translate bridge-to-mlm model.seq_length=4096 mixed_precision=bf16_mixed
    """
    if config is None and not overrides:
        raise UsageError("give KEY=VALUE overrides or --config FILE")
    loaded = load_config(config, overrides or [])
    for problem in loaded.problems:
        if problem.kind == "out-of-range":
            raise UsageError(f"{problem.where or problem.key}: {problem.detail}")
    flat = _flatten(loaded.raw)
    reverse = bridge_to_mlm_report(flat)
    if output_format is OutputFormat.json:
        emit_json(reverse)
    else:
        out_console.print(shlex.join(reverse.flags), markup=False)
        for item in reverse.untranslated:
            out_console.print(f"# untranslated: {item}", markup=False)
    if strict and reverse.untranslated:
        raise typer.Exit(1)


def _in_range(given_as: str, key: str, value: object) -> None:
    """A count no run accepts (``--context-parallel-size 0``) is refused, not translated."""
    beyond = range_problem(key, value)
    if beyond is not None:
        raise UsageError(f"{given_as}: {key}: {beyond}")


def _flatten(tree: dict[str, object], prefix: str = "") -> dict[str, object]:
    """Nested config -> dotted keys (``_target_`` entries and empty sections dropped)."""
    out: dict[str, object] = {}
    for key, value in tree.items():
        if str(key).startswith("_"):
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, path + "."))
        else:
            out[path] = value
    return out


#: What ``bridgepack translate`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = translate_app
