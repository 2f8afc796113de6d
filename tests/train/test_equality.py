"""Packed vs padded training of the same samples in the same steps: the same loss curve, less compute."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq

from bridgepack.train import DataMode, TrainConfig, train
from train.conftest import PACK_SIZE, with_


def test_packed_and_padded_runs_match_step_by_step(base_config: TrainConfig) -> None:
    # More steps than an epoch holds: the next epoch's re-shuffle is shared too.
    packs = pq.ParquetFile(base_config.data).metadata.num_rows
    config = with_(base_config, steps=packs // base_config.gbs + 1)
    packed = train(config)
    padded = train(with_(config, mode=DataMode.padded))
    # The same sequences in every step: the same supervised and real token counts, step by step.
    assert [r.loss_tokens for r in packed.records] == [r.loss_tokens for r in padded.records]
    assert [r.real_tokens for r in packed.records] == [r.real_tokens for r in padded.records]
    np.testing.assert_allclose(packed.losses, padded.losses, rtol=1e-4)
    assert packed.losses[-1] < packed.losses[0]
    # Padded rows are PACK_SIZE wide, one per sequence; packed rows hold several sequences each.
    assert padded.positions == PACK_SIZE * sum(r.rows for r in padded.records)
    assert packed.positions <= PACK_SIZE * sum(r.rows for r in packed.records)
    assert packed.positions < padded.positions
    assert packed.padding_fraction < padded.padding_fraction
    assert padded.padding_fraction == 1 - padded.real_tokens / padded.positions


def test_epochs_count_full_global_batches(base_config: TrainConfig) -> None:
    packs = pq.ParquetFile(base_config.data).metadata.num_rows
    config = with_(
        base_config, steps=None, epochs=1, mode="padded", log=str(base_config.data.parent / "e.log")
    )
    assert config.mode is DataMode.padded and config.log is not None
    result = train(with_(config, overwrite=True))
    assert result.steps_done == result.steps_planned == packs // base_config.gbs
    assert result.log_path == base_config.data.parent / "e.log"


def test_micro_batching_does_not_change_the_per_token_loss(base_config: TrainConfig) -> None:
    whole = train(with_(base_config, mbs=4))
    split = train(with_(base_config, mbs=1))
    np.testing.assert_allclose(whole.losses, split.losses, rtol=1e-5)


def test_same_seed_is_identical_and_other_lr_or_seed_differs(base_config: TrainConfig) -> None:
    first = train(base_config)
    again = train(base_config)
    assert first.losses == again.losses
    other_lr = train(with_(base_config, lr=base_config.lr * 3))
    assert other_lr.losses[0] == first.losses[0]  # same init and batch; the step size shows from step 2
    assert other_lr.losses[1:] != first.losses[1:]
    other_seed = train(with_(base_config, seed=base_config.seed + 1))
    assert other_seed.losses[0] != first.losses[0]


def test_bfloat16_autocast_tracks_float32(base_config: TrainConfig) -> None:
    # bf16 is what GPUs run; on CPU autocast runs it too, so the path is exercised without a GPU.
    exact = train(with_(base_config, steps=2))
    bf16 = train(with_(base_config, steps=2, dtype="bfloat16"))
    np.testing.assert_allclose(bf16.losses, exact.losses, rtol=2e-2)
    assert bf16.losses != exact.losses
