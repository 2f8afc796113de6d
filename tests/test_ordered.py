"""map_ordered: results in submission order, at most ``window`` in flight, errors at their turn."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from bridgepack._ordered import map_ordered


def test_results_come_back_in_submission_order_whatever_finishes_first() -> None:
    rng = random.Random(0)
    delays = [rng.random() / 500 for _ in range(60)]

    def slow_square(i: int) -> int:
        time.sleep(delays[i])
        return i * i

    with ThreadPoolExecutor(4) as pool:
        assert list(map_ordered(pool, slow_square, range(60), 8)) == [i * i for i in range(60)]


def test_at_most_window_items_are_submitted_ahead_of_the_consumer() -> None:
    submitted: list[int] = []
    lock = threading.Lock()

    def record(i: int) -> int:
        with lock:
            submitted.append(i)
        return i

    def items() -> Iterator[int]:
        yield from range(50)

    with ThreadPoolExecutor(2) as pool:
        for consumed in map_ordered(pool, record, items(), 3):
            time.sleep(0.001)
            assert max(submitted) <= consumed + 3


def test_an_error_is_raised_at_its_turn_after_the_results_before_it() -> None:
    def fail_at_five(i: int) -> int:
        if i == 5:
            raise ValueError("item 5")
        return i

    got: list[int] = []
    with ThreadPoolExecutor(3) as pool, pytest.raises(ValueError, match="item 5"):
        for value in map_ordered(pool, fail_at_five, range(20), 4):
            got.append(value)
    assert got == [0, 1, 2, 3, 4]
