"""Reference training: a tiny Llama-style model on packed data or the same samples padded, per-token loss.

>>> from bridgepack.train import TrainConfig, DataMode, train            # doctest: +SKIP
>>> result = train(TrainConfig(data=Path("out/training_512.idx.parquet"), steps=20))
>>> result.final_loss, result.real_tokens_per_s, result.padding_fraction
"""

from bridgepack.train._config import DataMode, StepRecord, TrainConfig, TrainResult
from bridgepack.train._data import data_vocab
from bridgepack.train._log import format_log_line
from bridgepack.train._loop import train
from bridgepack.train._model import MemoryEstimate, count_parameters, estimate_memory

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
