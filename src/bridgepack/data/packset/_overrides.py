"""The Megatron-Bridge 0.6.2 overrides that train on offline-packed data (bridge-format §1, §4, §7, §8).

One builder for every place that prints them (``bridgepack pack`` after writing packs, ``bridgepack plan`` for
a recommended pack size), so the two can never disagree:

>>> offline_packing_overrides(4096, 4, cp=2)[:3]
['dataset.enable_offline_packing=true', 'dataset.seq_length=4096', 'model.seq_length=4096']
"""

from __future__ import annotations

import os

from bridgepack._bridge_keys import (
    AVG_COLL,
    CP,
    DATA_SEQ,
    GBS,
    MBS,
    METADATA_PATH,
    MODEL_SEQ,
    OFFLINE,
    PACK_SIZE,
    PAD_MULT,
    PER_TOKEN,
    SP,
    TP,
    TRAIN_PATH,
    VAL_PATH,
)


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
        f"{OFFLINE}=true",
        f"{DATA_SEQ}={pack_size}",
        f"{MODEL_SEQ}={pack_size}",
        f"{MBS}=1",
    ]
    if global_batch_size is not None:
        lines.append(f"{GBS}={global_batch_size}")
    lines += [f"{PACK_SIZE}={pack_size}", f"{PAD_MULT}={pad_seq_to_mult}"]
    if tp > 1:
        lines.append(f"{TP}={tp}")
    if sequence_parallel:
        lines.append(f"{SP}=true")
    if cp > 1:
        # bridge-format §8: CP with SFT data needs per-token loss and no collective averaging
        lines += [
            f"{CP}={cp}",
            f"{PER_TOKEN}=true",
            f"{AVG_COLL}=false",
        ]
    for key, path in (
        (TRAIN_PATH, train_path),
        (VAL_PATH, val_path),
        (METADATA_PATH, metadata_path),
    ):
        if path is not None:
            lines.append(f"{key}={os.fspath(path)}")
    return lines
