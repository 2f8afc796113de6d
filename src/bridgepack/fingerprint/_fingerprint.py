"""Content fingerprints of packed data: "same data?" and "same packing?" in two short strings.

* ``content`` -- order-independent: a hash of the *multiset* of sequences, each with its loss mask. Two
  packings that put the same samples into different packs (or the same packs in another order) share it;
  one changed token or mask bit changes it. Built as two sums mod 2**64 of per-sequence 64-bit hashes
  (:func:`bridgepack.fingerprint._hash.content_sums`), so it streams in any batch order with O(1) state.
* ``packs`` -- order-dependent: a hash chain over the packs as stored (tokens, mask and ``seq_start_id``
  of each, in file order). Equal ``packs`` means byte-for-byte the same packing.

Both are 128-bit hex strings tagged with :data:`FINGERPRINT_ALGORITHM`, so a stored fingerprint is
always compared with one computed by its own algorithm: a record of an earlier one this package still
computes (:data:`CHECKABLE_ALGORITHMS`) is checked with it, one of another is never compared.
``bridgepack pack`` writes them into its metadata record (``"bridgepack": {"fingerprint": {...}}``), and CI
can assert "same data, same packing" without reading the packs again.

This package is a leaf (numpy and numba only): the pack writer hashes row groups with it as it writes them,
and the readers of packed files (:mod:`bridgepack.data.packed._source`) feed it blocks they read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from bridgepack.fingerprint._hash import FP2, FP3, MASK_KINDS, content_sums, hash_and_check_packs, pack_chain

#: Name and version of the fingerprint algorithm, stored beside every fingerprint.
FINGERPRINT_ALGORITHM = "bridgepack-fp3"
#: Every algorithm whose records can be checked: the current one, and fp2 (its per-token step, records of
#: bridgepack before fp3), by the kernel's number for it.
CHECKABLE_ALGORITHMS: dict[str, int] = {FINGERPRINT_ALGORITHM: FP3, "bridgepack-fp2": FP2}
#: Start states of the two independent pack chains.
_CHAIN_SEEDS = (np.uint64(0x243F6A8885A308D3), np.uint64(0x13198A2E03707344))


@dataclass(frozen=True)
class Fingerprint:
    """The two fingerprints of a packed set, with the counts they cover."""

    content: str
    packs: str
    num_sequences: int
    num_packs: int
    num_tokens: int
    num_supervised: int
    algorithm: str = FINGERPRINT_ALGORITHM

    def to_dict(self) -> dict[str, Any]:
        """The record stored under ``"bridgepack": {"fingerprint": ...}`` and printed by ``--format json``."""
        return {
            "algorithm": self.algorithm,
            "content": self.content,
            "packs": self.packs,
            "num_sequences": self.num_sequences,
            "num_packs": self.num_packs,
            "num_tokens": self.num_tokens,
            "num_supervised": self.num_supervised,
        }


def _hex128(a: np.uint64, b: np.uint64) -> str:
    return f"{int(a):016x}{int(b):016x}"


@dataclass(frozen=True)
class BlockHashes:
    """The per-sequence and per-pack hashes of consecutive packs (:func:`hash_block`)."""

    seq_hashes: npt.NDArray[np.uint64]  # (n_seq, 4): tok1, tok2, mask1, mask2
    seq_lengths: npt.NDArray[np.int64]
    seq_kinds: npt.NDArray[np.int32]  # (n_seq, len(MASK_KINDS))
    pack_hashes: npt.NDArray[np.uint64]  # (n_pack, 3): tokens, mask, starts
    pack_nseq: npt.NDArray[np.int64]
    pack_lengths: npt.NDArray[np.int64]
    algorithm: str = FINGERPRINT_ALGORITHM

    @property
    def num_tokens(self) -> int:
        return int(self.pack_lengths.sum())


class CsrPacks(Protocol):
    """Consecutive packs as three CSR columns (what :class:`bridgepack.data.packed.PackedBlock` holds)."""

    @property
    def input_offsets(self) -> npt.NDArray[Any]: ...
    @property
    def input_ids(self) -> npt.NDArray[Any]: ...
    @property
    def mask_offsets(self) -> npt.NDArray[Any]: ...
    @property
    def loss_mask(self) -> npt.NDArray[Any]: ...
    @property
    def start_offsets(self) -> npt.NDArray[Any]: ...
    @property
    def seq_start_id(self) -> npt.NDArray[Any]: ...


class _Columns(NamedTuple):
    """Three CSR columns given one by one (the pack writer's), shaped as :class:`CsrPacks`."""

    input_offsets: npt.NDArray[Any]
    input_ids: npt.NDArray[Any]
    mask_offsets: npt.NDArray[Any]
    loss_mask: npt.NDArray[Any]
    start_offsets: npt.NDArray[Any]
    seq_start_id: npt.NDArray[Any]


def hash_block(
    input_offsets: npt.NDArray[np.integer[Any]],
    input_ids: npt.NDArray[np.integer[Any]],
    mask_offsets: npt.NDArray[np.integer[Any]],
    loss_mask: npt.NDArray[Any],
    start_offsets: npt.NDArray[np.integer[Any]],
    seq_start_id: npt.NDArray[np.integer[Any]],
    eos_id: int = -1,
    algorithm: str = FINGERPRINT_ALGORITHM,
) -> BlockHashes:
    """Hash consecutive packs given as three CSR columns; independent of any other block, so blocks can
    be hashed on several threads and added to a :class:`PackedFingerprinter` in order."""
    columns = _Columns(input_offsets, input_ids, mask_offsets, loss_mask, start_offsets, seq_start_id)
    return hash_and_check_block(columns, eos_id=eos_id, algorithm=algorithm)[0]


def _kernel_input(values: npt.ArrayLike, dtype: type[np.generic]) -> npt.NDArray[Any]:
    """``values`` as :func:`hash_and_check_packs` takes them: contiguous, of ``dtype``, read-only. A reader's
    columns are Arrow's read-only buffers and the pack writer's are its own arrays; numba compiles the kernel
    once per mix of the two (~5 s each on a machine's first pack and first inspect), so every caller passes
    one kind."""
    array = np.ascontiguousarray(values, dtype=dtype)
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


def hash_and_check_block(
    block: CsrPacks, *, eos_id: int = -1, max_id: int = -1, algorithm: str = FINGERPRINT_ALGORITHM
) -> tuple[BlockHashes, bool, int]:
    """:func:`hash_block` of ``block`` and, in the same pass over its tokens, a reader's token checks:
    ``(hashes, bad, largest id)``, ``bad`` when an id lies outside ``[0, max_id]`` or a mask value is not
    0/1 (``max_id < 0``: nothing is checked); see :func:`bridgepack.fingerprint._hash.hash_and_check_packs`.
    ``algorithm``: one of :data:`CHECKABLE_ALGORITHMS`."""
    hashes, (bad, top) = hash_and_check_packs(
        _kernel_input(block.input_ids, np.int64),
        _kernel_input(block.input_offsets, np.int64),
        _kernel_input(block.loss_mask, np.int8),
        _kernel_input(block.mask_offsets, np.int64),
        _kernel_input(block.seq_start_id, np.int64),
        _kernel_input(block.start_offsets, np.int64),
        int(eos_id),
        int(max_id),
        CHECKABLE_ALGORITHMS[algorithm],
    )
    seq_hashes, seq_lengths, seq_kinds, pack_hashes, pack_nseq = hashes
    offsets = np.asarray(block.input_offsets, dtype=np.int64)
    pack_lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    found = BlockHashes(seq_hashes, seq_lengths, seq_kinds, pack_hashes, pack_nseq, pack_lengths, algorithm)
    return found, bool(bad), int(top)


@dataclass
class PackedFingerprinter:
    """Fingerprints computed incrementally, block by block, in the order the packs are stored.

    The pack writer feeds each row group's hashes as it writes it (:meth:`add`), so fingerprinting costs
    no second read. With ``keep_sequences=True`` the per-sequence hashes are also kept (what ``bridgepack
    diff``
    compares): 8 + 8 + 8 + 16 bytes per sequence, never the tokens.
    """

    eos_id: int = -1
    keep_sequences: bool = False
    #: What the fingerprints are computed with (one of :data:`CHECKABLE_ALGORITHMS`; a reader checking a
    #: record of an earlier algorithm asks for that one).
    algorithm: str = FINGERPRINT_ALGORITHM
    #: Keep the per-pack hashes (24 bytes a pack), so that shards fingerprinted apart can be folded into
    #: one set's fingerprint in pack order (:meth:`merge`).
    keep_packs: bool = False
    _c1: np.uint64 = field(default_factory=lambda: np.uint64(0))
    _c2: np.uint64 = field(default_factory=lambda: np.uint64(0))
    _chain1: np.uint64 = _CHAIN_SEEDS[0]
    _chain2: np.uint64 = _CHAIN_SEEDS[1]
    _counts: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # seqs, packs, tokens, supervised
    _seq_parts: list[tuple[npt.NDArray[Any], ...]] = field(default_factory=list)
    _pack_parts: list[tuple[npt.NDArray[Any], ...]] = field(default_factory=list)

    def add(self, block: BlockHashes) -> None:
        """Add the next packs' hashes (:func:`hash_block`, which may run on another thread), in order."""
        if block.algorithm != self.algorithm:
            raise ValueError(f"hashes of {block.algorithm} added to a {self.algorithm} fingerprint")
        c1, c2 = content_sums(block.seq_hashes)
        with np.errstate(over="ignore"):
            self._c1 = np.uint64(self._c1 + np.uint64(c1))
            self._c2 = np.uint64(self._c2 + np.uint64(c2))
        self._chain1 = np.uint64(pack_chain(self._chain1, block.pack_hashes))
        self._chain2 = np.uint64(pack_chain(self._chain2, block.pack_hashes))
        self._counts[0] += len(block.seq_lengths)
        self._counts[1] += len(block.pack_nseq)
        self._counts[2] += block.num_tokens
        self._counts[3] += int(block.seq_kinds.sum(dtype=np.int64))
        if self.keep_sequences:
            self._seq_parts.append(
                (block.seq_hashes[:, 0], block.seq_hashes[:, 2], block.seq_lengths, block.seq_kinds)
            )
            self._pack_parts.append((block.pack_hashes, block.pack_nseq, block.pack_lengths))
        elif self.keep_packs:
            self._pack_parts.append((block.pack_hashes,))

    def update_block(self, block: CsrPacks) -> None:
        """Add a block read by :class:`bridgepack.data.packed.PackedReader` (already validated)."""
        self.add(hash_and_check_block(block, eos_id=self.eos_id, algorithm=self.algorithm)[0])

    def pack_hashes(self) -> npt.NDArray[np.uint64]:
        """The kept per-pack hashes (``keep_packs`` or ``keep_sequences``), shape ``(packs, 3)``."""
        return _cat([p[0] for p in self._pack_parts], np.uint64, (0, 3))

    def state(self) -> dict[str, Any]:
        """The order-free part of the fingerprints as plain ints (JSON-safe): the content sums and counts."""
        return {"content": [int(self._c1), int(self._c2)], "counts": list(self._counts)}

    def merge(self, state: dict[str, Any], pack_hashes: npt.NDArray[np.uint64]) -> None:
        """Append a shard fingerprinted apart (its :meth:`state` and :meth:`pack_hashes`) after the packs
        added so far: the content sums add up, the pack chain runs on over the shard's packs, so merging
        shards in name order gives the fingerprint of reading them one after another."""
        c1, c2 = (np.uint64(v) for v in state["content"])
        with np.errstate(over="ignore"):
            self._c1 = np.uint64(self._c1 + c1)
            self._c2 = np.uint64(self._c2 + c2)
        hashes = np.ascontiguousarray(pack_hashes, dtype=np.uint64).reshape(-1, 3)
        self._chain1 = np.uint64(pack_chain(self._chain1, hashes))
        self._chain2 = np.uint64(pack_chain(self._chain2, hashes))
        for i, value in enumerate(state["counts"]):
            self._counts[i] += int(value)

    def result(self) -> Fingerprint:
        """The fingerprints of everything added so far."""
        return Fingerprint(
            content=_hex128(self._c1, self._c2),
            packs=_hex128(self._chain1, self._chain2),
            num_sequences=self._counts[0],
            num_packs=self._counts[1],
            num_tokens=self._counts[2],
            num_supervised=self._counts[3],
            algorithm=self.algorithm,
        )

    def tables(self) -> tuple[SequenceTable, PackTable]:
        """The kept per-sequence and per-pack hashes (``keep_sequences=True``), concatenated."""
        seq_parts, pack_parts = self._seq_parts, self._pack_parts
        seqs = SequenceTable(
            tok=_cat([p[0] for p in seq_parts], np.uint64),
            mask=_cat([p[1] for p in seq_parts], np.uint64),
            length=_cat([p[2] for p in seq_parts], np.int64),
            kinds=_cat([p[3] for p in seq_parts], np.int32, (0, len(MASK_KINDS))),
        )
        packs = PackTable(
            hashes=_cat([p[0] for p in pack_parts], np.uint64, (0, 3)),
            nseq=_cat([p[1] for p in pack_parts], np.int64),
            length=_cat([p[2] for p in pack_parts], np.int64),
        )
        return seqs, packs


def _cat(parts: list[npt.NDArray[Any]], dtype: Any, empty: tuple[int, ...] = (0,)) -> npt.NDArray[Any]:
    return np.concatenate(parts) if parts else np.zeros(empty, dtype=dtype)


@dataclass(frozen=True)
class SequenceTable:
    """Per-sequence hashes in stored order: token hash, mask hash, stored length, supervised kinds."""

    tok: npt.NDArray[np.uint64]
    mask: npt.NDArray[np.uint64]
    length: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.int32]


@dataclass(frozen=True)
class PackTable:
    """Per-pack hashes (tokens, mask, starts), sequence counts and stored lengths, in stored order."""

    hashes: npt.NDArray[np.uint64]
    nseq: npt.NDArray[np.int64]
    length: npt.NDArray[np.int64]
