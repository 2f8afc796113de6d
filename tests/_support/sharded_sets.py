"""A sharded pack set made in this process (the ray engine's two phases around its one plan, without a
cluster), and the command lines of every reader of packed data (found in the app by the sweep tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridgepack.data.pipeline import (
    PackOptions,
    PackResult,
    commit_sharded,
    plan_sharded,
    prepare_sharded,
    read_slice,
    spool_is_intact,
    write_shard,
)


def sharded_pack(
    inputs: list[Path], out: Path, shards: int, pack_size: int = 128, **options: Any
) -> PackResult:
    """A sharded run's two phases and its one plan, every task in this process (no cluster)."""
    sharded = prepare_sharded(PackOptions.from_flat(inputs, out, pack_size, quiet=True, **options), shards)
    try:
        slices = [read_slice(sharded.job, piece) for piece in sharded.slices]
        assert all(spool_is_intact(sharded.job, s) for s in slices)
        plan = plan_sharded(sharded, slices)
        written = [write_shard(sharded.job, shard) for shard in plan.shards]
        return commit_sharded(sharded, plan, slices, written, {})
    finally:
        sharded.release()


def packed_readers(packed: str, pack_size: int) -> dict[str, list[str]]:
    """Every command that reads a pack set, on one packed location (``tests/hardening/test_damaged_packs.py``
    checks that these are all the app's readers of packed data)."""
    return {
        "inspect": ["inspect", packed, "--quiet"],
        "doctor": ["doctor", "--packed", packed, "--seq-length", str(pack_size)],
        "train": ["train", "--data", packed, "--steps", "1", "--gbs", "1", "--vocab", "1024", "--quiet"],
        "fingerprint": ["fingerprint", packed, "--check", "--quiet"],
        "diff": ["diff", packed, packed, "--quiet"],
    }
