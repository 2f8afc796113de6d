"""Project-wide pytest configuration: hypothesis profiles and paths to the shared real data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = REPO_ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` (real Megatron-LM configs, golden values, log excerpts); always present in CI."""
    if not SHARED_DIR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{SHARED_DIR} is missing in CI")
        pytest.skip(f"{SHARED_DIR} is not present")
    return SHARED_DIR


@pytest.fixture(scope="session")
def bridge_text() -> Iterator[Any]:
    """Megatron-Bridge 0.6.2's text path in one child process, one per session (_support/bridge_text.py)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from _support.bridge_text import BridgeText

    peer = BridgeText()
    yield peer
    peer.close()
