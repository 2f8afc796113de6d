"""The global-batch sampler of Bridge's SFT data loader (``MegatronPretrainingBatchSampler``, bridge-format
§5).

Each epoch reorders all rows with ``torch.randperm`` from a generator seeded with ``seed + epoch``, cuts the
order into global batches of GBS rows and deals each to the DP ranks interleaved: with GBS 8 and DP 2, rank 0
gets positions 0, 2, 4, 6 and rank 1 gets 1, 3, 5, 7. A rank yields its GBS/DP indices at once (the collate
sees the rank's whole global batch). A last incomplete batch is dropped (``drop_last``), or dealt as it is and
padded with ``-1`` per rank (``pad_samples_to_global_batch_size``) so every rank steps together; ``-1`` rows
carry no loss (:class:`~bridgepack.batching.PackedDataset`). ``consumed_samples`` advances as batches are
yielded, so iterating again starts the next epoch, and a resumed run replays the same order.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from bridgepack.errors import UsageError

#: The index that marks a padding row (bridge-format §5): the dataset wraps it and zeroes its loss.
PAD_INDEX = -1


class GlobalBatchSampler:
    """Bridge's batch sampler, index for index (``data/samplers.py`` in 0.6.2)."""

    def __init__(
        self,
        total_samples: int,
        global_batch_size: int,
        data_parallel_rank: int = 0,
        data_parallel_size: int = 1,
        *,
        micro_batch_size: int = 1,
        consumed_samples: int = 0,
        drop_last: bool = True,
        pad_samples_to_global_batch_size: bool | None = None,
        shuffle: bool = True,
        seed: int = 1234,
    ) -> None:
        if total_samples <= 0:
            raise UsageError(f"no samples to draw from (total_samples={total_samples})")
        if micro_batch_size <= 0 or data_parallel_size <= 0:
            raise UsageError("micro_batch_size and data_parallel_size must be > 0")
        if not 0 <= data_parallel_rank < data_parallel_size:
            raise UsageError(f"data_parallel_rank {data_parallel_rank} not in [0, {data_parallel_size})")
        if global_batch_size % (micro_batch_size * data_parallel_size) != 0:
            raise UsageError(
                f"global_batch_size {global_batch_size} is not divisible by micro_batch_size "
                f"{micro_batch_size} x data_parallel_size {data_parallel_size}"
            )
        self.total_samples = total_samples
        self.global_batch_size = global_batch_size
        self.rank = data_parallel_rank
        self.dp = data_parallel_size
        self.consumed_samples = consumed_samples
        self.drop_last = drop_last
        # Bridge's loader pads exactly when it does not drop (build_pretraining_data_loader).
        self.pad = (
            (not drop_last) if pad_samples_to_global_batch_size is None else pad_samples_to_global_batch_size
        )
        self.shuffle = shuffle
        self.seed = int(seed)
        self.per_rank = global_batch_size // data_parallel_size
        if drop_last and total_samples < global_batch_size:
            raise UsageError(
                f"drop_last needs one full global batch: {total_samples} rows < GBS {global_batch_size}"
            )

    def _epoch_size(self) -> int:
        gbs = self.global_batch_size
        if self.drop_last:
            return self.total_samples // gbs * gbs
        if self.pad:
            return -(-self.total_samples // gbs) * gbs
        return self.total_samples

    def __len__(self) -> int:
        remaining = self._epoch_size() - self.consumed_samples % self._epoch_size()
        if self.drop_last:
            return remaining // self.global_batch_size
        return -(-remaining // self.global_batch_size)

    def epoch_order(self, epoch: int) -> np.ndarray:
        """All row indices in the order of ``epoch`` (``torch.randperm`` seeded with seed + epoch)."""
        if not self.shuffle:
            return np.arange(self.total_samples, dtype=np.int64)
        import torch

        generator = torch.Generator()
        generator.manual_seed(self.seed + epoch)
        return torch.randperm(self.total_samples, generator=generator).numpy()

    def __iter__(self) -> Iterator[list[int]]:
        epoch_size = self._epoch_size()
        epoch, offset = divmod(self.consumed_samples, epoch_size)
        order = self.epoch_order(epoch)[offset:]
        gbs = self.global_batch_size
        full = order.size // gbs
        for b in range(full):
            batch = order[b * gbs : (b + 1) * gbs]
            self.consumed_samples += gbs
            yield batch[self.rank :: self.dp].tolist()
        rest = order[full * gbs :]
        if rest.size and not self.drop_last:
            mine = rest[self.rank :: self.dp].tolist()
            if self.pad:
                mine += [PAD_INDEX] * (self.per_rank - len(mine))
                self.consumed_samples += gbs
            else:
                self.consumed_samples += rest.size
            yield mine
