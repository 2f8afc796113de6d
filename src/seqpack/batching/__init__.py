"""Batches the training step consumes: packed THD collate, in-batch packing, CP padding and partition."""

from seqpack.batching.cp import pad_multiple

__all__ = ["pad_multiple"]
