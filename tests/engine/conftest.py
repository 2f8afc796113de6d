"""The engine tests share one two-node Ray cluster per session (tests/_support/ray_cluster.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A real Ray cluster of two simulated nodes on 127.0.0.1 (the ``ray`` extra; required in CI)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        if os.environ.get("CI"):
            pytest.fail("the ray extra is not installed in CI")
        pytest.skip("ray is not installed (pip install seqpack[ray])")
    from _support.ray_cluster import two_node_cluster

    with two_node_cluster() as cluster:
        yield cluster
