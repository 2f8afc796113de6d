"""``bridgepack verify --bridge``: bridgepack against the Megatron-Bridge installed here (or a given
wheel)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from bridgepack._console import styled
from bridgepack._ranges import INT32_MAX, SEED, SIZE, Range
from bridgepack.cli._common import (
    FormatOption,
    OutputFormat,
    QuietOption,
    emit_json,
    number_option,
    out_console,
)
from bridgepack.errors import UsageError
from bridgepack.verify import PartResult, VerifyOptions, VerifyReport, verify_bridge

_STYLE = {"passed": "green", "failed": "bold red", "skipped": "yellow"}

#: The generated samples hold at least one token and EOS: a pack smaller than 2 runtime tokens holds none.
PACK_SIZE = Range(2, INT32_MAX)


def _print_text(results: list[PartResult]) -> None:
    for part in results:
        reason = f": {part.reason}" if part.reason else ""
        out_console.print(styled(f"{part.name:8} ", (part.status, _STYLE[part.status]), reason))
        d = part.details
        if part.name == "packing":
            out_console.print(
                f"         Bridge {d['bridge_version']} ({d['bridge_origin']}); {d['samples']:,} samples, "
                f"pack size {d['pack_size']}, seed {d['seed']}, pad_seq_to_mult {d['pad_seq_to_mult']}; "
                f"packs bridgepack/Bridge {d['packs'][0]:,}/{d['packs'][1]:,}"
            )
            for key, (ours, theirs) in d["metadata_differences"].items():
                out_console.print(f"         metadata {key}: bridgepack {ours!r}, Bridge {theirs!r}")
            first = d["first_differing_pack"]
            if first is not None:
                out_console.print(
                    f"         first differing pack {first['index']}: {first['field']} at {first['position']}"
                )
            if "files" in d:
                out_console.print(f"         kept: {d['files']['bridgepack']}  {d['files']['bridge']}")
        if part.name == "collate" and d:
            out_console.print(
                f"{'':9}{d['batches']} batches of {d['batch_size']} packs; bridgepack collates as "
                f"{d['variant']}"
            )
            for m in d["mismatches"]:
                out_console.print(f"         batch {m['batch']}: key {m['key']} differs")
        if part.name == "config" and "counts" in d:
            _print_config(d)


def _print_config(d: dict[str, Any]) -> None:
    """One summary line, the agreeing rules, then every other case with both configs' verdicts."""
    counts = d["counts"]
    out_console.print(
        f"{'':9}Bridge {d['bridge_version']} with Megatron-Core {d['megatron_core_version']} "
        f"(Python {d['python']}; {d['origin']})"
    )
    out_console.print(
        f"{'':9}{len(d['cases'])} rule cases: {counts['agree']} agree, {counts['doctor-only']} doctor-only, "
        f"{counts['bridge-only']} bridge-only, {counts['unbuilt']} unbuilt"
    )
    agreeing = [c["rule"] for c in d["cases"] if c["verdict"] == "agree"]
    if agreeing:
        out_console.print(f"{'':9}agree: {' '.join(agreeing)}", soft_wrap=True)
    for case in d["cases"]:
        if case["verdict"] == "agree":
            continue
        out_console.print(f"{'':9}{case['rule']} {case['verdict']}:")
        for variant, c in case["configs"].items():
            error = f" ({c['bridge_error']})" if c["bridge_error"] else ""
            out_console.print(
                f"{'':11}{variant}: doctor {c['doctor']}, Bridge {c['bridge']}{error}", soft_wrap=True
            )
    if d["stand_ins"]:
        out_console.print(f"{'':9}stand-ins: {'; '.join(d['stand_ins'])}", soft_wrap=True)


def verify(
    bridge: bool = typer.Option(False, "--bridge", help="Compare with Megatron-Bridge's own code."),
    bridge_wheel: Path = typer.Option(
        None, "--bridge-wheel", help="A megatron-bridge .whl to use instead of the installed package."
    ),
    megatron_core_wheel: Path = typer.Option(
        None,
        "--megatron-core-wheel",
        help="A megatron-core .whl (with megatron.training) for the config part with --bridge-wheel.",
    ),
    samples: int = number_option(2000, "--samples", help="Generated samples to pack.", range=SIZE),
    pack_size: int = number_option(
        512, "--pack-size", help="Pack capacity in runtime tokens.", range=PACK_SIZE
    ),
    seed: int = number_option(
        0, "--seed", help="Seed of the generated data and of both packings.", range=SEED
    ),
    pad_seq_to_mult: int = number_option(
        1, "--pad-seq-to-mult", help="CP/SP pre-padding multiple.", range=SIZE
    ),
    keep: Path = typer.Option(None, "--keep", help="Keep the generated data and both packings here."),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,  # nothing on stderr to silence: taken as every command takes it
) -> None:
    """Pack a generated dataset with bridgepack --bridge-compat and with Bridge's own packing, and diff them;
    collate with both; validate doctor's rule cases with Bridge's ConfigContainer.

    Parts that cannot run here (collate needs an importable Bridge; config needs an importable Bridge, or
    --bridge-wheel with a Megatron-Core that has megatron.training, e.g. --megatron-core-wheel) are
    reported as skipped with the reason, never as passed. Exit 1 when any part fails.

    Example: bridgepack verify --bridge --bridge-wheel megatron_bridge-0.6.2-py3-none-any.whl

    Example (every part on a CPU machine, from wheels): bridgepack verify --bridge --bridge-wheel
    megatron_bridge-0.6.2-py3-none-any.whl --megatron-core-wheel
    megatron_core-0.19.2-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl
    """
    if not bridge:
        raise UsageError("nothing to verify: pass --bridge")
    opts = VerifyOptions(
        wheel=None if bridge_wheel is None else str(bridge_wheel),
        megatron_core_wheel=None if megatron_core_wheel is None else str(megatron_core_wheel),
        samples=samples,
        pack_size=pack_size,
        seed=seed,
        pad_seq_to_mult=pad_seq_to_mult,
        keep=keep,
    )
    report = VerifyReport(verify_bridge(opts))
    if output_format is OutputFormat.json:
        emit_json(report)
    else:
        _print_text(report.parts)
    if report.failed:
        raise typer.Exit(1)


#: What ``bridgepack verify`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = verify
