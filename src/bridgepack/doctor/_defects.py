"""The known-defect atlas: upstream bugs in Megatron-Bridge, Megatron-Core, Transformer Engine and cuDNN that
a valid packing / context-parallel / THD / CUDA-graph / MTP / loss-mask config can walk into.

One :class:`~bridgepack.doctor._defect_model.Defect` per upstream bug, built by keyword in the module of its
component (``_defects_bridge``, ``_defects_mcore``, ``_defects_te``), with its trigger a named predicate
(``_defect_triggers``): an id ``SP2xx``, the component and its affected releases (first affected, first
fixed; ``None`` where it is not established), the trigger on the config (and the packed data where that
decides it), the effect, the workaround overrides, the source (repository, issue and fix PR) and how the
range was established. The doctor turns a triggered entry into a finding (``_atlas``); ``docs/doctor.md``
lists the table (``_atlas.atlas_markdown``) and the survey the entries came from (``_defect_survey``).

Ranges were read from the release artifacts, not only the trackers: Bridge entries from the wheels' code
(``tests/doctor/test_defect_wheels.py`` re-checks each wheel marker on every wheel it can download),
Megatron-Core entries from the ``core_v*`` tags of Megatron-LM and the wheels (0.15.3-0.19.2), Transformer
Engine entries from its tags.
"""

from __future__ import annotations

import re

from bridgepack.doctor._defect_model import Defect
from bridgepack.doctor._defects_bridge import BRIDGE_DEFECTS
from bridgepack.doctor._defects_mcore import MCORE_DEFECTS
from bridgepack.doctor._defects_te import TE_DEFECTS

#: Every entry, in id order.
DEFECTS: list[Defect] = sorted((*BRIDGE_DEFECTS, *MCORE_DEFECTS, *TE_DEFECTS), key=lambda d: d.id)
DEFECT_IDS = frozenset(d.id for d in DEFECTS)


def find_defects(ref: str) -> list[Defect]:
    """The entries whose source cites the upstream number in ``ref`` (``"#3331"``, ``"3331"``,
    ``"NVIDIA/TransformerEngine#3331"``, ``"PR #4489"``): how a reader goes from a tracker thread to the
    atlas."""
    number = re.search(r"(\d+)\s*$", ref.strip())
    if number is None:
        return []
    cited = re.compile(rf"#{number.group(1)}\b")
    return [d for d in DEFECTS if cited.search(d.source)]
