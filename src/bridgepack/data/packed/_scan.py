"""One pass over packed blocks: every fact ``inspect``, the doctor and the trainer check, from the offsets.

Each consumer validates and reads the blocks its own way, then hands every block to one
:class:`PackedScan`, which computes the facts once, vectorised (no Python loop per sequence or token)::

    row: ids [a b c EOS | d EOS x EOS]   seq_start_id [0, 4, 6]   loss_mask [0 1 1 0 | 1 0 1 0]
    stored lengths   [4, 2, 2]   ->  runtime (stored - 1) [3, 1, 1]  ->  pack runtime 5
    pad multiple 2   runtime 3, 1, 1 miss it (Bridge pre-pads every sequence to a multiple, bridge-format §2,
    §7) vocab 256        any id >= 256 is out of the model's range
    EOS              an input EOS with loss_mask 1 that is not its sequence's last token sits inside a
                     trained span (Bridge PR #5213); the EOS is the recorded one, else the rows' most common
                     last token

The scan raises nothing: the consumer decides what is an error (the trainer stops at the first bad block,
the doctor counts, ``inspect`` reports), and in which order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from bridgepack.data.packed._reader import PackedBlock, validate_block
from bridgepack.data.packed._source import infer_eos_id
from bridgepack.data.packed._stats import PackedStats, check_pack_capacity


def eos_inside_trained_spans(
    ids: np.ndarray, loss_mask: np.ndarray, starts: np.ndarray, lengths: np.ndarray, eos_id: int
) -> np.ndarray:
    """Flat positions ``j`` with ``ids[j] == eos_id`` and ``loss_mask[j] != 0`` that are not the last token
    of their sequence (``starts``/``lengths``: flat start and stored length of every sequence)."""
    hit = (ids == eos_id) & (loss_mask != 0)
    last = (starts + lengths - 1)[lengths > 0]
    hit[last] = False
    return np.flatnonzero(hit)


@dataclass(frozen=True)
class BlockScan:
    """The facts of one block. Sequence indices are flat (row order); token positions index ``input_ids``."""

    block: PackedBlock
    #: runtime length of every sequence (stored - 1; -1 for a sequence of 0 stored tokens)
    runtime: np.ndarray
    #: runtime tokens of every pack
    pack_runtime: np.ndarray
    #: sequences whose runtime length misses the pad multiple (empty with a multiple of 1)
    multiple_misses: np.ndarray
    #: the largest token id (0 for no tokens)
    max_token_id: int
    #: position of the first id >= the vocabulary size, if any
    over_vocab: int | None
    #: positions of EOS inputs inside trained spans (empty without an EOS id)
    eos_in_spans: np.ndarray

    def sequence_row(self, sequence: int) -> int:
        """The row (within the block) holding flat sequence ``sequence``."""
        return int(np.searchsorted(self.block.start_offsets, sequence, side="right")) - 1

    def token_row(self, position: int) -> int:
        """The row (within the block) holding token ``position``."""
        return int(np.searchsorted(self.block.input_offsets, position, side="right")) - 1


def scan_block(
    block: PackedBlock, *, pad_multiple: int = 1, vocab: int | None = None, eos_id: int | None = None
) -> BlockScan:
    """The facts of one valid block (:func:`~bridgepack.data.packed.validate_block` first)."""
    stored = block.sequence_lengths()
    runtime = stored - 1
    ids = block.input_ids
    max_id = block.max_token_id if block.max_token_id is not None else int(ids.max()) if ids.size else 0
    over = int(np.argmax(ids >= vocab)) if vocab is not None and max_id >= vocab else None
    misses = np.flatnonzero(runtime % pad_multiple) if pad_multiple > 1 else np.zeros(0, np.int64)
    eos_hits = (
        np.zeros(0, np.int64)
        if eos_id is None
        else eos_inside_trained_spans(ids, block.loss_mask, block.sequence_starts(), stored, eos_id)
    )
    return BlockScan(
        block=block,
        runtime=runtime,
        pack_runtime=block.row_lengths() - block.sequences_per_row(),
        multiple_misses=misses,
        max_token_id=max_id,
        over_vocab=over,
        eos_in_spans=eos_hits,
    )


@dataclass
class PackedScan:
    """The facts of a packed set, block by block (:meth:`add`): the statistics ``inspect`` reports, the
    pad-multiple misses the doctor counts, the token-id bound and per-pack sizes the trainer needs, and
    the EOS inputs inside trained spans.

    ``eos_id`` is the recorded EOS; with ``infer_eos`` an unknown one is taken from the first block (the
    rows' most common last token). ``keep_pack_runtime`` keeps every pack's runtime tokens (the trainer's
    sampler needs them; memory: 8 bytes a pack).
    """

    pad_multiple: int = 1
    vocab: int | None = None
    eos_id: int | None = None
    infer_eos: bool = False
    keep_pack_runtime: bool = False
    stats: PackedStats = field(default_factory=PackedStats)
    max_token_id: int = 0
    multiple_misses: int = 0
    #: ``path row R: runtime length L`` of the first sequence that misses the pad multiple
    first_multiple_miss: str | None = None
    eos_in_spans: int = 0
    #: ``path row R, token T`` of the first EOS input inside a trained span
    first_eos_in_span: str | None = None
    pack_runtime: list[np.ndarray] = field(default_factory=list)

    def add(self, block: PackedBlock) -> BlockScan:
        """Scan one valid block and add its facts; the block's own facts are returned for the caller's
        checks."""
        if self.eos_id is None and self.infer_eos:
            self.eos_id = infer_eos_id(block)
        facts = scan_block(block, pad_multiple=self.pad_multiple, vocab=self.vocab, eos_id=self.eos_id)
        self.stats.add(block, facts.runtime, facts.pack_runtime)
        self.max_token_id = max(self.max_token_id, facts.max_token_id)
        if facts.multiple_misses.size:
            if self.first_multiple_miss is None:
                k = int(facts.multiple_misses[0])
                self.first_multiple_miss = (
                    f"{block.path} row {block.first_row + facts.sequence_row(k)}: "
                    f"runtime length {int(facts.runtime[k])}"
                )
            self.multiple_misses += int(facts.multiple_misses.size)
        if facts.eos_in_spans.size:
            if self.first_eos_in_span is None:
                position = int(facts.eos_in_spans[0])
                row = facts.token_row(position)
                column = position - int(block.input_offsets[row])
                self.first_eos_in_span = f"{block.path} row {block.first_row + row}, token {column}"
            self.eos_in_spans += int(facts.eos_in_spans.size)
        if self.keep_pack_runtime:
            self.pack_runtime.append(facts.pack_runtime)
        return facts


def collect_stats(
    blocks: Iterable[PackedBlock], *, pack_size: int | None = None, strict: bool = True
) -> PackedStats:
    """Validate every block (bridge-format §3 invariants) and accumulate :class:`PackedStats`.

    ``strict`` also rejects sequences of 0 stored tokens (a repeated ``seq_start_id``). With ``pack_size``
    a pack whose runtime tokens exceed it is an error naming the row.
    """
    scan = PackedScan()
    for block in blocks:
        validate_block(block, allow_empty_sequences=not strict)
        facts = scan.add(block)
        if pack_size is not None:
            check_pack_capacity(block, pack_size, facts.pack_runtime)
    return scan.stats
