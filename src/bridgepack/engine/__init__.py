"""Engines that run ``bridgepack pack`` past one machine: ``pack_on_ray`` (``bridgepack pack --engine ray``).

Ray is an optional extra (``pip install bridgepack[ray]``) and is imported only when a run asks for it:
``import bridgepack`` and a local ``pack`` never load it.
"""

from bridgepack.engine._ray import pack_on_ray
from bridgepack.engine._task import (
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
