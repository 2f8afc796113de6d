"""Batches the training step consumes: packed THD collate, in-batch packing, CP padding and partition."""

from bridgepack.batching.collate import DEFAULT_PAD_SEQ_LENGTH_TO_MULT, PackedCollator
from bridgepack.batching.cp import (
    partition_packed_batch,
    partition_rows,
    partition_thd,
    unpartition_rows,
    unpartition_thd,
    zigzag_indices,
)
from bridgepack.batching.dataset import PackedDataset, PackedItem
from bridgepack.batching.dump import dump_batches
from bridgepack.batching.handoff import to_hf_packed, to_packed_seq_params
from bridgepack.batching.in_batch import pack_in_batch, pack_rows
from bridgepack.batching.sampler import PAD_INDEX, GlobalBatchSampler

__all__ = [
    "DEFAULT_PAD_SEQ_LENGTH_TO_MULT",
    "PAD_INDEX",
    "GlobalBatchSampler",
    "PackedCollator",
    "PackedDataset",
    "PackedItem",
    "dump_batches",
    "pack_in_batch",
    "pack_rows",
    "partition_packed_batch",
    "partition_rows",
    "partition_thd",
    "to_hf_packed",
    "to_packed_seq_params",
    "unpartition_rows",
    "unpartition_thd",
    "zigzag_indices",
]
