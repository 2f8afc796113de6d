"""What ``bridgepack plan`` found: the candidates on the data's lengths, the one recommended, how to pack
it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bridgepack.packing import CostModel
from bridgepack.sizing._candidates import Candidate, Topology


@dataclass(frozen=True)
class PlanReport:
    """The lengths' summary, every candidate pack size, the recommended one with its overrides and the
    ``bridgepack pack`` command that packs it."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    samples: int
    longest: int
    token_slots: int
    topology: Topology
    cost_model: CostModel
    candidates: list[Candidate]
    chosen: Candidate
    #: Balanced packs lower the simulated DP imbalance of the chosen size (:func:`balance_worthwhile`).
    recommend_balance: bool
    overrides: list[str]
    pack_command: str

    def to_dict(self) -> dict[str, Any]:
        """``bridgepack plan --format json``'s document."""
        topology = self.topology
        return {
            "schema_version": self.SCHEMA_VERSION,
            "samples": self.samples,
            "longest": self.longest,
            "token_slots": self.token_slots,
            "topology": {
                "tp": topology.tp,
                "cp": topology.cp,
                "sequence_parallel": topology.sequence_parallel,
                "dp": topology.dp,
            },
            "cost_model": self.cost_model.to_record(),
            "candidates": [c.to_dict() for c in self.candidates],
            "recommended": self.chosen.pack_size,
            "recommend_balance": self.recommend_balance,
            "overrides": self.overrides,
            "pack_command": self.pack_command,
        }
