"""One CP rank of Megatron-Core's packed MTP roll (``_roll_tensor_packed_seq``), run from the wheel on CPU.

Spawned twice by ``tests/doctor/test_defect_wheels.py`` with a gloo process group (CP 2): each rank takes its
zigzag share of a padded THD row (the layout Transformer Engine's partitioning produces), rolls it with the
wheel's function once per boundary list it is given, and saves ``[positions, rolled values...]``.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from _support.stand_ins import load_with_stand_ins
from bridgepack.batching.cp import zigzag_indices


def roll_on_rank(
    rank: int,
    world: int,
    init_file: str,
    module_path: str,
    boundaries: list[list[int]],
    cu_seqlens_padded: list[int],
    tokens: list[int],
    out_dir: str,
) -> None:
    import torch
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=60)  # a rank that fails must not keep the other waiting long
    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world, timeout=timeout
    )
    try:
        mtp = load_with_stand_ins(Path(module_path), f"mtp_roll_rank{rank}")
        positions = zigzag_indices(cu_seqlens_padded, world, rank)
        local = torch.tensor(tokens)[None, torch.as_tensor(positions)]
        rows = [positions]
        for cu_seqlens_q in boundaries:
            params = SimpleNamespace(cu_seqlens_q=torch.tensor(cu_seqlens_q))
            rolled, _ = mtp._roll_tensor_packed_seq(local, -1, -1, params, dist.group.WORLD)
            rows.append(rolled[0].numpy())
        np.save(Path(out_dir) / f"rank{rank}.npy", np.stack(rows))
    finally:
        dist.destroy_process_group()
