"""The hash kernel against a plain-Python statement of the algorithm, and its token checks.

Recorded fingerprints are compared with ones computed years later: a faster kernel (the one readers now
run in their validation pass) must give the same hashes bit for bit. The reference below follows the
module docstring of ``seqpack.fingerprint._hash`` with Python integers mod 2**64, one token at a time.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from seqpack.fingerprint import _hash

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


def reference(packs: list[tuple[list[int], list[int], list[int]]], eos: int) -> tuple[list, list, list, list]:
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
            kind = [0, 0, 0, 0]
            for j in range(a, b):
                bit = int(mask[j] != 0)
                h[0] = _token_step(h[0], ids[j] & M64, int(_hash._MUL_TOK1))
                h[1] = _token_step(h[1], ids[j] & M64, int(_hash._MUL_TOK2))
                h[2] = _token_step(h[2], bit, int(_hash._MUL_MASK1))
                h[3] = _token_step(h[3], bit, int(_hash._MUL_MASK2))
                if bit:
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
    offsets = np.cumsum([0] + [len(ids) for ids, _, _ in packs]).astype(np.int64)
    start_offsets = np.cumsum([0] + [len(starts) for _, _, starts in packs]).astype(np.int64)
    ids = np.array([t for p in packs for t in p[0]], dtype=np.int64)
    mask = np.array([m for p in packs for m in p[1]], dtype=np.int8)
    starts = np.array([s for p in packs for s in p[2]], dtype=np.int64)
    return ids, offsets, mask, offsets.copy(), starts, start_offsets


@st.composite
def pack_lists(draw: st.DrawFn) -> list[tuple[list[int], list[int], list[int]]]:
    """Packs of 1-4 sequences (some empty, as non-strict readers allow), ids from a small alphabet so that
    EOS inputs and EOS labels inside supervised spans occur."""
    packs = []
    for _ in range(draw(st.integers(1, 4))):
        lengths = draw(st.lists(st.integers(0, 9), min_size=1, max_size=4).filter(lambda x: x[0] > 0))
        ids = draw(st.lists(st.integers(0, 6), min_size=sum(lengths), max_size=sum(lengths)))
        mask = draw(st.lists(st.integers(0, 1), min_size=sum(lengths), max_size=sum(lengths)))
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).tolist()
        packs.append((ids, mask, starts))
    return packs


@settings(max_examples=60)
@given(packs=pack_lists(), eos=st.sampled_from([-1, 2, 5]))
def test_the_kernel_gives_the_reference_hashes(packs: list, eos: int) -> None:
    args = _csr(packs)
    (seq_hashes, seq_lengths, seq_kinds, pack_hashes, _), (bad, top) = _hash.hash_and_check_packs(
        *args, eos, 2**32 - 1
    )
    seqs, lengths, kinds, expected_packs = reference(packs, eos)
    assert seq_hashes.tolist() == seqs
    assert seq_lengths.tolist() == lengths and seq_kinds.tolist() == kinds
    assert pack_hashes.tolist() == expected_packs
    assert (bad, top) == (False, max(args[0].tolist(), default=0))


def test_the_token_checks_find_what_the_reader_refuses() -> None:
    """An id outside [0, max_id], or a mask byte other than 0/1 (2, -1), anywhere in the block: ``bad``;
    the reader's own scan then names the row and position."""
    packs = [([5, 2, 7, 2], [1, 0, 1, 0], [0, 2]), ([3, 4, 2], [0, 1, 0], [0])]
    ids, offsets, mask, mask_offsets, starts, start_offsets = _csr(packs)
    assert _hash.hash_and_check_packs(ids, offsets, mask, mask_offsets, starts, start_offsets, 2, 7)[1] == (
        False,
        7,
    )
    for position in range(ids.size):
        for value, limit in ((8, 7), (-3, 7)):
            changed = ids.copy()
            changed[position] = value
            found = _hash.hash_and_check_packs(
                changed, offsets, mask, mask_offsets, starts, start_offsets, 2, limit
            )
            assert found[1][0], (position, value)
        for byte in (2, -1):
            changed_mask = mask.copy()
            changed_mask[position] = byte
            found = _hash.hash_and_check_packs(
                ids, offsets, changed_mask, mask_offsets, starts, start_offsets, 2, 7
            )
            assert found[1][0], (position, byte)
    assert not _hash.hash_and_check_packs(ids, offsets, mask, mask_offsets, starts, start_offsets, 2, -1)[1][
        0
    ]
