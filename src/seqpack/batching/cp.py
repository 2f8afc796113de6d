"""Context-parallel (CP) and sequence-parallel (SP) alignment (spec §7).

Megatron splits every packed sequence into ``2*CP`` chunks for the zigzag CP layout and shards the
sequence dimension over TP ranks with sequence parallelism, so each stored sequence's runtime length
must be a multiple of::

    cp_mult = 2*CP if CP > 1 else 1
    sp_mult = CP*TP if sequence_parallel and TP > 1 else 1
    pad_seq_to_mult = lcm(cp_mult, sp_mult)

e.g. TP1/CP1 -> 1, TP4+SP/CP1 -> 4, CP8 -> 16. Changing the topology means re-packing.
"""

from __future__ import annotations

import math

from seqpack.errors import UsageError


def pad_multiple(cp: int = 1, tp: int = 1, sequence_parallel: bool = False) -> int:
    """The ``pad_seq_to_mult`` a (CP, TP, SP) topology needs: ``lcm(cp_mult, sp_mult)`` (spec §7).

    >>> pad_multiple(cp=1, tp=4, sequence_parallel=True), pad_multiple(cp=8)
    (4, 16)
    """
    if cp < 1 or tp < 1:
        raise UsageError(f"context and tensor parallel sizes must be >= 1, got cp={cp}, tp={tp}")
    cp_mult = 2 * cp if cp > 1 else 1
    sp_mult = cp * tp if sequence_parallel and tp > 1 else 1
    return math.lcm(cp_mult, sp_mult)
