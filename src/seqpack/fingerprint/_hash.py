"""Numba kernels that hash packed data straight from Arrow's flat buffers, one pass, no per-token Python.

A packed batch arrives as the three list columns of bridge-format §3, each a flat ``values`` buffer plus row
``offsets``. For every *sequence* (the stored slice ``[seq_start[k], seq_start[k+1])`` of a pack, the last
one running to the end of the pack) the scan computes

* ``tok1, tok2`` -- two independent 64-bit hashes of its token ids (length included);
* ``mask1, mask2`` -- two independent 64-bit hashes of its loss-mask bits (``mask != 0``);
* ``length`` -- its stored length;
* ``kinds[4]`` -- how many supervised positions it has of each kind (:data:`MASK_KINDS`), so a diff can say
  *which* mask positions changed without holding both datasets at once.

and for every *pack* three 64-bit hashes: its tokens, its mask, and its ``seq_start_id`` list.

Worked example (EOS = 2), one pack ``input_ids=[5,6,2 | 7,2]``, ``loss_mask=[0,1,0 | 1,0]``,
``seq_start_id=[0,3]``: two sequences ``[5,6,2]`` and ``[7,2]``; the first has one supervised position
(index 1, whose label is the EOS token: kind ``eos_label``), the second one (index 0, label EOS again).

Per token, each stream takes one cheap step ``h = fold((h ^ v) * M)`` with ``fold(x) = x ^ (x >> 32)``: a
bijection of ``h`` for a fixed input, so a sequence differing in any single token (or bit) always ends in a
different state; each sequence's state is then finished by SplitMix64's mixer. Pack hashes chain the
finished per-sequence hashes (and the start offsets), so they cost nothing per token. Deterministic across
runs, machines and numba versions (integer arithmetic modulo 2**64 only).
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

#: Kinds of loss-mask positions in *stored* packed data, in column order of ``kinds``. Stored
#: ``loss_mask[j]`` supervises the label at ``j`` (token ``j+1``), bridge-format §2, so:
#: ``last`` -- the last stored position of a sequence (Bridge always stores 0 there);
#: ``eos_input`` -- positions whose input token is EOS (what Bridge 0.6.2's collate zeroes);
#: ``eos_label`` -- positions whose label is EOS (supervising the end of a turn);
#: ``other`` -- every other position.
MASK_KINDS: tuple[str, ...] = ("last", "eos_input", "eos_label", "other")

# Seeds of the independent hash streams (arbitrary odd 64-bit constants).
_SEED_TOK1 = np.uint64(0x9E3779B97F4A7C15)
_SEED_TOK2 = np.uint64(0xC2B2AE3D27D4EB4F)
_SEED_MASK1 = np.uint64(0x165667B19E3779F9)
_SEED_MASK2 = np.uint64(0xD6E8FEB86659FD93)
_SEED_STARTS = np.uint64(0xA0761D6478BD642F)
_MUL = np.uint64(0xFF51AFD7ED558CCD)
# Odd multipliers of the four per-token streams (tokens x2, mask bits x2).
_MUL_TOK1 = np.uint64(0x9FB21C651E98DF25)
_MUL_TOK2 = np.uint64(0xC6A4A7935BD1E995)
_MUL_MASK1 = np.uint64(0xD6E8FEB86659FD93)
_MUL_MASK2 = np.uint64(0xA0761D6478BD642F)


@numba.njit(cache=True, inline="always")
def mix64(x: np.uint64) -> np.uint64:
    """SplitMix64's finaliser: a bijection on 64-bit integers with full avalanche."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@numba.njit(cache=True, inline="always")
def _step(h: np.uint64, value: np.uint64) -> np.uint64:
    return mix64((h ^ value) * _MUL)


@numba.njit(cache=True, inline="always")
def _token_step(h: np.uint64, value: np.uint64, mul: np.uint64) -> np.uint64:
    """The per-token step: one multiply and one xor-shift, a bijection of ``h`` for a fixed ``value``."""
    x = (h ^ value) * mul
    return x ^ (x >> np.uint64(32))


@numba.njit(cache=True, nogil=True)  # nogil: row groups are hashed on several threads
def hash_and_check_packs(
    ids: npt.NDArray[np.int64],
    id_offsets: npt.NDArray[np.int64],
    mask: npt.NDArray[np.int8],
    mask_offsets: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    start_offsets: npt.NDArray[np.int64],
    eos_id: int,
    max_id: int,
) -> tuple[
    tuple[
        npt.NDArray[np.uint64],
        npt.NDArray[np.int64],
        npt.NDArray[np.int32],
        npt.NDArray[np.uint64],
        npt.NDArray[np.int64],
    ],
    tuple[bool, int],
]:
    """Hash every sequence and pack of one batch (see the module docstring) and, from the same loads, make
    the token checks a reader makes of every block.

    Returns ``((seq_hashes[n_seq, 4], seq_lengths[n_seq], seq_kinds[n_seq, 4], pack_hashes[n_pack, 3],
    pack_nseq[n_pack]), (bad, largest id))``; ``seq_hashes`` columns are ``tok1, tok2, mask1, mask2``;
    ``eos_id < 0`` means unknown (no position counts as an EOS kind); ``bad`` when an id lies outside
    ``[0, max_id]`` or a mask value is not 0/1 (the caller's own scan then says where; ``max_id < 0`` checks
    nothing); the largest id is 0 for no tokens. The block must satisfy bridge-format §3's row invariants
    on its offsets (``seqpack.data.packed.validate_block`` checks them first): the kernel trusts them.

    One pass instead of three (check, maximum, hash): each token is loaded once, so a reader that checks a
    pack set against its record pays the hash arithmetic alone, never a second read of the tokens.
    """
    n_pack = id_offsets.shape[0] - 1
    n_seq = start_offsets[n_pack] - start_offsets[0]
    seq_hashes = np.empty((n_seq, 4), dtype=np.uint64)
    seq_lengths = np.empty(n_seq, dtype=np.int64)
    seq_kinds = np.zeros((n_seq, 4), dtype=np.int32)
    pack_hashes = np.empty((n_pack, 3), dtype=np.uint64)
    pack_nseq = np.empty(n_pack, dtype=np.int64)
    high = np.uint64(0)  # the largest id, unsigned: a negative id is larger than any max_id
    bits = 0
    s = 0
    for p in range(n_pack):
        lo = id_offsets[p]
        hi = id_offsets[p + 1]
        s_lo = start_offsets[p]
        s_hi = start_offsets[p + 1]
        shift = mask_offsets[p] - lo
        pack_nseq[p] = s_hi - s_lo
        ptok = _SEED_TOK1 ^ np.uint64(hi - lo)
        pmask = _SEED_MASK1 ^ np.uint64(hi - lo)
        pstart = _SEED_STARTS ^ np.uint64(s_hi - s_lo)
        for k in range(s_lo, s_hi):
            pstart = _step(pstart, np.uint64(starts[k]))
            a = lo + starts[k]
            b = lo + starts[k + 1] if k + 1 < s_hi else hi
            n = b - a
            t1 = _SEED_TOK1 ^ np.uint64(n)
            t2 = _SEED_TOK2 ^ np.uint64(n)
            m1 = _SEED_MASK1 ^ np.uint64(n)
            m2 = _SEED_MASK2 ^ np.uint64(n)
            # One load of each token and mask byte, no branch: the checks fold into an unsigned maximum
            # and an OR, the supervised count into a sum (views indexed from 0 spare numba's
            # negative-index wraparound). The EOS kinds, only when an EOS is given, take a loop of their own.
            seq_ids = ids[a:b]
            seq_mask = mask[a + shift : b + shift]
            supervised_count = 0
            for i in range(n):
                value = seq_ids[i]
                byte = seq_mask[i]
                high = max(high, np.uint64(value))
                bits |= byte
                bit = np.uint64(byte != 0)
                tok = np.uint64(value)
                t1 = _token_step(t1, tok, _MUL_TOK1)
                t2 = _token_step(t2, tok, _MUL_TOK2)
                m1 = _token_step(m1, bit, _MUL_MASK1)
                m2 = _token_step(m2, bit, _MUL_MASK2)
                supervised_count += byte != 0
            eos_input = 0
            eos_label = 0
            if eos_id >= 0:
                for i in range(n - 1):  # the last position is its own kind
                    if seq_mask[i] != 0:
                        if seq_ids[i] == eos_id:
                            eos_input += 1
                        elif seq_ids[i + 1] == eos_id:
                            eos_label += 1
            last = 1 if n > 0 and seq_mask[n - 1] != 0 else 0
            other = supervised_count - last - eos_input - eos_label
            seq_kinds[s, 0] = last
            seq_kinds[s, 1] = eos_input
            seq_kinds[s, 2] = eos_label
            seq_kinds[s, 3] = other
            seq_hashes[s, 0] = mix64(t1)
            seq_hashes[s, 1] = mix64(t2)
            seq_hashes[s, 2] = mix64(m1)
            seq_hashes[s, 3] = mix64(m2)
            ptok = _step(ptok, seq_hashes[s, 0])
            pmask = _step(pmask, seq_hashes[s, 2])
            seq_lengths[s] = n
            s += 1
        pack_hashes[p, 0] = mix64(ptok)
        pack_hashes[p, 1] = mix64(pmask)
        pack_hashes[p, 2] = mix64(pstart)
    # A value outside [0, max_id] or a mask byte other than 0/1 is located by the caller's own scan.
    bad = max_id >= 0 and (high > np.uint64(max_id) or (bits & ~1) != 0)
    return (seq_hashes, seq_lengths, seq_kinds, pack_hashes, pack_nseq), (bad, np.int64(high))  # type: ignore[return-value]


@numba.njit(cache=True)
def content_sums(seq_hashes: npt.NDArray[np.uint64]) -> tuple[np.uint64, np.uint64]:
    """Order-independent fold of sequences: two sums mod 2**64 of per-sequence (tokens, mask) hashes.

    A sum is commutative, so any order (and any split into batches) gives the same value; each term mixes
    the token and mask hash first, so moving a mask from one sequence to another changes the sum.
    """
    c1 = np.uint64(0)
    c2 = np.uint64(0)
    for i in range(seq_hashes.shape[0]):
        c1 += mix64(seq_hashes[i, 0] ^ mix64(seq_hashes[i, 2] + _SEED_MASK1))
        c2 += mix64(seq_hashes[i, 1] ^ mix64(seq_hashes[i, 3] + _SEED_MASK2))
    return c1, c2


@numba.njit(cache=True)
def pack_chain(state: np.uint64, pack_hashes: npt.NDArray[np.uint64]) -> np.uint64:
    """Order-dependent fold of packs as stored: a hash chain over (tokens, mask, starts) of each pack."""
    h = state
    for p in range(pack_hashes.shape[0]):
        h = _step(h, pack_hashes[p, 0])
        h = _step(h, pack_hashes[p, 1])
        h = _step(h, pack_hashes[p, 2])
    return h
