"""The training-log line formats ``bridgepack curves`` reads, one table (bridge-format §10).

Every format prints a record as a header word, ``<N>/<M>`` and ``key: value`` fields split by ``|``; the
numba kernel (:mod:`._kernel`) scans any header word it is given, so a new line format is an entry here
(and its printed key names in :data:`bridgepack.curves._names.LOG_KEYS`), not a kernel edit::

    Megatron-LM / Bridge   ' iteration       10/     100 | ... | lm loss: 9.87E+00 |'
    NeMo 2.x               'Training epoch 0, iteration 9/99 | ... | reduced_train_loss: 9.87'

A log is read as the first format (in table order) whose :attr:`LogLine.hint` its first block holds,
else as the first format without a hint (Megatron-LM's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class LogLine:
    """One line format: what starts a record, how its iterations count, what tells a log of it apart."""

    name: str  #: ``--input-format`` and :attr:`bridgepack.curves.Curves.format`
    label: str  #: the framework, in notes: ``NeMo iterations count from 0``
    header: bytes = b"iteration"  #: the word before ``<N>/<M>``
    #: Added to the printed iteration so that every format numbers a run's steps alike: NeMo's Lightning
    #: counts optimizer steps from 0, Megatron from 1.
    iteration_offset: int = 0
    #: Megatron ends every record with ``" |"``: a last line without it was cut off while written.
    closed_by_pipe: bool = True
    #: Text found only in this format's logs (the first 1 MiB is searched); ``None``: chosen when no
    #: other format's hint is found.
    hint: re.Pattern[bytes] | None = None

    @property
    def example(self) -> str:
        return f"' {self.header.decode()} 10/ 100 | ... | lm loss: 9.87E+00 |'"


#: Megatron-LM's line; Bridge prints the same one (and a ``Step Time :`` line, which names a log ``bridge``
#: when it was not forced: :func:`bridgepack.curves._logs.read_log`).
MEGATRON = LogLine("mlm", "Megatron-LM")
BRIDGE = LogLine("bridge", "Megatron-Bridge")
NEMO = LogLine(
    "nemo",
    "NeMo",
    iteration_offset=1,
    closed_by_pipe=False,
    hint=re.compile(rb"reduced_train_loss|Training epoch \d+, iteration \d+/"),
)

#: Every line format (a log is tried against their hints in this order).
LOG_LINES: tuple[LogLine, ...] = (MEGATRON, BRIDGE, NEMO)


def log_line(name: str) -> LogLine | None:
    """The line format called ``name``, or ``None``."""
    return next((line for line in LOG_LINES if line.name == name), None)


#: How much of a log its format's hint is looked for in.
HINT_BYTES = 1 << 20


def detect_line(head: bytes) -> LogLine:
    """The line format of a log whose first block is ``head``: the first whose hint its first
    :data:`HINT_BYTES` hold, else the first without a hint."""
    sample = head[:HINT_BYTES]
    for line in LOG_LINES:
        if line.hint is not None and line.hint.search(sample) is not None:
            return line
    return next(line for line in LOG_LINES if line.hint is None)
