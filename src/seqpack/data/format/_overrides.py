"""The Megatron-Bridge 0.6.2 overrides that train on offline-packed data (bridge-format §1, §4, §7, §8).

One builder for every place that prints them (``seqpack pack`` after writing packs, ``seqpack plan`` for
a recommended pack size), so the two can never disagree:

>>> offline_packing_overrides(4096, 4, cp=2)[:3]
['dataset.enable_offline_packing=true', 'dataset.seq_length=4096', 'model.seq_length=4096']
"""

from __future__ import annotations

import os

_SPECS = "dataset.offline_packing_specs"


def offline_packing_overrides(
    pack_size: int,
    pad_seq_to_mult: int,
    *,
    global_batch_size: int | None = None,
    cp: int = 1,
    tp: int = 1,
    sequence_parallel: bool = False,
    train_path: str | os.PathLike[str] | None = None,
    val_path: str | os.PathLike[str] | None = None,
    metadata_path: str | os.PathLike[str] | None = None,
) -> list[str]:
    """``key=value`` overrides: offline packing on, lengths equal to the pack size, MBS 1 (bridge-format §8),
    the pad multiple, the parallel sizes given, and the data paths given."""
    lines = [
        "dataset.enable_offline_packing=true",
        f"dataset.seq_length={pack_size}",
        f"model.seq_length={pack_size}",
        "train.micro_batch_size=1",
    ]
    if global_batch_size is not None:
        lines.append(f"train.global_batch_size={global_batch_size}")
    lines += [f"{_SPECS}.packed_sequence_size={pack_size}", f"{_SPECS}.pad_seq_to_mult={pad_seq_to_mult}"]
    if tp > 1:
        lines.append(f"model.tensor_model_parallel_size={tp}")
    if sequence_parallel:
        lines.append("model.sequence_parallel=true")
    if cp > 1:
        # bridge-format §8: CP with SFT data needs per-token loss and no collective averaging
        lines += [
            f"model.context_parallel_size={cp}",
            "model.calculate_per_token_loss=true",
            "ddp.average_in_collective=false",
        ]
    for key, path in (
        ("packed_train_data_path", train_path),
        ("packed_val_data_path", val_path),
        ("packed_metadata_path", metadata_path),
    ):
        if path is not None:
            lines.append(f"{_SPECS}.{key}={os.fspath(path)}")
    return lines
