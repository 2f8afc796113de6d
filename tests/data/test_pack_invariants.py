"""Invariants of the pack pipeline on random datasets: every sample packed exactly once, intact.

The expected stored pieces are computed here from the rules of bridge-format §2 and ``docs/pack.md`` (reject,
truncate, split, pre-pad), independently of the pipeline's vectorised code.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from _support.pack_inputs import EOS, random_examples, read_rows, write_jsonl
from bridgepack.data.pipeline import PackOptions, TooLong, pack_files
from bridgepack.packing import ALGORITHMS


def expected_pieces(
    ids: list[int], mask: list[int], max_len: int, mult: int, too_long: TooLong
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The stored pieces one sample becomes (ids, mask before the roll)."""
    cap = max_len // mult * mult
    runtime = len(ids) - 1
    if runtime <= cap:
        pieces = [(ids, mask)]
    elif too_long is TooLong.reject:
        return []
    elif too_long is TooLong.truncate:
        # the EOS is a target only when the cut is inside a trained span (its first dropped token is one)
        pieces = [(ids[:cap] + ids[-1:], [*mask[:cap], mask[-1] if mask[cap] else 0])]
    else:
        pieces = [(ids[k : k + cap + 1], mask[k : k + cap + 1]) for k in range(0, runtime, cap)]
    out = []
    for p_ids, p_mask in pieces:
        pad = -(-(len(p_ids) - 1) // mult) * mult + 1 - len(p_ids)
        out.append((tuple(p_ids + [EOS] * pad), tuple(p_mask + [0] * pad)))
    return out


@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 60),
    pack_size=st.integers(8, 80),
    mult=st.sampled_from([1, 2, 4]),
    too_long=st.sampled_from(list(TooLong)),
    algorithm=st.sampled_from(ALGORITHMS),
)
def test_every_sample_once_intact_and_within_capacity(
    tmp_path_factory: object, seed: int, n: int, pack_size: int, mult: int, too_long: TooLong, algorithm: str
) -> None:
    tmp = Path(tmp_path_factory.mktemp("inv"))  # type: ignore[attr-defined]
    rng = np.random.default_rng(seed)
    examples = random_examples(rng, n, int(pack_size * 1.5))
    source = write_jsonl(tmp / "in.jsonl", examples)
    opts = PackOptions.from_flat(
        [source],
        tmp / "out",
        pack_size,
        pad_seq_to_mult=mult,
        too_long=too_long,
        algorithm=algorithm,
        workers=1,
        quiet=True,
        seed=seed,
        chunk_rows=7,
    )
    # A piece as it must appear packed: its ids, and its input mask without token 0's (unused) flag,
    # which the roll moves one position left and ends with 0.
    expected = Counter(
        (p_ids, p_mask[1:])
        for e in examples
        for p_ids, p_mask in expected_pieces(e["input_ids"], e["loss_mask"], pack_size, mult, too_long)
    )
    if not expected:
        return
    result = pack_files(opts)
    got: Counter[tuple[tuple[int, ...], tuple[int, ...]]] = Counter()
    for row in read_rows(result.packed_path):
        ids, mask, starts = row["input_ids"], row["loss_mask"], row["seq_start_id"]
        assert starts[0] == 0 and len(mask) == len(ids)
        bounds = [*starts, len(ids)]
        assert (
            sum(b - a - 1 for a, b in itertools.pairwise(bounds)) <= pack_size
        )  # capacity in runtime tokens
        for a, b in itertools.pairwise(bounds):
            assert b > a and (b - a - 1) % mult == 0
            assert mask[b - 1] == 0  # the last stored position of every sequence
            got[(tuple(ids[a:b]), tuple(mask[a : b - 1]))] += 1
    assert got == expected
