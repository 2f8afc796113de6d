"""The range of every number a user types, checked once at the door with one message shape.

A size of 0 divides by zero three layers down, ``2**64`` overflows a numba kernel, ``nan`` compares false
with every bound and slips through ``x < 1`` checks: each of these used to surface as a traceback or, worse,
as "every rule passes". Every numeric option declares a :class:`Range`
(``bridgepack.cli._common.number_option``
shows it in ``--help`` and checks it), and numbers parsed out of option strings (``--pack-sizes``,
``--model``, ``--steps``) go through the same :meth:`Range.check`::

    SIZE.check("--pack-size", 0)       -> UsageError "--pack-size: expected an integer >= 1, found 0"
    RATE.check("--lr", float("nan"))   -> UsageError "--lr: expected a finite number > 0, found nan"
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import TypeVar

from bridgepack.errors import UsageError, shown

T = TypeVar("T")


@dataclass(frozen=True)
class Range:
    """``lo <= x <= hi`` (``lo < x`` with ``lo_open``); integers unless ``integer=False`` (then finite)."""

    lo: float | None = None
    hi: float | None = None
    integer: bool = True
    lo_open: bool = False
    #: What a special value means, for --help (``"0 = off"``).
    note: str = ""

    def text(self) -> str:
        """The range as --help shows it: ``x>=1``, ``1<=x<=1048576``, ``x>0``, ``0<x<=1000000``."""
        below = "<" if self.lo_open else "<="
        if self.lo is None:
            body = f"x<={_num(self.hi)}" if self.hi is not None else "any"
        elif self.hi is None:
            body = f"x{'>' if self.lo_open else '>='}{_num(self.lo)}"
        else:
            body = f"{_num(self.lo)}{below}x<={_num(self.hi)}"
        return body + (f"; {self.note}" if self.note else "")

    def expected(self) -> str:
        kind = "an integer" if self.integer else "a finite number"
        parts = []
        if self.lo is not None:
            parts.append(f"{'>' if self.lo_open else '>='} {_num(self.lo)}")
        if self.hi is not None:
            parts.append(f"<= {_num(self.hi)}")
        return f"{kind} {' and '.join(parts)}".rstrip()

    def contains(self, value: object) -> bool:
        """Whether ``value`` is a number of the right kind inside the range (bools are not numbers)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            return False
        return not (self.hi is not None and value > self.hi)

    def check(self, name: str, value: T) -> T:
        """``value`` when :meth:`contains` it, else a one-line :class:`UsageError` naming ``name``."""
        if not self.contains(value):
            raise UsageError(f"{name}: expected {self.expected()}, found {shown(value)}")
        return value

    def checked_int(self, name: str, value: object) -> int:
        """:meth:`check` for a Python API's integer parameter: numpy integers count as integers (a float,
        a boolean or a string does not), the result is a plain ``int``."""
        if not isinstance(value, bool) and hasattr(value, "__index__"):
            value = operator.index(value)
        return int(self.check(name, value))  # type: ignore[call-overload]


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


#: Token counts and lengths: TE and Bridge keep cu_seqlens and positions in int32.
INT32_MAX = 2**31 - 1
#: numpy's legacy seeding (Bridge's shuffles) takes 0 .. 2**32 - 1.
SEED_MAX = 2**32 - 1
#: Parallel sizes and rank counts: far beyond any cluster, far below any overflow.
RANKS_MAX = 2**20

SIZE = Range(1, INT32_MAX)  # tokens, rows, samples, steps, layers, widths
COUNT0 = Range(0, INT32_MAX)  # the same where 0 is meaningful
RANKS = Range(1, RANKS_MAX)  # TP, PP, CP, EP, DP, world size, workers
SEED = Range(0, SEED_MAX)
STEP = Range(0, 2**62)  # training iterations (curves store them as int64)
TOKEN_ID = Range(0, SEED_MAX)  # ids are stored as uint32 at most
RATE = Range(0, 1e6, integer=False, lo_open=True)  # learning rates, sizes in GiB
NONNEG = Range(0, 1e6, integer=False)  # weight decay, gradient clip
CLIP = Range(0, 1e6, integer=False, note="0 = off")
