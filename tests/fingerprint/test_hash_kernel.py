"""The hash kernel against a plain-Python statement of each algorithm, and its token checks.

Recorded fingerprints are compared with ones computed years later: a faster kernel (the one readers now
run in their validation pass) must give the same hashes bit for bit. The references below follow the
module docstring of ``bridgepack.fingerprint._hash`` with Python integers mod 2**64: fp2 one token at a
time, fp3 eight tokens a step.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridgepack.fingerprint import _hash
from bridgepack.fingerprint._fingerprint import _kernel_input

M64 = (1 << 64) - 1


def _mix(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def _step(h: int, value: int) -> int:
    return _mix(((h ^ value) * int(_hash._MUL)) & M64)


def _token_step(h: int, value: int, mul: int) -> int:
    x = ((h ^ value) * mul) & M64
    return x ^ (x >> 32)


def _fold(x: int) -> int:
    return x ^ (x >> 32)


def _rot32(x: int) -> int:
    return ((x << 32) | (x >> 32)) & M64


def fp2_states(h: list[int], ids: list[int], mask: list[int]) -> list[int]:
    """fp2: each token and mask bit (``mask != 0``) one step of each state."""
    for value, byte in zip(ids, mask, strict=True):
        bit = int(byte != 0)
        h[0] = _token_step(h[0], value & M64, int(_hash._MUL_TOK1))
        h[1] = _token_step(h[1], value & M64, int(_hash._MUL_TOK2))
        h[2] = _token_step(h[2], bit, int(_hash._MUL_MASK1))
        h[3] = _token_step(h[3], bit, int(_hash._MUL_MASK2))
    return h


def fp3_states(h: list[int], ids: list[int], mask: list[int]) -> list[int]:
    """fp3: eight tokens a step (zeros past the end): four paired words, one little-endian mask word."""
    k0, k1, k2, k3 = (int(k) for k in (_hash._K0, _hash._K1, _hash._K2, _hash._K3))
    for i in range(0, len(ids), 8):
        v = [x & M64 for x in ids[i : i + 8]] + [0] * (8 - len(ids[i : i + 8]))
        b = [x & 0xFF for x in mask[i : i + 8]]
        w = [v[2 * j] ^ _rot32(v[2 * j + 1]) for j in range(4)]
        word = sum(byte << (8 * j) for j, byte in enumerate(b))
        h[0] = _fold(((h[0] ^ w[0]) * k0 + w[1] * k1 + w[2] * k2 + w[3] * k3) & M64)
        h[1] = _fold(((h[1] ^ w[3]) * k1 + w[2] * k0 + w[1] * k3 + w[0] * k2) & M64)
        h[2] = _fold(((h[2] ^ word) * int(_hash._KM1)) & M64)
        h[3] = _fold(((h[3] ^ word) * int(_hash._KM2)) & M64)
    return h


STATES = {_hash.FP2: fp2_states, _hash.FP3: fp3_states}


def reference(
    packs: list[tuple[list[int], list[int], list[int]]], eos: int, algorithm: int
) -> tuple[list, list, list, list]:
    """(seq hashes, lengths, kinds, pack hashes) of ``packs`` (ids, mask, starts), as the docstring says."""
    seqs, lengths, kinds, pack_hashes = [], [], [], []
    for ids, mask, starts in packs:
        ptok = int(_hash._SEED_TOK1) ^ len(ids)
        pmask = int(_hash._SEED_MASK1) ^ len(ids)
        pstart = int(_hash._SEED_STARTS) ^ len(starts)
        for k, a in enumerate(starts):
            pstart = _step(pstart, a)
            b = starts[k + 1] if k + 1 < len(starts) else len(ids)
            n = b - a
            h = [
                int(seed) ^ n
                for seed in (_hash._SEED_TOK1, _hash._SEED_TOK2, _hash._SEED_MASK1, _hash._SEED_MASK2)
            ]
            h = STATES[algorithm](h, ids[a:b], mask[a:b])
            kind = [0, 0, 0, 0]
            for j in range(a, b):
                if mask[j] != 0:
                    if j == b - 1:
                        kind[0] += 1
                    elif eos >= 0 and ids[j] == eos:
                        kind[1] += 1
                    elif eos >= 0 and ids[j + 1] == eos:
                        kind[2] += 1
                    else:
                        kind[3] += 1
            finished = [_mix(x) for x in h]
            seqs.append(finished)
            lengths.append(n)
            kinds.append(kind)
            ptok = _step(ptok, finished[0])
            pmask = _step(pmask, finished[2])
        pack_hashes.append([_mix(ptok), _mix(pmask), _mix(pstart)])
    return seqs, lengths, kinds, pack_hashes


def _csr(packs: list[tuple[list[int], list[int], list[int]]]) -> tuple[np.ndarray, ...]:
    """The kernel's arguments for ``packs``, as every caller passes them (``_kernel_input``: read-only), so
    the test runs the kernel bridgepack compiles, not a second signature of it."""
    offsets = np.cumsum([0] + [len(ids) for ids, _, _ in packs])
    start_offsets = np.cumsum([0] + [len(starts) for _, _, starts in packs])
    ids = _kernel_input([t for p in packs for t in p[0]], np.int64)
    mask = _kernel_input([m for p in packs for m in p[1]], np.int8)
    starts = _kernel_input([s for p in packs for s in p[2]], np.int64)
    return (
        ids,
        _kernel_input(offsets, np.int64),
        mask,
        _kernel_input(offsets, np.int64),
        starts,
        _kernel_input(start_offsets, np.int64),
    )


@st.composite
def pack_lists(draw: st.DrawFn) -> list[tuple[list[int], list[int], list[int]]]:
    """Packs of 1-4 sequences (some empty, as non-strict readers allow), ids from a small alphabet so that
    EOS inputs and EOS labels inside supervised spans occur."""
    packs = []
    for _ in range(draw(st.integers(1, 4))):
        lengths = draw(st.lists(st.integers(0, 20), min_size=1, max_size=4).filter(lambda x: x[0] > 0))
        some_ids = st.one_of(st.integers(0, 6), st.integers(0, 2**40))  # both halves of fp3's paired words
        ids = draw(st.lists(some_ids, min_size=sum(lengths), max_size=sum(lengths)))
        mask = draw(st.lists(st.integers(0, 1), min_size=sum(lengths), max_size=sum(lengths)))
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).tolist()
        packs.append((ids, mask, starts))
    return packs


@settings(max_examples=60)
@given(packs=pack_lists(), eos=st.sampled_from([-1, 2, 5]), algorithm=st.sampled_from([_hash.FP2, _hash.FP3]))
def test_the_kernel_gives_the_reference_hashes(packs: list, eos: int, algorithm: int) -> None:
    args = _csr(packs)
    (seq_hashes, seq_lengths, seq_kinds, pack_hashes, _), (bad, top) = _hash.hash_and_check_packs(
        *args, eos, 2**40, algorithm
    )
    seqs, lengths, kinds, expected_packs = reference(packs, eos, algorithm)
    assert seq_hashes.tolist() == seqs
    assert seq_lengths.tolist() == lengths and seq_kinds.tolist() == kinds
    assert pack_hashes.tolist() == expected_packs
    assert (bad, top) == (False, max(args[0].tolist(), default=0))


@pytest.mark.parametrize("algorithm", [_hash.FP2, _hash.FP3])
def test_the_token_checks_find_what_the_reader_refuses(algorithm: int) -> None:
    """An id outside [0, max_id], or a mask byte other than 0/1 (2, -1, 16), anywhere in the block (in fp3's
    full eight-token steps and in its last partial one): ``bad``; the reader's own scan then names the row
    and position."""
    long_ids = [5, 3, 4, 6, 1, 0, 3, 4, 5, 6, 1, 2, 3, 4, 0, 1, 2, 3, 2]
    packs = [
        ([5, 2, 7, 2], [1, 0, 1, 0], [0, 2]),
        (long_ids, [i % 2 for i in range(19)], [0, 11]),
        ([3, 4, 2], [0, 1, 0], [0]),
    ]
    ids, offsets, mask, mask_offsets, starts, start_offsets = _csr(packs)

    def check(ids: np.ndarray, mask: np.ndarray, limit: int) -> tuple[bool, int]:
        ids, mask = _kernel_input(ids, np.int64), _kernel_input(mask, np.int8)
        found = _hash.hash_and_check_packs(
            ids, offsets, mask, mask_offsets, starts, start_offsets, 2, limit, algorithm
        )
        return found[1]

    assert check(ids, mask, 7) == (False, 7)
    for position in range(ids.size):
        for value, limit in ((8, 7), (-3, 7)):
            changed = ids.copy()
            changed[position] = value
            assert check(changed, mask, limit)[0], (position, value)
        for byte in (2, -1, 16):
            changed_mask = mask.copy()
            changed_mask[position] = byte
            assert check(ids, changed_mask, 7)[0], (position, byte)
    assert not check(ids, mask, -1)[0]


@settings(max_examples=80)
@given(
    ids=st.lists(st.integers(0, 2**40), min_size=1, max_size=40),
    data=st.data(),
    algorithm=st.sampled_from([_hash.FP2, _hash.FP3]),
)
def test_one_changed_token_or_mask_byte_always_changes_the_sequence_hashes(
    ids: list[int], data: st.DataObject, algorithm: int
) -> None:
    """Each step is a bijection of the state and of each word it takes, so a single changed token changes
    both token hashes and a single changed mask value both mask hashes (not merely with high probability)."""
    mask = data.draw(st.lists(st.integers(0, 1), min_size=len(ids), max_size=len(ids)))
    position = data.draw(st.integers(0, len(ids) - 1))
    other_id = data.draw(st.integers(0, 2**40).filter(lambda v: v != ids[position]))

    def hashes(ids: list[int], mask: list[int]) -> list[int]:
        args = _csr([(ids, mask, [0])])
        return _hash.hash_and_check_packs(*args, -1, -1, algorithm)[0][0][0].tolist()

    before = hashes(ids, mask)
    changed_ids = hashes([*ids[:position], other_id, *ids[position + 1 :]], mask)
    flipped = hashes(ids, [*mask[:position], 1 - mask[position], *mask[position + 1 :]])
    assert changed_ids[0] != before[0] and changed_ids[1] != before[1] and changed_ids[2:] == before[2:]
    assert flipped[2] != before[2] and flipped[3] != before[3] and flipped[:2] == before[:2]
