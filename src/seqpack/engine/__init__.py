"""Engines that run ``seqpack pack`` past one machine: ``pack_on_ray`` (``seqpack pack --engine ray``).

Ray is an optional extra (``pip install seqpack[ray]``) and is imported only when a run asks for it:
``import seqpack`` and a local ``pack`` never load it.
"""

from seqpack.engine._ray import pack_on_ray
from seqpack.engine._task import (
    TaskFailure,
    captured,
    first_failure,
    run_shard,
    run_slice,
    shard_is_intact,
)

__all__ = [
    "TaskFailure",
    "captured",
    "first_failure",
    "pack_on_ray",
    "run_shard",
    "run_slice",
    "shard_is_intact",
]
