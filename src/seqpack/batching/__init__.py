"""Batches the training step consumes: packed THD collate, in-batch packing, CP padding and partition."""

from seqpack.batching.collate import DEFAULT_PAD_SEQ_LENGTH_TO_MULT, PackedCollator
from seqpack.batching.cp import (
    partition_packed_batch,
    partition_rows,
    partition_thd,
    unpartition_rows,
    unpartition_thd,
    zigzag_indices,
)
from seqpack.batching.dataset import PackedDataset, PackedItem
from seqpack.batching.dump import dump_batches
from seqpack.batching.handoff import to_hf_packed, to_packed_seq_params
from seqpack.batching.in_batch import pack_in_batch, pack_rows
from seqpack.batching.sampler import PAD_INDEX, GlobalBatchSampler

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
