"""Fault injection for the crash tests: stop or kill this process at a named point of a long run.

``BRIDGEPACK_FAULT=<point>:<n>:<action>`` makes the ``n``-th call of :func:`fault_point` with that name
send this process ``action`` (``kill``: SIGKILL, as an OOM killer or a preempted node does; ``stop``:
SIGSTOP, so a test can hold a run mid-way). Unset (always, outside tests) it costs one dict lookup::

    BRIDGEPACK_FAULT=write:3:kill bridgepack pack in.jsonl -o out -n 4096     # dies after the 3rd row group

The points of ``bridgepack pack`` are ``read`` (after each input chunk reaches the scratch store), ``plan``,
``write`` (after each row group), ``commit`` (metadata written, nothing renamed yet) and ``rename``
(rejects renamed, packed file not yet). ``docs/failure-behaviour.md`` lists what a run killed at each
leaves behind. The ray engine's workers pass ``shard`` (after each chunk a slice spools, after each row
group a shard writes); its driver passes ``plan``, ``commit`` and ``rename``.
"""

from __future__ import annotations

import os
import signal

ENV = "BRIDGEPACK_FAULT"
#: ``BRIDGEPACK_FAULT_ONCE=<file>``: fire at the n-th pass or any later one, but only in the one process that
#: creates ``<file>`` (workers of a distributed run are reused and retried: counters alone cannot say "once").
ONCE_ENV = "BRIDGEPACK_FAULT_ONCE"
_SIGNALS = {"kill": signal.SIGKILL, "stop": signal.SIGSTOP}
_seen: dict[str, int] = {}


def fault_point(name: str) -> None:
    """Count a pass through ``name``; signal this process when ``BRIDGEPACK_FAULT`` asks for this one."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    point, _, rest = spec.partition(":")
    if point != name:
        return
    count, _, action = rest.partition(":")
    _seen[name] = _seen.get(name, 0) + 1
    once = os.environ.get(ONCE_ENV)
    if once:  # any pass from the n-th on, in the one process that creates the file (deleting it re-arms)
        if _seen[name] < int(count or 1):
            return
        try:
            os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.kill(os.getpid(), _SIGNALS[action or "kill"])
    elif _seen[name] == int(count or 1):
        os.kill(os.getpid(), _SIGNALS[action or "kill"])
