"""The pre-padding multiple a parallel topology needs (bridge-format §7): one formula for ``pack``, ``plan``,
``doctor`` and the collators."""

from __future__ import annotations

import math

from bridgepack._ranges import Range
from bridgepack.errors import UsageError, param

#: Largest pre-padding multiple ``pack`` takes (``--pad-seq-to-mult`` or the one ``--cp/--tp`` derive):
#: 2 * CP * TP for CP x TP up to 32768 GPUs. Padding is written out, so a sample costs up to this many
#: tokens whatever its length; without a bound, two 3-token rows with a multiple of 10^9 took 24 GB.
MAX_PAD_MULTIPLE = 1 << 16
#: What every pad multiple a user gives may be: the CLI's options and the collators' parameters alike.
PAD_MULTIPLE = Range(1, MAX_PAD_MULTIPLE)


def checked_multiple(name: str, value: object) -> int:
    """``value`` as an ``int`` when it is a pad multiple in ``[1, MAX_PAD_MULTIPLE]``, else the one-line
    :class:`UsageError` naming the parameter ``name`` (a float, a boolean, 0, -16 or 2**20 alike: numpy
    broadcast a negative multiple into an error three calls down, and padded a huge one into gigabytes)::

        checked_multiple("pad_to_multiple_of", 2**20)
        -> UsageError "pad_to_multiple_of: expected an integer >= 1 and <= 65536, found 1048576"
    """
    return PAD_MULTIPLE.checked_int(param(name), value)


def pad_multiple(cp: int = 1, tp: int = 1, sequence_parallel: bool = False) -> int:
    """The ``pad_seq_to_mult`` a (CP, TP, SP) topology needs: ``lcm(cp_mult, sp_mult)`` (bridge-format §7).

    >>> pad_multiple(cp=1, tp=4, sequence_parallel=True), pad_multiple(cp=8)
    (4, 16)
    """
    if cp < 1 or tp < 1:
        raise UsageError(f"context and tensor parallel sizes must be >= 1, got cp={cp}, tp={tp}")
    cp_mult = 2 * cp if cp > 1 else 1
    sp_mult = cp * tp if sequence_parallel and tp > 1 else 1
    return math.lcm(cp_mult, sp_mult)
