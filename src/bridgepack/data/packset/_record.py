"""bridgepack's record of how a split was packed: the ``"bridgepack"`` key of its metadata entry
(bridge-format §3).

The pack pipeline builds it step by step, each step returning a new value instead of filling in a dict:

    resolve   version, split, mode, layout, settings, EOS as given, tokenizer, run id, text, inputs
    pass 1    the EOS id the rows were padded with (inferred ones are known only here)
    plan      the algorithm that made the packs, and its cost model when balanced
    pass 2    the content fingerprint of the written rows (Bridge's layout)
    commit    the inputs' SHA-256 and the counts

Readers never build one: an entry read back keeps the record as a mapping (older or other writers' keys
stay as they were), read through :class:`~bridgepack.data.packset.MetadataEntry`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

#: Keys of the record that describe the run, not the packed data: two runs that pack the same samples the
#: same way differ in them (each draws its own run id; paths and versions are the machine's). Every
#: comparison of two pack sets leaves them out and says so.
RUN_KEYS: frozenset[str] = frozenset({"version", "run_id", "inputs", "tokenizer"})
#: Keys whose value is written only once a step has produced it (absent before, never ``null``).
_OPTIONAL = frozenset({"text", "cost_model", "fingerprint", "input_sha256", "counts"})


@dataclass(frozen=True)
class PackCounts:
    """Samples in and what became of them (each is packed, rejected or dropped; truncated and split ones
    are among the packed), the sequences packed and the packs written."""

    samples_in: int
    packed: int
    rejected: int
    truncated: int
    split: int
    dropped: int
    sequences: int
    packs: int

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class PackRecord:
    """The record, field order = key order on disk."""

    version: str
    split: str
    mode: str  # "bridgepack" | "bridge-compat"
    layout: str  # a Layout value
    algorithm: str | None  # as asked before the plan; the algorithm that made the packs after it
    seed: int
    pack_size: int
    pad_seq_to_mult: int
    max_seq_length: int
    too_long: str | None  # None in --bridge-compat (Bridge's own rule applies)
    eos_id: int | None  # None until pass 1 infers it
    eos_source: str  # "--eos-id" | "tokenizer" | "inferred"
    tokenizer: str | None
    tokenizer_sha256: str | None
    run_id: str  # carried by every file of the set (bridgepack.data.packset._runs)
    text: Mapping[str, Any] | None = None
    inputs: tuple[str, ...] = ()
    cost_model: Mapping[str, Any] | None = None
    fingerprint: Mapping[str, Any] | None = None
    input_sha256: str | None = None
    counts: PackCounts | None = None

    def with_eos(self, eos_id: int) -> PackRecord:
        return replace(self, eos_id=eos_id)

    def with_plan(self, algorithm: str, cost_model: Mapping[str, Any] | None) -> PackRecord:
        return replace(self, algorithm=algorithm, cost_model=cost_model)

    def with_fingerprint(self, fingerprint: Mapping[str, Any] | None) -> PackRecord:
        return replace(self, fingerprint=fingerprint)

    def committed(self, input_sha256: str, counts: PackCounts) -> PackRecord:
        return replace(self, input_sha256=input_sha256, counts=counts)

    def to_dict(self) -> dict[str, Any]:
        """The record as written, keys in field order; a step's key is absent until the step ran."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _OPTIONAL and value is None:
                continue
            if isinstance(value, PackCounts):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out
