"""Fingerprints: stable across runs, content hash independent of packing, sensitive to a token and a bit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from _support.diff_samples import chat, packs_of, write_packed
from bridgepack.cli import main
from bridgepack.data.packed import fingerprint_packed
from bridgepack.fingerprint import PackedFingerprinter, hash_block

SAMPLES = [chat([10 + i, 11, 12 + i % 3], [20 + i] * (1 + i % 4)) for i in range(12)]


def test_same_samples_packed_differently_share_content_not_packs(tmp_path: Path) -> None:
    a = fingerprint_packed(write_packed(tmp_path / "a.parquet", packs_of(SAMPLES, [3, 3, 3, 3])))
    b = fingerprint_packed(write_packed(tmp_path / "b.parquet", packs_of(SAMPLES[::-1], [2, 4, 1, 5])))
    assert a.content == b.content
    assert a.packs != b.packs
    assert (a.num_sequences, a.num_tokens, a.num_supervised) == (
        b.num_sequences,
        b.num_tokens,
        b.num_supervised,
    )


def test_pack_order_changes_packs_hash_only(tmp_path: Path) -> None:
    packs = packs_of(SAMPLES, [3, 3, 3, 3])
    a = fingerprint_packed(write_packed(tmp_path / "a.parquet", packs))
    b = fingerprint_packed(write_packed(tmp_path / "b.parquet", packs[::-1]))
    assert a.content == b.content and a.packs != b.packs


def test_row_groups_and_directory_spec_do_not_matter(tmp_path: Path) -> None:
    packs = packs_of(SAMPLES, [1] * 12)
    a = fingerprint_packed(write_packed(tmp_path / "a.parquet", packs))
    b = fingerprint_packed(write_packed(tmp_path / "d" / "b.parquet", packs, row_group_size=5))
    assert a == b
    assert fingerprint_packed(tmp_path / "d") == a


def test_one_changed_token_or_mask_bit_changes_content(tmp_path: Path) -> None:
    base = fingerprint_packed(write_packed(tmp_path / "a.parquet", packs_of(SAMPLES, [6, 6])))
    tokens, mask = SAMPLES[5]
    changed_token = [*SAMPLES[:5], ([*tokens[:-2], tokens[-2] + 1, tokens[-1]], mask), *SAMPLES[6:]]
    changed_bit = [*SAMPLES[:5], (tokens, [1 - mask[0], *mask[1:]]), *SAMPLES[6:]]
    tok = fingerprint_packed(write_packed(tmp_path / "t.parquet", packs_of(changed_token, [6, 6])))
    bit = fingerprint_packed(write_packed(tmp_path / "m.parquet", packs_of(changed_bit, [6, 6])))
    assert len({base.content, tok.content, bit.content}) == 3
    assert len({base.packs, tok.packs, bit.packs}) == 3


def test_moving_a_boundary_changes_content(tmp_path: Path) -> None:
    """The same flat tokens and mask split into sequences differently are different data."""
    (t1, m1), (t2, m2) = SAMPLES[0], SAMPLES[1]
    a = fingerprint_packed(write_packed(tmp_path / "a.parquet", [[(t1, m1), (t2, m2)]]))
    joined = [(list(t1) + list(t2[:1]), list(m1) + list(m2[:1])), (t2[1:], m2[1:])]
    b = fingerprint_packed(write_packed(tmp_path / "b.parquet", [joined]))
    assert a.content != b.content and a.packs != b.packs


def test_stable_across_processes(tmp_path: Path) -> None:
    path = write_packed(tmp_path / "a.parquet", packs_of(SAMPLES, [4, 4, 4]))
    here = fingerprint_packed(path).to_dict()
    code = (
        "import json, sys; from bridgepack.data.packed._source import fingerprint_packed; "
        "print(json.dumps(fingerprint_packed(sys.argv[1]).to_dict()))"
    )
    there = json.loads(
        subprocess.run(
            [sys.executable, "-c", code, str(path)], check=True, capture_output=True, text=True
        ).stdout
    )
    assert here == there


@given(st.lists(st.integers(1, 5), min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_incremental_equals_whole(cuts: list[int], rnd) -> None:
    """Feeding packs in any chunking gives the same result; shuffling sequences keeps the content hash."""
    rng = np.random.default_rng(rnd.randint(0, 2**31))
    seqs = [rng.integers(0, 50, size=int(n) + 1) for n in rng.integers(1, 9, size=sum(cuts))]
    masks = [rng.integers(0, 2, size=len(s)) for s in seqs]

    def csr(order: list[int], sizes: list[int]) -> PackedFingerprinter:
        fp = PackedFingerprinter()
        i = 0
        for size in sizes:
            chosen = order[i : i + size]
            i += size
            ids = np.concatenate([seqs[k] for k in chosen])
            mask = np.concatenate([masks[k] for k in chosen])
            starts = np.cumsum([0] + [len(seqs[k]) for k in chosen[:-1]])
            fp.add(
                hash_block(
                    np.array([0, len(ids)]),
                    ids,
                    np.array([0, len(mask)]),
                    mask,
                    np.array([0, len(starts)]),
                    starts,
                )
            )
        return fp

    order = list(range(len(seqs)))
    whole = csr(order, cuts).result()
    shuffled = order.copy()
    rnd.shuffle(shuffled)
    other = csr(shuffled, [1] * len(seqs)).result()
    assert whole.content == other.content
    assert whole.num_tokens == other.num_tokens


def test_cli_text_and_json(tmp_path: Path, capsys) -> None:
    path = write_packed(tmp_path / "a.parquet", packs_of(SAMPLES, [6, 6]))
    assert main(["fingerprint", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["content"] == fingerprint_packed(path).content and doc["num_packs"] == 2
    assert main(["fingerprint", str(path)]) == 0
    assert "content" in capsys.readouterr().out


def test_cli_unreadable_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "x.parquet"
    bad.write_bytes(b"not parquet")
    assert main(["fingerprint", str(bad)]) == 2
    assert main(["fingerprint", str(tmp_path / "missing.parquet")]) == 2


def test_check_against_the_record_of_bridgepack_pack(tmp_path: Path, capsys) -> None:
    from bridgepack.data.pipeline import PackOptions, pack_files
    from bridgepack.data.samples import example_dataset_path

    result = pack_files(PackOptions.from_flat([example_dataset_path()], tmp_path / "out", 512, quiet=True))
    path = str(result.packed_path)
    assert main(["fingerprint", path, "--check"]) == 0
    assert "matches the record" in capsys.readouterr().out
    # rewrite the packs in another order: same content, another packing
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    pq.write_table(table.take(list(range(len(table)))[::-1]), path)
    assert main(["fingerprint", path, "--check", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["check"]["mismatches"]) == ["packs"]
    assert (
        main(["fingerprint", str(write_packed(tmp_path / "x.parquet", packs_of(SAMPLES, [12]))), "--check"])
        == 2
    )
