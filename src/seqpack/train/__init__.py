"""Reference training: a tiny Llama-style model on packed data or the same samples padded, per-token loss.

>>> from seqpack.train import TrainConfig, DataMode, train            # doctest: +SKIP
>>> result = train(TrainConfig(data=Path("out/training_512.idx.parquet"), steps=20))
>>> result.final_loss, result.real_tokens_per_s, result.padding_fraction
"""

from seqpack.train._config import DataMode, StepRecord, TrainConfig, TrainResult
from seqpack.train._data import data_vocab
from seqpack.train._log import format_log_line
from seqpack.train._loop import train
from seqpack.train._model import MemoryEstimate, count_parameters, estimate_memory

__all__ = [
    "DataMode",
    "MemoryEstimate",
    "StepRecord",
    "TrainConfig",
    "TrainResult",
    "count_parameters",
    "data_vocab",
    "estimate_memory",
    "format_log_line",
    "train",
]
