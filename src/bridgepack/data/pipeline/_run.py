"""One pack run before anything is written, as the local pipeline and the sharded run share it: its
options checked, the EOS and the text step resolved, its output files named, its metadata record
started, and an existing set refused (or one of another split packed differently); then its one plan
and the cost model its record names.

Shared so that the two ways of running a pack refuse the same things, write the same names, and make the
same packs from the same lengths.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bridgepack import __version__
from bridgepack.data.packset import (
    PADDING_FREE_METADATA,
    Layout,
    PackingMetadata,
    PackRecord,
    metadata_filename,
    new_run_id,
    packed_filename,
    padding_free_filename,
    rejects_filename,
    sharded_dirname,
)
from bridgepack.data.pipeline._input import checked_text, resolve_input
from bridgepack.data.pipeline._options import PackOptions, resolve_workers
from bridgepack.data.samples.text import ResolvedText, load_tokenizer, text_record, tokenizer_hash
from bridgepack.errors import UsageError, param
from bridgepack.packing import BALANCED, CostModel, PackPlan, pack_lengths

#: Keys of the bridgepack record that must agree between the splits of one output directory.
_SPLIT_AGREEMENT = ("pack_size", "pad_seq_to_mult", "seed", "tokenizer_sha256")


@dataclass(frozen=True)
class Outputs:
    """The files of one set, named by split, pack size and layout (the HF layout never shares a Bridge
    set's names)."""

    packed: Path
    metadata: Path
    rejects: Path
    sharded: Path | None  # the same split's directory of shards (the ray engine's; Bridge layout only)

    @classmethod
    def of(cls, opts: PackOptions) -> Outputs:
        out, split, n = opts.run.out_dir, opts.run.split, opts.size.pack_size
        if opts.run.layout is Layout.padding_free:
            return cls(
                out / padding_free_filename(split),
                out / PADDING_FREE_METADATA,
                out / rejects_filename(split),
                None,
            )
        packed = out / packed_filename(split, n)
        rejects = out / rejects_filename(split, n)
        return cls(packed, out / metadata_filename(n), rejects, out / sharded_dirname(split, n))

    def remove_sharded(self) -> None:
        """After a one-file commit with ``overwrite``: remove the split's directory of shards it replaced
        (moved to a hidden name first, so the directory's name never holds a half-removed set)."""
        if self.sharded is None or not self.sharded.is_dir():
            return
        trash = self.sharded.with_name(f".{self.sharded.name}.replaced-{uuid.uuid4().hex[:8]}")
        os.replace(self.sharded, trash)
        shutil.rmtree(trash, ignore_errors=True)


@dataclass
class Run:
    """One run, resolved from its options before anything is written: ``record`` is the metadata record as
    far as resolving knows it (the steps return what they add); ``seconds`` fill in as the steps go."""

    opts: PackOptions
    inputs: list[Path]
    eos_id: int | None  # None: inferred in pass 1
    text: ResolvedText | None  # None: pre-tokenized input
    outputs: Outputs
    record: PackRecord
    workers: int
    seconds: dict[str, float] = field(default_factory=dict)


def resolve_run(opts: PackOptions) -> Run:
    """Check the options, resolve the EOS and the text step, name the outputs and start the metadata
    record; refuse to replace a set (or join one packed differently) before anything is written."""
    opts.check()
    tokenizer = opts.input.tokenizer
    tok_sha = None
    if tokenizer is not None:
        load_tokenizer(tokenizer)  # refused here if it cannot load, also where it only names the EOS
        tok_sha = tokenizer_hash(tokenizer)
    resolved = resolve_input(opts.input)
    text = None if resolved.text is None else _text_spec(opts, resolved.text)
    outputs = Outputs.of(opts)
    max_len, size = opts.max_seq_length, opts.size
    inputs = list(opts.input.paths)
    record = PackRecord(
        version=__version__,
        split=opts.run.split,
        mode="bridge-compat" if opts.bridge_compat else "bridgepack",
        layout=opts.run.layout.value,
        algorithm=opts.algorithm,
        seed=opts.packing_seed,
        pack_size=size.pack_size,
        pad_seq_to_mult=size.pad_seq_to_mult,
        max_seq_length=max_len,
        too_long=None if opts.bridge_compat else opts.too_long.value,
        eos_id=resolved.eos_id,
        eos_source=resolved.eos_source,
        tokenizer=os.fspath(tokenizer) if tokenizer else None,
        tokenizer_sha256=tok_sha,
        run_id=new_run_id(),
        text=None if text is None else text_record(text),
        inputs=tuple(os.fspath(p) for p in inputs),
    )
    _check_existing(opts, outputs, record)
    return Run(opts, inputs, resolved.eos_id, text, outputs, record, resolve_workers(opts.run.workers))


def _text_spec(opts: PackOptions, spec: ResolvedText) -> ResolvedText:
    """The text step's settings, checked; compat truncates long prompt-completion rows as Bridge does while
    it tokenizes: to the max length, + 1 with a pad multiple > 1 (``tokenize_dataset``'s stored length)."""
    compat = opts.bridge_compat
    max_length = (opts.max_seq_length + int(opts.size.pad_seq_to_mult > 1)) if compat else None
    return checked_text(spec, opts.input, compat=compat, max_length=max_length)


def _check_existing(opts: PackOptions, outputs: Outputs, record: PackRecord) -> None:
    packed, meta_path = outputs.packed, outputs.metadata
    if packed.exists() and not opts.run.overwrite:
        raise UsageError(f"{packed}: already exists (pass {param('overwrite')} to replace it)")
    # one set per split and size, one file or the ray engine's directory of shards, never both: the sidecar
    # holds one entry for it, the printed overrides name one path (--overwrite replaces either with the other)
    sharded = outputs.sharded
    if sharded is not None and sharded.exists() and not opts.run.overwrite:
        raise UsageError(
            f"{sharded}: already exists, this split's packs as a directory of shards "
            f"(pass {param('overwrite')} to replace it)"
        )
    if not meta_path.exists():
        return
    for entry in PackingMetadata.read(meta_path).entries:
        other = entry.record
        if other is None or other.get("split") == opts.run.split:
            continue
        for key in _SPLIT_AGREEMENT:
            if other.get(key) != getattr(record, key):
                raise UsageError(
                    f"{meta_path}: the {other.get('split')} split was packed with {key}={other.get(key)!r}, "
                    f"this run has {getattr(record, key)!r}; use another {param('out_dir')} directory"
                )


def plan_packs(opts: PackOptions, lengths: np.ndarray) -> PackPlan:
    """The one plan of a run over all its runtime lengths, in input order: the local pipeline's and the
    ray engine's (which gathers the lengths in this same order, so both make the same packs)."""
    return pack_lengths(
        lengths,
        opts.size.pack_size,
        algorithm=opts.algorithm,
        seed=opts.packing_seed,
        cost=opts.size.cost_model,
    )


def cost_model_record(opts: PackOptions) -> dict[str, Any] | None:
    """The cost model the balanced algorithm evened packs under (``None`` for any other algorithm)."""
    return (opts.size.cost_model or CostModel.default()).to_record() if opts.algorithm == BALANCED else None
