"""What every rule sees: the typed config view, the loader's problems, and the facts around the config."""

from __future__ import annotations

from dataclasses import dataclass, field

from bridgepack.doctor._load import LoadProblem
from bridgepack.doctor._packed_facts import PackedFacts
from bridgepack.doctor._view import ConfigView
from bridgepack.packing import pad_multiple


@dataclass
class ConfigFacts:
    """The config as the rules check it: built once per check from the loaded config and the caller's
    :class:`~bridgepack.doctor.DoctorOptions` (what the user said: flags or keywords), with what follows
    from both (the model family and where it came from, the packed data's scanned facts)."""

    view: ConfigView
    problems: list[LoadProblem] = field(default_factory=list)
    #: Total ranks (``--world-size``); DP is derived from it, or given directly with ``--dp``.
    world_size: int | None = None
    dp: int | None = None
    family: str | None = None
    family_source: str = ""
    kernel_chunk: int | None = None
    packed_path: str | None = None
    facts: PackedFacts | None = None
    #: The config's packed-data path when it does not exist on this machine (data checks are skipped).
    missing_packed: str | None = None

    @property
    def pad_needed(self) -> int:
        """The ``pad_seq_to_mult`` the topology needs: ``lcm(2*CP, CP*TP with SP)`` (bridge-format §7)."""
        m = self.view.model
        return pad_multiple(
            cp=max(m.context_parallel_size, 1),
            tp=max(m.tensor_model_parallel_size, 1),
            sequence_parallel=m.sequence_parallel,
        )
