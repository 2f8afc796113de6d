"""A typed view of the part of Bridge's ``ConfigContainer`` that the packing and long-context rules read.

Every field carries Bridge 0.6.2's default (checked against the wheel's ``training/config.py``,
``data/packing/config.py``, ``data/builders/gpt_sft.py``, ``models/gpt_provider.py``
and the Megatron-Core 0.16
dataclasses they extend), so a partial override file reads exactly as Bridge would fill it in. Fields Bridge
requires without a default (``train.micro_batch_size``, ``dataset.seq_length``...) are ``None`` when unset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

#: How bridgepack classifies the dataset config, from its ``_target_`` or the fields it sets:
#: ``sft`` (GPTSFTDatasetConfig/FinetuningDatasetConfig),
#: ``sft_in_batch`` (the direct-HF, Energon and mock-VLM
#: SFT configs, which Bridge validates for in-batch packing), ``pretrain`` (GPTDatasetConfig), ``unknown``.
DatasetKind = Literal["sft", "sft_in_batch", "pretrain", "unknown"]


@dataclass
class TrainView:
    micro_batch_size: int | None = None
    global_batch_size: int | None = None
    train_iters: int | None = None
    train_samples: int | None = None


@dataclass
class ModelView:
    target: str | None = None
    seq_length: int = 1024  # GPTModelProvider.seq_length
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    context_parallel_size: int = 1
    expert_model_parallel_size: int = 1
    sequence_parallel: bool = False
    calculate_per_token_loss: bool = False
    mtp_num_layers: int | None = None
    cuda_graph_impl: str = "none"
    cuda_graph_scope: Any = "full"
    cuda_graph_modules: Any = None
    hf_model_id: str | None = None


@dataclass
class PackedSpecsView:
    """``PackedSequenceSpecs`` (bridge-format §4)."""

    packed_sequence_size: int = -1
    max_single_sequence_length: int | None = None
    tokenizer_model_name: str | None = None
    num_tokenizer_workers: int = -1
    packed_train_data_path: str | None = None
    packed_val_data_path: str | None = None
    packed_metadata_path: str | None = None
    pad_cu_seqlens: bool = False
    pad_seq_to_mult: int | None = 1


@dataclass
class DatasetView:
    target: str | None = None
    seq_length: int | None = None
    dataset_root: str | None = None
    seed: int = 1234
    enable_offline_packing: bool = False
    offline_packing_specs: PackedSpecsView | None = None
    enable_in_batch_packing: bool = False
    defer_in_batch_packing_to_step: bool = False
    in_batch_packing_pad_to_multiple_of: int = 1
    packing_buffer_size: int | None = None
    pad_to_max_length: bool = False
    dataset_kwargs: dict[str, Any] = field(default_factory=dict)
    kind: DatasetKind = "unknown"

    @property
    def fixed_width(self) -> bool:
        """Whether packed rows are padded to ``packed_sequence_size`` (Bridge reads either place, §4)."""
        return self.pad_to_max_length is True or self.dataset_kwargs.get("pad_to_max_length", False) is True


@dataclass
class DDPView:
    average_in_collective: bool = False
    use_distributed_optimizer: bool = False


@dataclass
class SchedulerView:
    lr_decay_style: str = "linear"
    lr_warmup_iters: int = 0
    lr_warmup_fraction: float | None = None


@dataclass
class OptimizerView:
    lr: float | None = None
    min_lr: float | None = None
    weight_decay: float = 0.01
    adam_beta2: float = 0.999


@dataclass
class CheckpointView:
    pretrained_checkpoint: str | None = None
    save: str | None = None
    load: str | None = None


@dataclass
class TokenizerView:
    tokenizer_type: str | None = None
    tokenizer_model: str | None = None


@dataclass
class ConfigView:
    """The checked subset of a training config, plus where it came from."""

    train: TrainView = field(default_factory=TrainView)
    model: ModelView = field(default_factory=ModelView)
    dataset: DatasetView = field(default_factory=DatasetView)
    ddp: DDPView = field(default_factory=DDPView)
    scheduler: SchedulerView = field(default_factory=SchedulerView)
    optimizer: OptimizerView = field(default_factory=OptimizerView)
    checkpoint: CheckpointView = field(default_factory=CheckpointView)
    tokenizer: TokenizerView = field(default_factory=TokenizerView)
    mixed_precision: str | None = None
    peft: bool = False
    #: ``"v0.6"``, ``"<=v0.5"``, ``"mixed"`` (names of both eras) or ``"neutral"`` (no era-specific name).
    era: str = "neutral"

    @property
    def offline_specs(self) -> PackedSpecsView:
        """The packing specs, or the defaults when none are set (rules check the switch)."""
        return self.dataset.offline_packing_specs or PackedSpecsView()

    @property
    def packing(self) -> bool:
        """Any packing on: offline, in-batch, deferred to the step, or Energon native packing."""
        d = self.dataset
        return (
            d.enable_offline_packing
            or d.offline_packing_specs is not None
            or d.enable_in_batch_packing
            or d.defer_in_batch_packing_to_step
            or d.packing_buffer_size is not None
        )

    @property
    def model_parallel_size(self) -> int:
        m = self.model
        return m.tensor_model_parallel_size * m.pipeline_model_parallel_size * m.context_parallel_size


#: section name in the YAML -> the view class that reads it.
SECTION_CLASSES: dict[str, type] = {
    "train": TrainView,
    "model": ModelView,
    "dataset": DatasetView,
    "ddp": DDPView,
    "scheduler": SchedulerView,
    "optimizer": OptimizerView,
    "checkpoint": CheckpointView,
    "tokenizer": TokenizerView,
}
