"""The ``config`` part of ``bridgepack verify --bridge``: doctor's rules against Bridge's ``ConfigContainer``.

Each :class:`RuleCase` names one doctor rule that mirrors a check Bridge makes while building or validating a
config (bridge-format §8), and gives two small configs as overrides on a valid base: one that breaks the rule
and its passing twin. Each config is written once; doctor reads it through its own loader, and the very same
merged mapping (``LoadedConfig.raw``) is built into Bridge's own classes (``GPTModelProvider``,
``TrainingConfig``, ``GPTSFTDatasetConfig`` with ``PackedSequenceSpecs``, ...) and validated by
:mod:`bridgepack.verify._bridge_config_child` in a separate interpreter. The verdicts are then compared::

    SP011 bad  (CP 2, seq 510)  doctor: SP011 error  Bridge: AssertionError "...2 * context parallel..."
    SP011 good (CP 2, seq 512)  doctor: silent       Bridge: accepted                 -> case agrees

A case where only one side objects is a disagreement (``doctor-only`` / ``bridge-only``) and fails the part;
a config this Bridge cannot express (no such field or class) is reported per case as ``unbuilt``, never
counted as agreement.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridgepack.doctor import DoctorOptions, check, load_config
from bridgepack.findings import ERROR
from bridgepack.verify._bridge_peer import unpack_wheel

#: The child script, run by path so it imports nothing from bridgepack.
CHILD = Path(__file__).with_name("_bridge_config_child.py")
#: Seconds the child may take (imports of torch + Megatron-Core + Bridge dominate: ~7 s on 2 cores).
CHILD_TIMEOUT_S = 300

SPECS = "dataset.offline_packing_specs"
#: Model, training and tokenizer settings every case starts from: a tiny GPT, valid for world size 8.
COMMON = (
    "model.num_layers=2",
    "model.hidden_size=64",
    "model.num_attention_heads=4",
    "model.vocab_size=128",
    "model.seq_length=512",
    "model.calculate_per_token_loss=true",
    "train.micro_batch_size=1",
    "train.global_batch_size=64",
    "train.train_iters=10",
    "optimizer.lr=0.0001",
    "tokenizer.tokenizer_type=NullTokenizer",
    "tokenizer.vocab_size=128",
    "dataset.seq_length=512",
)
#: SFT from local files with offline packing (Bridge >= 0.6 names, bridge-format §1).
OFFLINE = (
    *COMMON,
    "dataset.dataset_root=/data/sft",
    "dataset.enable_offline_packing=true",
    f"{SPECS}.packed_sequence_size=512",
)
#: SFT from a Hugging Face source with in-batch packing (needs micro batches of several sequences).
IN_BATCH = (
    *(o for o in COMMON if not o.startswith("train.micro_batch_size")),
    "train.micro_batch_size=2",
    "dataset.source.dataset_name=gsm8k",
    "dataset.enable_in_batch_packing=true",
)
CP2 = "model.context_parallel_size=2"
TE_GRAPHS = "model.cuda_graph_impl=transformer_engine"
FIXED_WIDTH = "dataset.dataset_kwargs.pad_to_max_length=true"
PAD_CU = f"{SPECS}.pad_cu_seqlens=true"
WORLD_SIZE = 8


@dataclass(frozen=True)
class RuleCase:
    """One doctor rule and two configs on ``base``: ``bad`` breaks the rule, ``good`` is its passing twin."""

    rule: str
    bad: tuple[str, ...]
    good: tuple[str, ...] = ()
    base: tuple[str, ...] = OFFLINE
    world_size: tuple[int, int] = (WORLD_SIZE, WORLD_SIZE)

    def configs(self) -> dict[str, tuple[tuple[str, ...], int]]:
        """``{"SPxxx:bad": (overrides, world size), "SPxxx:good": ...}``."""
        return {
            f"{self.rule}:bad": ((*self.base, *self.bad), self.world_size[0]),
            f"{self.rule}:good": ((*self.base, *self.good), self.world_size[1]),
        }


#: The rules whose conditions Bridge checks when it builds or validates a config (bridge-format §8).
CASES: tuple[RuleCase, ...] = (
    RuleCase(
        "SP001", ("dataset.enable_offline_packing=true", f"{SPECS}.packed_sequence_size=512"), base=IN_BATCH
    ),
    RuleCase("SP002", (f"{SPECS}=null",)),
    RuleCase("SP003", ("dataset.enable_offline_packing=false",)),
    RuleCase("SP004", (f"{SPECS}.packed_sequence_size=-1",)),
    RuleCase("SP005", ("train.micro_batch_size=2",)),
    RuleCase("SP006", ("train.micro_batch_size=1",), base=IN_BATCH),
    RuleCase("SP007", (PAD_CU,), (PAD_CU, FIXED_WIDTH)),
    RuleCase(
        "SP008",
        (TE_GRAPHS, "model.cuda_graph_scope=[mlp]"),
        (TE_GRAPHS, "model.cuda_graph_scope=[mlp]", FIXED_WIDTH),
    ),
    RuleCase("SP009", (TE_GRAPHS, FIXED_WIDTH), (TE_GRAPHS, FIXED_WIDTH, PAD_CU)),
    RuleCase(
        "SP011",
        (CP2, "model.seq_length=510", "dataset.seq_length=510", f"{SPECS}.packed_sequence_size=510"),
        (CP2,),
    ),
    RuleCase("SP012", (CP2, "model.calculate_per_token_loss=false"), (CP2,)),
    RuleCase("SP013", (CP2, "ddp.average_in_collective=true"), (CP2,)),
    RuleCase("SP015", ("dataset.seq_length=1024",)),
    RuleCase("SP017", ("train.global_batch_size=12",)),
    RuleCase(
        "SP018",
        ("model.tensor_model_parallel_size=4",),
        ("model.tensor_model_parallel_size=4",),
        world_size=(6, 8),
    ),
    RuleCase("SP021", (f"{SPECS}.pad_seq_to_mult=0",)),
    RuleCase(
        "SP023", (f"{SPECS}.max_single_sequence_length=1024",), (f"{SPECS}.max_single_sequence_length=512",)
    ),
    # Bridge checks that the pretrained checkpoint exists: "/" exists on every machine
    RuleCase("SP031", ("peft=lora",), ("peft=lora", "checkpoint.pretrained_checkpoint=/")),
    RuleCase("SP024", (CP2, "model.seq_length=510", "dataset.seq_length=510"), (CP2,), base=IN_BATCH),
)


@dataclass(frozen=True)
class BridgeConfigSource:
    """Where the child imports Bridge from: the installed package (``bridge_root`` None) or an unpacked wheel
    (``bridge_root``), with ``paths`` put first on its ``sys.path`` (e.g. an unpacked Megatron-Core)."""

    origin: str
    bridge_root: Path | None = None
    paths: tuple[Path, ...] = ()


def _raw(overrides: Sequence[str]) -> tuple[dict[str, Any], str]:
    loaded = load_config(overrides=overrides)
    return loaded.raw, loaded.view.dataset.kind


def doctor_verdicts(cases: Sequence[RuleCase]) -> dict[str, bool]:
    """Whether each case's rule fires, at error severity, on each of its configs."""
    verdicts = {}
    for case in cases:
        for key, (overrides, world_size) in case.configs().items():
            report = check(load_config(overrides=overrides), DoctorOptions(world_size=world_size))
            verdicts[key] = any(f.id == case.rule and f.severity == ERROR for f in report.findings)
    return verdicts


def bridge_verdicts(cases: Sequence[RuleCase], source: BridgeConfigSource, work: Path) -> dict[str, Any]:
    """Build and validate every config with Bridge's own classes, in a child interpreter."""
    configs = []
    for case in cases:
        for key, (overrides, world_size) in case.configs().items():
            raw, kind = _raw(overrides)
            raw.setdefault("dataset", {})["kind"] = kind
            configs.append({"key": key, "world_size": world_size, "raw": raw})
    request = work / "bridge-config-request.json"
    result = work / "bridge-config-result.json"
    request.write_text(
        json.dumps(
            {
                "bridge_root": None if source.bridge_root is None else os.fspath(source.bridge_root),
                "paths": [os.fspath(p) for p in source.paths],
                "configs": configs,
            }
        )
    )
    result.unlink(missing_ok=True)
    proc = subprocess.run(
        [sys.executable, os.fspath(CHILD), os.fspath(request), os.fspath(result)],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0 or not result.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"Bridge's config classes did not load ({source.origin}): {' | '.join(tail)}")
    report: dict[str, Any] = json.loads(result.read_text())
    return report


def compare(
    cases: Sequence[RuleCase], doctor: Mapping[str, bool], bridge: Mapping[str, Any]
) -> dict[str, Any]:
    """Case by case: ``agree``, ``doctor-only`` / ``bridge-only`` (on which config), or ``unbuilt``."""
    rows = []
    for case in cases:
        row: dict[str, Any] = {"rule": case.rule, "configs": {}}
        verdicts: list[str] = []
        for key in case.configs():
            outcome = bridge[key]
            variant = key.split(":", 1)[1]
            row["configs"][variant] = {
                "doctor": "error" if doctor[key] else "silent",
                "bridge": outcome["outcome"],
                "bridge_stage": outcome["stage"],
                "bridge_error": outcome["error"],
            }
            if outcome["outcome"] in ("unbuilt", "error"):
                verdicts.append("unbuilt")
            elif doctor[key] != (outcome["outcome"] == "rejected"):
                verdicts.append("doctor-only" if doctor[key] else "bridge-only")
        # a disagreement on one config is reported even when the other could not be built
        row["verdict"] = next((v for v in verdicts if v != "unbuilt"), verdicts[0] if verdicts else "agree")
        rows.append(row)
    counts = {
        v: sum(r["verdict"] == v for r in rows) for v in ("agree", "doctor-only", "bridge-only", "unbuilt")
    }
    return {"cases": rows, "counts": counts}


def config_status(comparison: Mapping[str, Any]) -> tuple[str, str]:
    """``failed`` on any disagreement, ``skipped`` when no case could be built, else ``passed``."""
    counts = comparison["counts"]
    if counts["doctor-only"] or counts["bridge-only"]:
        return "failed", ""
    if not counts["agree"]:
        return "skipped", "Bridge could not build any rule case (see details)"
    return "passed", ""


#: A file of every Megatron-Core wheel with ``megatron.training`` (>= 0.17), which Bridge's config imports.
MCORE_TRAINING_CONFIG = "megatron/training/config/__init__.py"
#: A file every megatron-bridge wheel holds.
BRIDGE_CONFIG = "megatron/bridge/training/config.py"


def _installed_mcore_training() -> str | None:
    """The installed Megatron-Core's version when it ships ``megatron.training`` (0.17+), else None."""
    try:
        if importlib.util.find_spec("megatron.training") is None:
            return None
        return importlib.metadata.version("megatron-core")
    except (ImportError, ValueError, importlib.metadata.PackageNotFoundError):
        return None


def config_source(
    bridge_wheel: str | None, mcore_wheel: str | None, work: Path, importable: bool, why: str
) -> tuple[BridgeConfigSource | None, str]:
    """Which Bridge the config part validates with, or why it cannot run here.

    The ``--bridge-wheel`` when given (as for the packing part), with a Megatron-Core that has
    ``megatron.training`` (``--megatron-core-wheel``, or the installed one when recent enough); else the
    installed Bridge when it imports.
    """
    if bridge_wheel is None:
        return (BridgeConfigSource("installed megatron-bridge"), "") if importable else (None, why)
    paths: tuple[Path, ...] = ()
    if mcore_wheel is not None:
        root = work / "megatron-core"
        version = unpack_wheel(Path(mcore_wheel), root, MCORE_TRAINING_CONFIG)
        paths, mcore = (root,), f"megatron-core {version} from wheel {mcore_wheel}"
    elif (installed := _installed_mcore_training()) is not None:
        mcore = f"installed megatron-core {installed}"
    else:
        return None, (
            "Bridge's config classes need megatron.training (megatron-core >= 0.17), which the installed "
            "megatron-core lacks; pass --megatron-core-wheel PATH (megatron-core 0.19.2 for Bridge 0.6.2)"
        )
    root = work / "bridge-full"
    version = unpack_wheel(Path(bridge_wheel), root, BRIDGE_CONFIG)
    origin = f"megatron-bridge {version} from wheel {bridge_wheel}, {mcore}"
    return BridgeConfigSource(origin, root, paths), ""


def run_config_part(
    source: BridgeConfigSource, work: Path, cases: Sequence[RuleCase] = CASES
) -> tuple[str, str, dict[str, Any]]:
    """Status, reason and details of the config part: doctor's verdicts vs Bridge's, case by case."""
    try:
        bridge = bridge_verdicts(cases, source, work)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        return "skipped", str(exc), {"origin": source.origin}
    comparison = compare(cases, doctor_verdicts(cases), bridge["results"])
    status, reason = config_status(comparison)
    details = {key: value for key, value in bridge.items() if key != "results"}
    details["origin"] = source.origin
    details.update(comparison)
    return status, reason, details
