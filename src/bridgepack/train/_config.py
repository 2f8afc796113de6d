"""What a training run is asked to do (:class:`TrainConfig`) and what it reports back (:class:`TrainResult`).

The demo and tests call :func:`bridgepack.train.train` with a :class:`TrainConfig`; the CLI builds the same
object from its flags, so both paths run one code path.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from bridgepack.errors import UsageError
from bridgepack.packing import ModelDims

#: The model ``bridgepack train`` builds without size flags: 64 hidden, 2 layers, 4 heads, 128 ffn, 256 vocab.
TINY_DIMS = ModelDims(hidden=64, layers=2, heads=4, ffn=128, vocab=256)


class DataMode(str, enum.Enum):
    """How the samples of a packed file reach the model.

    * ``packed``: one row per pack (Bridge's THD layout, positions restarting per sequence);
    * ``padded``: the very same sequences, one per row, right-padded to a fixed length.
    """

    packed = "packed"
    padded = "padded"


@dataclass(frozen=True)
class TrainConfig:
    """One reference run: data, model sizes (a :class:`~bridgepack.packing.ModelDims`), optimizer and logging.

    Steps are global batches of ``gbs`` *packs* in both modes (see :mod:`bridgepack.train._steps`), so a
    packed and a padded run of the same file see the same samples in the same optimizer steps.
    """

    data: Path
    mode: DataMode = DataMode.packed
    #: The Llama-style model to train (its ``vocab`` must exceed every token id of the data).
    model: ModelDims = TINY_DIMS
    lr: float = 1e-3
    steps: int | None = None
    epochs: int | None = None
    gbs: int = 4
    mbs: int = 1
    seed: int = 1234
    log_interval: int = 1
    log: Path | None = None
    tensorboard: Path | None = None
    overwrite: bool = False
    #: Runtime tokens per pack the data must have been packed for (``None``: take it from the metadata).
    pack_size: int | None = None
    #: ``pad_seq_to_mult`` the data must have been packed with (``None``: do not check).
    pad_multiple: int | None = None
    #: Padded mode: row length (``None``: the pack size).
    pad_to: int | None = None
    #: Width multiple of packed rows, Bridge's ``pad_seq_length_to_mult`` (bridge-format §5; 16 by default
    #: there).
    width_multiple: int = 16
    weight_decay: float = 0.01
    clip_grad: float = 1.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.95
    adam_eps: float = 1e-8
    device: str = "cpu"
    dtype: str = "float32"
    #: Memory the run may use, in bytes (``None``: what the machine reports available).
    memory_limit: int | None = None
    quiet: bool = False

    def __post_init__(self) -> None:
        # Callers (the demo, notebooks) may pass plain strings; the run works with paths.
        for name in ("data", "log", "tensorboard"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))
        object.__setattr__(self, "mode", DataMode(self.mode))
        if not self.model.gated or self.model.groups != self.model.heads:
            raise UsageError(
                "the reference trainer builds multi-head SwiGLU models: give ModelDims without "
                "query_groups and with gated=True"
            )


@dataclass(frozen=True)
class StepRecord:
    """One optimizer step as every rank agrees on it (loss is the global per-token mean, bridge-format §9)."""

    iteration: int
    total_iterations: int
    loss: float
    grad_norm: float
    learning_rate: float
    rows: int
    consumed_samples: int
    loss_tokens: int
    positions: int
    real_tokens: int
    seconds: float


@dataclass(frozen=True)
class TrainResult:
    """What a run did: per-step losses, throughput and how much of the compute went to padding.

    ``positions`` counts every token slot fed through the model (rows x width, all ranks); ``real_tokens``
    the slots holding a sequence's own tokens. ``padding_fraction = 1 - real_tokens / positions``.
    """

    mode: DataMode
    world_size: int
    steps_planned: int
    steps_done: int
    interrupted: bool
    losses: list[float]
    final_loss: float
    positions: int
    real_tokens: int
    loss_tokens: int
    seconds: float
    tokens_per_s: float
    real_tokens_per_s: float
    padding_fraction: float
    parameters: int
    log_path: Path | None
    tensorboard_dir: Path | None
    records: list[StepRecord] = field(default_factory=list, repr=False)
    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    def to_dict(self) -> dict[str, Any]:
        """The run's summary (no per-step records): the ``bridgepack train --format json`` document."""
        return {
            "schema_version": self.SCHEMA_VERSION,
            "mode": self.mode.value,
            "processes": self.world_size,
            "steps": self.steps_done,
            "steps_planned": self.steps_planned,
            "interrupted": self.interrupted,
            "parameters": self.parameters,
            "final_loss": self.final_loss,
            "losses": self.losses,
            "positions": self.positions,
            "real_tokens": self.real_tokens,
            "loss_tokens": self.loss_tokens,
            "seconds": self.seconds,
            "tokens_per_s": self.tokens_per_s,
            "real_tokens_per_s": self.real_tokens_per_s,
            "padding_fraction": self.padding_fraction,
            "log": str(self.log_path) if self.log_path is not None else None,
            "tensorboard": str(self.tensorboard_dir) if self.tensorboard_dir is not None else None,
        }
