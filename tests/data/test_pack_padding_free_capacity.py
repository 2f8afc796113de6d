"""``--layout padding-free`` counts stored tokens: a row never holds more than ``--pack-size`` tokens.

HF models shift the labels inside the model, so every stored token of an HF row is an input position (Bridge's
rows train on ``stored - 1`` of them). The expected pieces are computed here from the rules in
``docs/pack.md`` on stored lengths, independently of the pipeline's vectorised code.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _support.pack_inputs import EOS, random_examples, read_rows, write_jsonl
from bridgepack.data.packset import read_metadata
from bridgepack.data.pipeline import PackOptions, TooLong, pack_files
from bridgepack.errors import UsageError
from bridgepack.packing import ALGORITHMS

Piece = tuple[tuple[int, ...], tuple[int, ...]]


def hf_pieces(ids: list[int], mask: list[int], max_len: int, mult: int, too_long: TooLong) -> list[Piece]:
    """The stored pieces one sample becomes in the HF layout: the cap counts every stored token."""
    cap = max_len // mult * mult
    if len(ids) <= cap:
        pieces = [(ids, mask)]
    elif too_long is TooLong.reject:
        return []
    elif too_long is TooLong.truncate:
        pieces = [(ids[: cap - 1] + ids[-1:], [*mask[: cap - 1], mask[-1] if mask[cap - 1] else 0])]
    else:  # pieces of cap stored tokens overlapping by one: each (input, next token) pair trained once
        pieces = [(ids[k : k + cap], mask[k : k + cap]) for k in range(0, len(ids) - 1, cap - 1)]
    out = []
    for p_ids, p_mask in pieces:
        pad = -(-len(p_ids) // mult) * mult - len(p_ids)
        out.append((tuple(p_ids + [EOS] * pad), tuple(p_mask + [0] * pad)))
    return out


def _options(tmp: Path, rows: list[dict[str, list[int]]], pack_size: int, **kw: object) -> PackOptions:
    tmp.mkdir(parents=True, exist_ok=True)
    settings: dict[str, object] = {"layout": "hf", "workers": 1, "quiet": True, "chunk_rows": 7, **kw}
    return PackOptions.from_flat([write_jsonl(tmp / "in.jsonl", rows)], tmp / "out", pack_size, **settings)


@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 50),
    pack_size=st.integers(8, 80),
    mult=st.sampled_from([1, 2, 4]),
    short_by=st.integers(0, 5),
    too_long=st.sampled_from(list(TooLong)),
    algorithm=st.sampled_from(ALGORITHMS),
)
def test_hf_rows_fit_the_pack_size_in_stored_tokens(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    n: int,
    pack_size: int,
    mult: int,
    short_by: int,
    too_long: TooLong,
    algorithm: str,
) -> None:
    tmp = tmp_path_factory.mktemp("hf")
    rng = np.random.default_rng(seed)
    examples = random_examples(rng, n, int(pack_size * 1.5))
    max_len = max(pack_size - short_by, mult)  # a cap of at least one pad multiple (else a usage error)
    expected = Counter(
        (p_ids, p_mask[1:])  # token 0's flag is never a label (nothing predicts it)
        for e in examples
        for p_ids, p_mask in hf_pieces(e["input_ids"], e["loss_mask"], max_len, mult, too_long)
    )
    if not expected:
        return
    opts = _options(
        tmp,
        examples,
        pack_size,
        max_seq_length=max_len,
        pad_seq_to_mult=mult,
        too_long=too_long,
        algorithm=algorithm,
        seed=seed,
    )
    result = pack_files(opts)
    got: Counter[Piece] = Counter()
    longest, row_sums = 0, []
    for row in read_rows(result.packed_path):
        ids, labels, lengths = row["input_ids"], row["labels"], row["seq_lengths"]
        assert len(ids) == sum(lengths) <= pack_size  # the row, every stored token counted
        bounds = [0, *itertools.accumulate(lengths)]
        for a, b in itertools.pairwise(bounds):
            assert (b - a) % mult == 0 and b - a <= max_len // mult * mult
            assert row["position_ids"][a:b] == list(range(b - a))
            got[(tuple(ids[a:b]), tuple(int(x != -100) for x in labels[a + 1 : b]))] += 1
        longest, row_sums = max(longest, *lengths), [*row_sums, len(ids)]
    assert got == expected
    [entry] = read_metadata(result.metadata_path)
    # Bridge's statistics, in stored tokens here.
    assert (entry["dataset_max_seqlen"], entry["min_packed_seqlen"]) == (longest, min(row_sums))
    for line in (tmp / "out" / "rejects_training.jsonl").read_bytes().splitlines():
        record = orjson.loads(line)
        stored = len(examples[record["line"] - 1]["input_ids"])
        assert record["length"] == stored and record["reason"].startswith(f"too long: {stored} tokens > ")


def test_hf_row_holds_pack_size_tokens_where_bridge_holds_one_more_per_sequence(tmp_path: Path) -> None:
    """Two samples of 4 stored tokens: Bridge fits both in N = 6 (runtime 3 + 3), HF needs N = 8."""
    rows = [{"input_ids": [7, 8, 9, EOS]}, {"input_ids": [4, 5, 6, EOS]}]
    bridge = pack_files(_options(tmp_path / "b", rows, 6, layout="bridge"))
    assert (bridge.num_packs, bridge.runtime_tokens) == (1, 6)
    hf = pack_files(_options(tmp_path / "h", rows, 6))
    assert hf.num_packs == 2 and [len(r["input_ids"]) for r in read_rows(hf.packed_path)] == [4, 4]
    assert pack_files(_options(tmp_path / "h8", rows, 8)).num_packs == 1


def test_hf_refuses_bridge_compat_and_one_token_split_pieces(tmp_path: Path) -> None:
    rows = [{"input_ids": [7, 8, 9, EOS]}]
    with pytest.raises(UsageError, match=r"^bridge_compat .* layout hf"):
        pack_files(_options(tmp_path, rows, 8, bridge_compat=True))
    with pytest.raises(UsageError, match="at least 2 tokens"):
        pack_files(_options(tmp_path, rows, 8, max_seq_length=1, too_long=TooLong.split))
