"""Run a function over items on an executor, results in submission order, a bounded number in flight.

Both passes of ``bridgepack pack`` use it: pass 1 converts input chunks (threads for pre-tokenized scanning,
processes for tokenizers), pass 2 builds and encodes row groups on threads. Results come back in the
order the items went in, so the output is the same for any number of workers, and at most ``window``
items are submitted but not yet consumed, so memory stays bounded whatever the input size.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import BrokenExecutor, Executor, Future
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class WorkerLost(Exception, Generic[T]):
    """A worker died (killed, out of memory) while items were in flight; ``in_flight`` lists them, oldest
    first, so the caller can name the samples it lost."""

    def __init__(self, in_flight: list[T]) -> None:
        super().__init__(f"a worker died with {len(in_flight)} item(s) in flight")
        self.in_flight = in_flight


def map_ordered(executor: Executor, fn: Callable[[T], R], items: Iterable[T], window: int) -> Iterator[R]:
    """``fn(item)`` for every item, computed on ``executor``, yielded in the order of ``items``.

    An exception raised by ``fn`` is raised here, at that item's turn; the items still queued are
    cancelled. A broken executor raises :class:`WorkerLost` with the items that were in flight.
    """
    pending: deque[tuple[T, Future[R]]] = deque()

    def oldest() -> R:
        try:
            result = pending[0][1].result()
        except BrokenExecutor:
            raise WorkerLost([item for item, _ in pending]) from None
        pending.popleft()
        return result

    try:
        for item in items:
            pending.append((item, executor.submit(fn, item)))
            if len(pending) >= max(1, window):
                yield oldest()
        while pending:
            yield oldest()
    finally:
        for _, future in pending:
            future.cancel()
