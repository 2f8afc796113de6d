"""The algorithm table: every packing algorithm's name, which are Bridge's, and the defaults.

One place for the names, so no other module spells an algorithm as a string literal.
"""

from __future__ import annotations

#: Bridge's two offline algorithms (bridge-format §2, its PACKING_ALGOS); compat mode runs only these.
FIRST_FIT_SHUFFLE = "first_fit_shuffle"
FIRST_FIT_DECREASING = "first_fit_decreasing"
#: bridgepack's tightest packing: lengths descending, each into the fullest pack that still holds it.
BEST_FIT_DECREASING = "best_fit_decreasing"
#: As many packs as best_fit_decreasing, with pack costs evened out under a cost model (``_balance``).
BALANCED = "balanced"

BRIDGE_ALGORITHMS = (FIRST_FIT_SHUFFLE, FIRST_FIT_DECREASING)
ALGORITHMS = (BALANCED, BEST_FIT_DECREASING, *BRIDGE_ALGORITHMS)
#: ``bridgepack pack``'s and the planner's default: Bridge's batch sampler deals packs to data-parallel ranks
#: at random, so even pack costs shorten the step (docs/plan.md has the measured epoch times).
DEFAULT_ALGORITHM = BALANCED
#: What Bridge 0.6.2 packs with when the user sets nothing (``--bridge-compat``'s default).
BRIDGE_DEFAULT_ALGORITHM = FIRST_FIT_SHUFFLE
#: The seed Bridge 0.6.2 packs with when the user sets none (``--bridge-compat``'s default): its recipe
#: presets build the SFT dataset with ``GPTSFTDatasetConfig(seed=5678)`` (``recipes/utils/dataset_utils.py``:
#: the prompt-completion JSONL and HF presets, bridge-format §13); a config built by hand keeps the field's
#: 1234.
BRIDGE_DEFAULT_SEED = 5678
