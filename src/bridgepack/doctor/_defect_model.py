"""What one known-defect entry of the atlas says, and the words the entries share.

An entry (:class:`Defect`) is built by keyword in the module of its component (``_defects_bridge``,
``_defects_mcore``, ``_defects_te``), one reviewable block per upstream bug; its trigger is a small named
predicate from ``_defect_triggers``. ``_defects`` gathers the three tables into :data:`DEFECTS` (sorted by
id) and finds an entry by its upstream number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from bridgepack.doctor._defect_facts import BRIDGE_LAUNCHER, MLM_LAUNCHER, DefectContext
from bridgepack.doctor._versions import Affected

Effect = Literal["silent", "crash", "slowdown", "unspecified"]
#: What each effect means in the docs and messages.
EFFECTS: dict[str, dict[str, str]] = {
    "silent": {"en": "silent wrong training", "zh": "静默地训练错误"},
    "crash": {"en": "crash", "zh": "崩溃"},
    "slowdown": {"en": "slowdown", "zh": "变慢"},
    "unspecified": {"en": "a failure the report does not detail", "zh": "报告未详述的故障"},
}
#: Which launchers run the defective code: Bridge's own step and data code never runs under Megatron-LM's
#: ``pretrain_gpt.py``; Megatron-Core and Transformer Engine run under both; Megatron-LM's training loop only
#: under Megatron-LM.
ON_BRIDGE = frozenset({BRIDGE_LAUNCHER})
ON_MLM = frozenset({MLM_LAUNCHER})
ON_BOTH = ON_BRIDGE | ON_MLM

BRIDGE_REPO = "NVIDIA-NeMo/Megatron-Bridge"
MLM_REPO = "NVIDIA/Megatron-LM"
TE_REPO = "NVIDIA/TransformerEngine"


@dataclass(frozen=True)
class WheelMarker:
    """A line of code that tells an affected release's wheel from a fixed one.

    ``present_when`` says whether ``text`` appears in ``path`` (relative to the wheel's root; the first of
    several paths that exists is read) on the affected releases or on the fixed ones. ``requires`` names the
    code the defect lives in: a release without it (or without the file) does not run that code.
    """

    paths: tuple[str, ...]
    text: str
    present_when: Literal["affected", "fixed"]
    requires: str | None = None


@dataclass(frozen=True, kw_only=True)
class Defect:
    """One upstream bug a valid config can walk into (module docstring of ``_defects``)."""

    id: str
    component: str
    #: Launchers whose runs execute the defective code (:data:`ON_BRIDGE`, :data:`ON_MLM` or :data:`ON_BOTH`).
    launchers: frozenset[str]
    affected: Affected
    effect: Effect
    #: The config fields (and data) the trigger reads.
    fields: tuple[str, ...]
    trigger: Callable[[DefectContext], bool]
    #: Overrides that avoid the defect on an affected release (not applied by ``--fix``: they change the run).
    workaround: tuple[str, ...]
    #: ``owner/repo#issue`` and the fix PR.
    source: str
    #: How the affected range was established.
    established: str
    #: ``{"en": (title, why), "zh": (...)}``: what goes wrong, and the way round it in words.
    text: dict[str, tuple[str, str]]
    #: The line of code that tells this defect's affected wheels from its fixed ones (re-checked against the
    #: released wheels by ``tests/doctor/test_defect_wheels.py``).
    wheel_marker: WheelMarker | None = None
    #: Further releases the defect needs besides :attr:`component`'s, e.g. ``(("cudnn", Affected(None,
    #: "9.18")),)``: a known version outside one of them clears the entry; an unknown one is named in the
    #: warning.
    also: tuple[tuple[str, Affected], ...] = ()
    #: The GPU architectures the defect needs (``--gpu``), ``None`` for every one: a known architecture
    #: outside them clears the entry, an unknown one is named in the warning.
    gpus: frozenset[str] | None = None
