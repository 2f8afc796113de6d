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

Two algorithms (their names in :mod:`bridgepack.fingerprint._fingerprint`), which differ only in how a
sequence's tokens and mask bytes enter its four states:

* ``bridgepack-fp3`` (:data:`FP3`, written today) takes eight tokens a step. The ids are paired into four
  words ``w = v[2i] ^ rot32(v[2i+1])`` and each token state takes ``h = fold((h ^ w0) * K0 + w1 * K1 + w2 *
  K2 + w3 * K3)`` (the second state with the words in reverse order and its own constants), with ``fold(x) =
  x ^ (x >> 32)``; the eight mask bytes form one little-endian word ``m`` and each mask state takes ``h =
  fold((h ^ m) * K)``. A last partial step fills missing positions with zeros (the length seeds the states,
  so that is unambiguous). For fixed other inputs every step is a bijection of ``h`` and of each word, so a
  sequence differing in any single token or mask byte always ends in a different state. It costs a quarter
  of fp2's arithmetic: the multiplies of one step are independent, and the dependency chain is one per eight
  tokens, not one per token (``benchmarks/inspect_check.py``).
* ``bridgepack-fp2`` (:data:`FP2`, records written before it) takes one token a step in each of the four
  states, ``h = fold((h ^ value) * M)``, the mask states on ``mask != 0``. Kept to check those records.

Each sequence's states are then finished by SplitMix64's mixer. Pack hashes chain the finished
per-sequence hashes (and the start offsets), so they cost nothing per token. Deterministic across runs,
machines and numba versions (integer arithmetic modulo 2**64 only).
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
# Odd multipliers of fp3's eight-token step: the four words of the token states, the two mask states.
_K0 = np.uint64(0x9FB21C651E98DF25)
_K1 = np.uint64(0xC6A4A7935BD1E995)
_K2 = np.uint64(0xD6E8FEB86659FD93)
_K3 = np.uint64(0xA0761D6478BD642F)
_KM1 = np.uint64(0xFF51AFD7ED558CCD)
_KM2 = np.uint64(0xC4CEB9FE1A85EC53)
_ONES = np.uint64(0x0101010101010101)  # bit 0 of every byte

#: The algorithms :func:`hash_and_check_packs` computes (``algorithm``).
FP2 = 2
FP3 = 3


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


@numba.njit(cache=True, inline="always")
def _fold(x: np.uint64) -> np.uint64:
    return x ^ (x >> np.uint64(32))


@numba.njit(cache=True, inline="always")
def _pair(low: np.int64, high: np.int64) -> np.uint64:
    """Two ids in one word: ``low ^ rot32(high)`` (a bijection of each for a fixed other)."""
    x = np.uint64(high)
    return np.uint64(low) ^ ((x << np.uint64(32)) | (x >> np.uint64(32)))


@numba.njit(cache=True, inline="always")
def _byte(value: np.int8, shift: int) -> np.uint64:
    return np.uint64(np.uint8(value)) << np.uint64(shift)


@numba.njit(cache=True, inline="always")
def _nonzero_bytes(word: np.uint64) -> np.uint64:
    """How many of the eight bytes of ``word`` are not zero (each byte's bits ORed into its bit 0)."""
    x = word | (word >> np.uint64(4))
    x |= x >> np.uint64(2)
    x |= x >> np.uint64(1)
    return ((x & _ONES) * _ONES) >> np.uint64(56)


@numba.njit(cache=True, inline="always")
def _id_at(ids: npt.NDArray[np.int64], i: int) -> np.int64:
    """``ids[i]``, zero past the end (fp3's last partial step)."""
    return ids[i] if i < ids.shape[0] else np.int64(0)


@numba.njit(cache=True, inline="always")
def _mask_word(mask: npt.NDArray[np.int8], i: int) -> np.uint64:
    """The mask bytes ``i .. i+7`` as one little-endian word, zero past the end."""
    n = mask.shape[0]
    if i + 8 <= n:
        return (
            _byte(mask[i], 0)
            | _byte(mask[i + 1], 8)
            | _byte(mask[i + 2], 16)
            | _byte(mask[i + 3], 24)
            | _byte(mask[i + 4], 32)
            | _byte(mask[i + 5], 40)
            | _byte(mask[i + 6], 48)
            | _byte(mask[i + 7], 56)
        )
    word = np.uint64(0)
    for j in range(i, n):
        word |= _byte(mask[j], 8 * (j - i))
    return word


@numba.njit(cache=True, inline="always")
def _absorb_fp3(
    ids: npt.NDArray[np.int64],
    mask: npt.NDArray[np.int8],
    t1: np.uint64,
    t2: np.uint64,
    m1: np.uint64,
    m2: np.uint64,
) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64, np.uint64, np.uint64, np.uint64]:
    """fp3's steps over one sequence: the four states, and the checks' largest id, ORed mask bytes and
    count of supervised (non-zero) positions, from one load of each token."""
    n = ids.shape[0]
    high = np.uint64(0)
    bits = np.uint64(0)
    supervised = np.uint64(0)
    full = n - n % 8
    for i in range(0, n, 8):
        if i < full:
            w0 = _pair(ids[i], ids[i + 1])
            w1 = _pair(ids[i + 2], ids[i + 3])
            w2 = _pair(ids[i + 4], ids[i + 5])
            w3 = _pair(ids[i + 6], ids[i + 7])
            high = max(
                high,
                max(
                    max(
                        max(np.uint64(ids[i]), np.uint64(ids[i + 1])),
                        max(np.uint64(ids[i + 2]), np.uint64(ids[i + 3])),
                    ),
                    max(
                        max(np.uint64(ids[i + 4]), np.uint64(ids[i + 5])),
                        max(np.uint64(ids[i + 6]), np.uint64(ids[i + 7])),
                    ),
                ),
            )
        else:
            w0 = _pair(_id_at(ids, i), _id_at(ids, i + 1))
            w1 = _pair(_id_at(ids, i + 2), _id_at(ids, i + 3))
            w2 = _pair(_id_at(ids, i + 4), _id_at(ids, i + 5))
            w3 = _pair(_id_at(ids, i + 6), _id_at(ids, i + 7))
            for j in range(i, n):
                high = max(high, np.uint64(ids[j]))
        word = _mask_word(mask, i)
        bits |= word
        supervised += _nonzero_bytes(word)
        t1 = _fold((t1 ^ w0) * _K0 + w1 * _K1 + w2 * _K2 + w3 * _K3)
        t2 = _fold((t2 ^ w3) * _K1 + w2 * _K0 + w1 * _K3 + w0 * _K2)
        m1 = _fold((m1 ^ word) * _KM1)
        m2 = _fold((m2 ^ word) * _KM2)
    return t1, t2, m1, m2, high, bits, supervised


@numba.njit(cache=True, inline="always")
def _absorb_fp2(
    ids: npt.NDArray[np.int64],
    mask: npt.NDArray[np.int8],
    t1: np.uint64,
    t2: np.uint64,
    m1: np.uint64,
    m2: np.uint64,
) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64, np.uint64, np.uint64, np.uint64]:
    """fp2's steps over one sequence, one token at a time (what :func:`_absorb_fp3` returns)."""
    high = np.uint64(0)
    bits = np.uint64(0)
    supervised = np.uint64(0)
    for i in range(ids.shape[0]):
        value = ids[i]
        byte = mask[i]
        high = max(high, np.uint64(value))
        bits |= np.uint64(np.uint8(byte))
        bit = np.uint64(byte != 0)
        tok = np.uint64(value)
        t1 = _token_step(t1, tok, _MUL_TOK1)
        t2 = _token_step(t2, tok, _MUL_TOK2)
        m1 = _token_step(m1, bit, _MUL_MASK1)
        m2 = _token_step(m2, bit, _MUL_MASK2)
        supervised += bit
    return t1, t2, m1, m2, high, bits, supervised


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
    algorithm: int,
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
    on its offsets (``bridgepack.data.packed.validate_block`` checks them first): the kernel trusts them.

    ``algorithm``: :data:`FP3` or :data:`FP2` (the module docstring).

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
    bits = np.uint64(0)  # every mask byte ORed (bytewise): a bit above bit 0 of a byte is a bad value
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
            # Views indexed from 0 spare numba's negative-index wraparound.
            seq_ids = ids[a:b]
            seq_mask = mask[a + shift : b + shift]
            t1 = _SEED_TOK1 ^ np.uint64(n)
            t2 = _SEED_TOK2 ^ np.uint64(n)
            m1 = _SEED_MASK1 ^ np.uint64(n)
            m2 = _SEED_MASK2 ^ np.uint64(n)
            if algorithm == FP3:
                t1, t2, m1, m2, top, ored, count = _absorb_fp3(seq_ids, seq_mask, t1, t2, m1, m2)
            else:
                t1, t2, m1, m2, top, ored, count = _absorb_fp2(seq_ids, seq_mask, t1, t2, m1, m2)
            high = max(high, top)
            bits |= ored
            supervised_count = np.int64(count)
            # The EOS kinds, only when an EOS is given, take a loop of their own.
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
    bad = max_id >= 0 and (high > np.uint64(max_id) or (bits & ~_ONES) != 0)
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
