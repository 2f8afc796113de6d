"""The small pre-tokenized SFT dataset shipped in the package (``bridgepack pack --example``).

Generated deterministically by ``scripts/make_example_dataset.py``: 1,000 synthetic examples whose runtime
lengths follow a lognormal SFT-like distribution (median ~120, clipped to [16, 1024]); each is a prompt
(mask 0) then an answer (mask 1) ending with EOS = 2.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

EXAMPLE_DATASET = "sft_example.parquet"
EXAMPLE_EOS_ID = 2


def example_dataset_path() -> Path:
    """Filesystem path of the shipped dataset (installed as package data)."""
    return Path(str(resources.files("bridgepack.resources").joinpath(EXAMPLE_DATASET)))
