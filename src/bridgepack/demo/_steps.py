"""The demo's steps, each a thin call into the public API of one bridgepack area.

Every step returns what it produced plus the ``bridgepack`` command line that does the same by hand, so the
report can show a newcomer how to run each step on their own data::

    tokenizer  bridgepack.demo.build_tokenizer                  (word-level, digits split; nothing downloaded)
    pack       bridgepack.data.pipeline.pack_files              bridgepack pack ...
    inspect    bridgepack.data.packed.inspect_packed            bridgepack inspect ...
    doctor     bridgepack.doctor.check/suggest_fixes            bridgepack doctor ... --fix
    train x2   bridgepack.train.train (packed, then padded)     bridgepack train --data / --padded-from ...
    curves     bridgepack.curves.compare_curves                 bridgepack curves compare ...
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from bridgepack._io import atomic_write_bytes, read_bytes
from bridgepack.curves import LOSS, Comparison, Curves, Profile, compare_curves, read_curves
from bridgepack.data.packed import MetadataMismatch, PackedStats, inspect_packed
from bridgepack.data.pipeline import (
    InputOptions,
    LengthPolicy,
    PackOptions,
    PackResult,
    PackSize,
    RunSettings,
    TooLong,
    pack_files,
)
from bridgepack.data.samples.text import load_tokenizer
from bridgepack.demo._paths import DemoPaths
from bridgepack.demo._remap import Remap, remap_packs
from bridgepack.demo._resources import EXPECTED_FINDING
from bridgepack.demo._sizes import DemoSizes, model_vocab
from bridgepack.demo._toy_tokenizer import build_tokenizer
from bridgepack.doctor import (
    DoctorOptions,
    LoadedConfig,
    Report,
    apply_overrides,
    check,
    load_config,
    suggest_fixes,
)
from bridgepack.errors import DataError, UsageError, param
from bridgepack.packing import ModelDims
from bridgepack.train import DataMode, StepRecord, TrainConfig, TrainResult, train

#: Packed vs padded losses are compared under the bf16 profile with a single ulp: |a - b| <= 1 bf16 ulp of
#: the loss (2**-6 ~ 0.016 at a loss of 2-4, i.e. under 1 %). The two runs compute the same per-token mean
#: in float32 with sums in another order, so they agree to ~1e-6; anything that changed which tokens are
#: trained or how they are weighted moves the loss by far more than one ulp within a few steps.
CURVES_PROFILE = Profile("bf16", ulps=1)
#: Which doctor findings the fixed config may still have (none of these severities is acceptable).
BLOCKING_SEVERITIES = ("error", "warning")


def command(*parts: str | os.PathLike[str]) -> str:
    """A shell-quoted command line."""
    return shlex.join(os.fspath(p) for p in parts)


# ---------------------------------------------------------------------------------------------- tokenizer


@dataclass(frozen=True)
class TokenizerOut:
    path: Path
    size: int
    vocab: int
    #: ``--tokenizer DIR``: how the ids present were remapped (``size`` is then the number kept).
    remap: Remap | None = None

    def describe(self) -> str:
        """One line for the report: which tokenizer, and the vocabulary the model was given."""
        if self.remap is None:
            return f"built from the conversations: {self.size:,} tokens, model vocabulary {self.vocab:,}"
        return (
            f"{self.path} ({self.remap.tokenizer_size:,} ids): the {self.size:,} ids present in the packs "
            f"remapped to 0..{self.size - 1:,} for the tiny model (vocabulary {self.vocab:,})"
        )


def conversation_texts(dataset: Path) -> list[str]:
    """Every message's content of a chat JSONL file (what the tokenizer's vocabulary is trained on)."""
    texts: list[str] = []
    for number, line in enumerate(read_bytes(dataset).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
            texts.extend(str(turn["content"]) for turn in record["messages"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise DataError(
                f"{dataset}:{number}: expected {{'messages': [{{'content': ...}}, ...]}}"
            ) from None
    return texts


def make_tokenizer(dataset: Path, paths: DemoPaths) -> TokenizerOut:
    """Build the word-level tokenizer (digits split) from the conversations; size rounded for the model."""
    from tokenizers import Tokenizer

    path = build_tokenizer(conversation_texts(dataset), paths.tokenizer, split_digits=True)
    size = Tokenizer.from_file(os.fspath(path / "tokenizer.json")).get_vocab_size()
    return TokenizerOut(path, size, model_vocab(size))


def user_tokenizer(path: Path) -> TokenizerOut:
    """The user's tokenizer, checked before anything is written: it loads and has a chat template."""
    tokenizer = load_tokenizer(path)
    if not getattr(tokenizer, "chat_template", None):
        raise UsageError(
            f"{param('tokenizer')} {os.fspath(path)}: no chat template (the demo's data is chats)"
        )
    size = len(tokenizer)
    return TokenizerOut(path, size, model_vocab(size))


def remap_vocabulary(paths: DemoPaths, *, overwrite: bool) -> TokenizerOut:
    """The user's tokenizer: the packs' ids remapped to the ids present, for a small model vocabulary."""
    path = paths.tokenizer
    remap = remap_packs(
        paths.packed, paths.metadata, paths.train_dir, tokenizer=os.fspath(path),
        tokenizer_size=len(load_tokenizer(path)), overwrite=overwrite,
    )  # fmt: skip
    kept = int(remap.kept.size)
    return TokenizerOut(path, kept, model_vocab(kept), remap)


# ------------------------------------------------------------------------------------------- pack/inspect


def pack(dataset: Path, paths: DemoPaths, sizes: DemoSizes, *, overwrite: bool) -> tuple[PackResult, str]:
    """Pack the conversations at ``sizes.pack_size``; the few longer ones are truncated (and listed)."""
    options = PackOptions(
        InputOptions((dataset,), tokenizer=paths.tokenizer),
        PackSize(sizes.pack_size),
        # quiet: the demo's own progress display is live; a second one would clash
        RunSettings(paths.packed_dir, overwrite=overwrite, quiet=True),
        LengthPolicy(too_long=TooLong.truncate),
    )
    cli = command(
        "bridgepack", "pack", dataset, "--out", paths.packed_dir, "--pack-size", str(sizes.pack_size),
        "--tokenizer", paths.tokenizer, "--too-long", "truncate",
    )  # fmt: skip
    return pack_files(options), cli


@dataclass(frozen=True)
class InspectOut:
    stats: PackedStats
    metadata_path: Path
    mismatches: list[MetadataMismatch]
    command: str


def inspect(paths: DemoPaths) -> InspectOut:
    """What ``bridgepack inspect`` does: validate every packed row and recompute Bridge's six metadata values
    from the rows."""
    found = inspect_packed(paths.packed, metadata=paths.metadata)
    return InspectOut(
        found.stats,
        paths.metadata,
        found.metadata.mismatches,
        command("bridgepack", "inspect", paths.packed),
    )


# ------------------------------------------------------------------------------------------------ doctor


@dataclass(frozen=True)
class DoctorOut:
    written: Report
    fixes: list[str]
    fixed: Report
    overrides: list[str]
    command: str
    fixed_command: str

    @property
    def found_expected(self) -> bool:
        return any(f.id == EXPECTED_FINDING and f.severity == "error" for f in self.written.findings)

    @property
    def fixed_passes(self) -> bool:
        return not any(f.severity in BLOCKING_SEVERITIES for f in self.fixed.findings)


def _fixed_yaml(fixed: LoadedConfig, fixes: Sequence[str], source: Path) -> bytes:
    header = (
        f"# {source.name} with the fix of `bridgepack doctor --fix` applied (and the demo's data paths):\n"
        + "".join(f"#   {item}\n" for item in fixes)
    )
    return (header + yaml.safe_dump(fixed.raw, sort_keys=False)).encode()


def doctor(config: Path, paths: DemoPaths, *, lang: str, overwrite: bool) -> DoctorOut:
    """Check the bundled config pointed at the demo's packs: the mistake, the fix, the fixed config passing.

    The config is copied into the output directory as written; the fixed one is written beside it.
    """
    atomic_write_bytes(paths.config, read_bytes(config), overwrite=overwrite)
    overrides = [
        f"dataset.offline_packing_specs.packed_train_data_path={os.fspath(paths.packed)}",
        f"tokenizer.tokenizer_model={os.fspath(paths.tokenizer)}",
    ]
    options = DoctorOptions(world_size=1, lang=lang)
    loaded = load_config(paths.config, overrides)
    written = check(loaded, options)
    fixes = suggest_fixes(loaded, options)
    fixed_config = apply_overrides(loaded, fixes)
    fixed = check(fixed_config, options)
    atomic_write_bytes(paths.fixed_config, _fixed_yaml(fixed_config, fixes, config), overwrite=overwrite)
    return DoctorOut(
        written=written,
        fixes=fixes,
        fixed=fixed,
        overrides=overrides,
        command=command("bridgepack", "doctor", paths.config, *overrides, "--world-size", "1", "--fix"),
        fixed_command=command("bridgepack", "doctor", paths.fixed_config, "--world-size", "1"),
    )


# ------------------------------------------------------------------------------------------------- train


def planned_steps(sizes: DemoSizes, num_packs: int) -> int:
    """Optimizer steps of a run: ``sizes.steps``, or one epoch of whole global batches."""
    return sizes.steps if sizes.steps is not None else num_packs // sizes.gbs


def train_config(
    paths: DemoPaths, sizes: DemoSizes, vocab: int, mode: DataMode, *, overwrite: bool
) -> TrainConfig:
    return TrainConfig(
        data=paths.train_packed,
        mode=mode,
        model=ModelDims(
            hidden=sizes.hidden, layers=sizes.layers, heads=sizes.heads, ffn=sizes.ffn, vocab=vocab
        ),
        lr=sizes.lr,
        steps=sizes.steps,
        epochs=None if sizes.steps is not None else 1,
        gbs=sizes.gbs,
        mbs=1,
        seed=sizes.seed,
        log=paths.log(mode.value),
        overwrite=overwrite,
        pack_size=sizes.pack_size,
        pad_multiple=1,
        quiet=True,
    )


def train_command(config: TrainConfig) -> str:
    data_flag = "--data" if config.mode is DataMode.packed else "--padded-from"
    run = "--steps" if config.steps is not None else "--epochs"
    count = config.steps if config.steps is not None else config.epochs
    dims = config.model
    return command(
        "bridgepack", "train", data_flag, config.data, "--vocab", str(dims.vocab),
        "--hidden", str(dims.hidden), "--layers", str(dims.layers), "--heads", str(dims.heads),
        "--ffn", str(dims.ffn), "--lr", str(config.lr), "--gbs", str(config.gbs), run, str(count),
        "--log", os.fspath(config.log or ""),
    )  # fmt: skip


def run_training(
    paths: DemoPaths,
    sizes: DemoSizes,
    vocab: int,
    mode: DataMode,
    *,
    overwrite: bool,
    on_step: Callable[[StepRecord], None] | None = None,
) -> tuple[TrainResult, str]:
    config = train_config(paths, sizes, vocab, mode, overwrite=overwrite)
    paths.log(mode.value).parent.mkdir(parents=True, exist_ok=True)
    return train(config, on_step=on_step), train_command(config)


def loss_fell(result: TrainResult) -> bool:
    """The run learned something: its last loss is below its first."""
    return len(result.losses) >= 2 and result.losses[-1] < result.losses[0]


# ------------------------------------------------------------------------------------------------ curves


@dataclass(frozen=True)
class CurvesOut:
    runs: list[Curves]
    comparison: Comparison
    png: bytes
    command: str

    @property
    def passed(self) -> bool:
        return self.comparison.passed


def compare(paths: DemoPaths, *, overwrite: bool) -> CurvesOut:
    """Packed (reference) vs padded loss curves from the two Megatron-LM logs, plotted with the difference."""
    from bridgepack.curves import render_png

    runs = [read_curves(paths.log(DataMode.packed.value)), read_curves(paths.log(DataMode.padded.value))]
    (comparison,) = compare_curves(runs[0], runs[1:], CURVES_PROFILE, metrics=[LOSS])
    png = render_png(runs, LOSS, [comparison])
    atomic_write_bytes(paths.curves_png, png, overwrite=overwrite)
    cli = command(
        "bridgepack", "curves", "compare", paths.log("packed"), paths.log("padded"),
        "--tolerance", CURVES_PROFILE.name, "--ulps", str(CURVES_PROFILE.ulps), "--plot", paths.curves_png,
    )  # fmt: skip
    return CurvesOut(runs, comparison, png, cli)


def comparison_numbers(comparison: Comparison) -> dict[str, Any]:
    """The few numbers of a comparison the summary shows (from :meth:`Comparison.summary`)."""
    s = comparison.summary()
    max_abs: Any = s["max_abs_diff"]
    max_rel: Any = s["max_rel_diff"]
    return {
        "profile": f"{comparison.profile.name} ({comparison.profile.ulps} ulp)",
        "rule": comparison.rule,
        "shared_steps": s["shared_steps"],
        "failing_steps": s["failing_steps"],
        "max_abs_diff": None if max_abs is None else max_abs["value"],
        "max_rel_diff": None if max_rel is None else max_rel["value"],
        "passed": comparison.passed,
        "reasons": comparison.reasons,
    }
