"""The demo's bundled inputs (package data under ``bridgepack/resources/demo``).

* ``sft_chat.jsonl``: 2,000 chat conversations written for the project by ``scripts/make_demo_data.py``
  (templated arithmetic, sorting, counting, unit-conversion tasks; long-tail lengths);
* ``bridge_sft.yaml``: a Megatron-Bridge fine-tuning config for them with one deliberate mistake
  (offline packing with ``micro_batch_size 2``), which ``bridgepack doctor`` finds and fixes.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DATASET = "sft_chat.jsonl"
CONFIG = "bridge_sft.yaml"
#: The finding the bundled config is written to trigger (offline packing with micro_batch_size > 1).
EXPECTED_FINDING = "SP005"


def resource_path(name: str) -> Path:
    """Filesystem path of a bundled demo file."""
    return Path(str(resources.files("bridgepack.resources").joinpath("demo", name)))


def dataset_path() -> Path:
    return resource_path(DATASET)


def config_path() -> Path:
    return resource_path(CONFIG)
