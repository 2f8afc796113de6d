"""Every reader of bridgepack as a fuzz target: bytes in, and either a result or one kind of failure out.

The contract (``docs/failure-behaviour.md``): for any input, a reader returns, or raises a
:class:`~bridgepack.errors.BridgepackError` whose message is one line and names the input. Any other exception
is a bug in the reader. Hangs and memory blow-ups are caught by the runner (atheris ``-timeout`` and
``-rss_limit_mb``; the hypothesis tests by bounded input sizes and the readers' stated limits).

The same targets drive the hypothesis tests (``tests/hardening/test_fuzz_readers.py``, bounded) and the
coverage-guided atheris harnesses (``fuzz/run.py``, a separate command), so both check one contract.
"""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa

from _support.sample_files import WRITERS, parquet_bytes
from bridgepack.data.samples import INPUT_FORMATS, InputFormat
from bridgepack.errors import BridgepackError


class ContractBroken(AssertionError):
    """A reader failed in a way the contract does not allow (message not one line, or not naming the file)."""


@dataclass(frozen=True)
class Target:
    """One reader: ``read(path)`` on a file named ``in<suffix>`` holding the fuzzed bytes."""

    name: str
    suffix: str
    read: Callable[[Path], object]
    seeds: tuple[bytes, ...]
    #: Every error message must contain one of these (``{path}`` is replaced by the file's path).
    names: tuple[str, ...] = ("{path}",)
    filename: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def path_in(self, directory: Path) -> Path:
        return directory / (self.filename or f"in{self.suffix}")


def check(target: Target, data: bytes, directory: Path) -> None:
    """Run ``target`` on ``data``; raise :class:`ContractBroken` (or the reader's own exception) on a bug."""
    path = target.path_in(directory)
    path.write_bytes(data)
    try:
        target.read(path)
    except BridgepackError as exc:
        message = str(exc)
        if "\n" in message or "\r" in message:
            raise ContractBroken(f"{target.name}: message is not one line: {message!r}") from exc
        expected = [name.format(path=os.fspath(path)) for name in target.names]
        if not any(name in message for name in expected):
            raise ContractBroken(f"{target.name}: message does not name {expected}: {message!r}") from exc


# ------------------------------------------------------------------------------------------------ readers


def _samples(path: Path) -> None:
    from bridgepack.data.samples import ChunkToExamples, convert_all, iter_chunks

    for _ in convert_all(iter_chunks([path], chunk_rows=4), ChunkToExamples((os.fspath(path),)), workers=1):
        pass


def _packed(path: Path) -> None:
    from bridgepack.data.packed import PackedReader, collect_stats

    reader = PackedReader(path, validate=True)
    try:
        for _ in reader.iter_blocks():
            pass
        reader.row(0)
        reader.row(-1)
        collect_stats(reader.iter_blocks(), pack_size=16)
    finally:
        reader.close()


def _legacy_npy(path: Path) -> None:
    from bridgepack.data.packed import read_legacy_npy, validate_block

    validate_block(read_legacy_npy(path), allow_empty_sequences=False)


def _metadata(path: Path) -> None:
    from bridgepack.data.packset import combine_metadata, read_metadata

    entries = read_metadata(path)
    if entries:
        combine_metadata(entries)


def _bridge_yaml(path: Path) -> None:
    from bridgepack.doctor import load_config

    load_config(path)


def _model_config(path: Path) -> None:
    from bridgepack.translate import load_model_args, mlm_to_bridge

    mlm_to_bridge(load_model_args(path))


def _mlm_args(path: Path) -> None:
    from bridgepack.translate import mlm_to_bridge, split_mlm_args

    mlm_to_bridge(split_mlm_args(_text(path)))


def _overrides(path: Path) -> None:
    from bridgepack.doctor import load_config

    load_config(None, overrides=[line for line in _text(path).splitlines() if line])


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def _curves(fmt: str | None) -> Callable[[Path], object]:
    def read(path: Path) -> object:
        from bridgepack.curves import read_curves

        return read_curves(path, fmt)

    return read


# ---------------------------------------------------------------------------------------------- seeds


def _npy_bytes(rows: object) -> bytes:
    sink = io.BytesIO()
    np.save(sink, np.asarray(rows, dtype=object), allow_pickle=True)
    return sink.getvalue()


_SAMPLE_ROWS = [
    {"input_ids": [5, 6, 2], "loss_mask": [0, 1, 1]},
    {"input_ids": [7, 8, 9, 2], "loss_mask": [1, 1, 1, 1]},
    {"input_ids": [4, 2]},
]
_PACKS = {
    "input_ids": [[10, 11, 12, 2, 20, 21, 2], [30, 2]],
    "loss_mask": [[1, 1, 1, 0, 1, 1, 0], [1, 0]],
    "seq_start_id": [[0, 4], [0]],
}
_METADATA = [
    {
        "dataset_max_seqlen": 6,
        "max_samples_per_bin": 3,
        "packing_factor": 2.0,
        "packing_efficiency": 73.33,
        "pack_size": 10,
        "min_packed_seqlen": 5,
        "bridgepack": {"split": "training"},
    }
]
_BRIDGE_YAML = b"""\
model:
  _target_: megatron.bridge.models.llama.Llama3ModelProvider
  seq_length: 4096
  context_parallel_size: 2
  calculate_per_token_loss: true
train:
  micro_batch_size: 1
  global_batch_size: 32
dataset:
  _target_: megatron.bridge.training.config.FinetuningDatasetConfig
  seq_length: 4096
  enable_offline_packing: true
  offline_packing_specs:
    packed_sequence_size: 4096
    pad_seq_to_mult: 4
"""
_MODEL_CONFIG = b"""\
ENV_VARS:
  CUDA_DEVICE_MAX_CONNECTIONS: 1
MODEL_ARGS:
  --num-layers: 12
  --hidden-size: 512
  --seq-length: 1024
  --bf16: true
  --swiglu: true
  --lr: 1.0e-4
  --use-mcore-models: true
"""
#: Training-log lines of every format ``curves`` reads (Megatron-LM, Bridge's step time, NeMo): the curves
#: reader's seed here, and what scripts/test's kernel warm-up reads (``warm_bridgepack.SUITE_WARM_UP``).
LOG_SEED = (
    b" [2025-04-13 23:41:12] iteration       10/     100 | consumed samples: 320 | elapsed time per"
    b" iteration (ms): 812.3 | learning rate: 1.000000E-04 | global batch size:    32 | lm loss:"
    b" 9.876543E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 |"
    b" number of nan iterations:   0 |\n"
    b"Step Time : 4.65s GPU utilization: 59892.5TFLOP/s/GPU\n"
    b" iteration       20/     100 | lm loss: 9.5E+00 |\n"
    b" validation loss at iteration 20 on validation set | lm loss value: 9.4E+00 | lm loss PPL: 1.2E+04 |\n"
    b"Training epoch 0, iteration 3/19 | reduced_train_loss: 10.84 |\n"
)
_GOLDEN = orjson.dumps(
    {
        "lm loss": {"start_step": 1, "end_step": 3, "step_interval": 1, "values": {"1": 10.9, "2": "nan"}},
        "num-zeros": {"start_step": 1, "end_step": 3, "step_interval": 1, "values": [1.0, 2.0]},
    }
)


def sample_target_name(fmt: InputFormat) -> str:
    """``samples-jsonl``, ``samples-parquet``, ``samples-arrow``: a file format's target, by its suffix."""
    return f"samples-{fmt.suffixes[0].lstrip('.')}"


def _sample_targets() -> tuple[Target, ...]:
    """One target per file format of the input-format table, seeded by its writer in
    :data:`_support.sample_files.WRITERS`: a format added there is fuzzed here (one with no writer is a
    KeyError, not a format left out)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return tuple(
            Target(
                sample_target_name(fmt),
                fmt.suffixes[0],
                _samples,
                tuple(
                    WRITERS[fmt.name][0](pa.Table.from_pylist(rows), Path(tmp, f"seed{k}")).read_bytes()
                    for k, rows in enumerate((_SAMPLE_ROWS, [{"input_ids": [5, 2]}]))
                ),
            )
            for fmt in INPUT_FORMATS
            if fmt.suffixes
        )


def _targets() -> tuple[Target, ...]:
    return (
        *_sample_targets(),
        Target("packed-parquet", ".parquet", _packed, (parquet_bytes(pa.table(_PACKS)),)),
        Target(
            "legacy-npy",
            ".npy",
            _legacy_npy,
            (_npy_bytes([dict(zip(_PACKS, r, strict=True)) for r in zip(*_PACKS.values(), strict=True)]),),
        ),
        Target("metadata", ".jsonl", _metadata, (orjson.dumps(_METADATA),), filename="10_metadata.jsonl"),
        Target("bridge-yaml", ".yaml", _bridge_yaml, (_BRIDGE_YAML, b"dataset: {seq_length: 8}\n")),
        Target("model-config", ".yaml", _model_config, (_MODEL_CONFIG,)),
        Target(
            "mlm-args",
            ".txt",
            _mlm_args,
            (b"--seq-length 4096 --swiglu --lr=1e-4 --use-mcore-models",),
            names=("Megatron-LM", "mlm_args"),
        ),
        Target(
            "overrides",
            ".txt",
            _overrides,
            (b"model.context_parallel_size=2\n+train.micro_batch_size=1\n~dataset.seq_length\n",),
            names=("override", "config:"),
        ),
        Target("curves-log", ".log", _curves(None), (LOG_SEED,)),
        Target("curves-golden", ".json", _curves("golden"), (_GOLDEN,)),
        Target("curves-csv", ".csv", _curves(None), (b"step,lm loss,run\n1,9.5,a\n2,9.25,a\n3,,a\n",)),
        Target(
            "curves-jsonl",
            ".jsonl",
            _curves(None),
            (b'{"_step": 1, "lm loss": 9.5}\n{"_step": 2, "lm loss": "nan", "x": null}\n',),
        ),
        Target(
            "curves-tensorboard",
            "",
            _curves("tensorboard"),
            (_tensorboard_seed(),),
            filename="events.out.tfevents.1.fuzz",
        ),
    )


def _tensorboard_seed() -> bytes:
    """A real event file with two scalars (TFRecord framing, CRCs), written with tensorboard's writer."""
    import tempfile

    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError:  # pragma: no cover - optional extra
        return b""
    with tempfile.TemporaryDirectory() as tmp:
        writer = EventFileWriter(tmp)
        for step, value in ((1, 9.5), (2, 9.25)):
            scalar = summary_pb2.Summary.Value(tag="lm loss", simple_value=value)
            summary = summary_pb2.Summary(value=[scalar])
            writer.add_event(event_pb2.Event(step=step, wall_time=1.0, summary=summary))
        writer.close()
        [name] = os.listdir(tmp)
        return Path(tmp, name).read_bytes()


_CACHE: dict[str, tuple[Target, ...]] = {}


def targets() -> tuple[Target, ...]:
    """All targets (seeds are built once per process)."""
    if "all" not in _CACHE:
        _CACHE["all"] = _targets()
    return _CACHE["all"]


def target(name: str) -> Target:
    for item in targets():
        if item.name == name:
            return item
    raise KeyError(name)


def pickle_of(obj: object) -> bytes:
    """A protocol-2 pickle (what numpy's object-array ``.npy`` holds) of ``obj``."""
    return pickle.dumps(obj, protocol=2)
