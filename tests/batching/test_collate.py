"""PackedDataset + PackedCollator: bridge-format §5 vectors, variants, errors, equality with Bridge 0.6.2's
collate."""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from _support.packs import make_row, write_metadata, write_packs
from bridgepack.batching import PackedCollator, PackedDataset
from bridgepack.errors import DataError, InputError, UsageError

EOS = 2


def _item(ids: list[int], boundaries: list[int], mask: list[int] | None = None) -> dict[str, Any]:
    return {"input_ids": ids, "seq_boundaries": boundaries, "loss_mask": mask or [1] * len(ids)}


def _lists(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v.tolist() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


# ---- bridge-format §5 vectors ------------------------------------------------------------------------------


def test_vector_p1_two_rows() -> None:
    items = [_item([10, 11, 12, 13, 20, 21, 22, 23], [0, 4, 8]), _item(list(range(30, 38)), [0, 8])]
    got = _lists(PackedCollator(EOS, 8, pad_seq_length_to_mult=1)(items))
    assert got["tokens"] == [[10, 11, 12, 20, 21, 22, 2], [30, 31, 32, 33, 34, 35, 36]]
    assert got["labels"] == [[11, 12, 13, 21, 22, 23, 2], [31, 32, 33, 34, 35, 36, 37]]
    assert got["position_ids"] == [[0, 1, 2, 0, 1, 2, 0], list(range(7))]
    assert got["cu_seqlens_q"] == got["cu_seqlens_kv"] == [[0, 3, 6, 7], [0, 7, 7, 7]]
    assert got["max_seqlen_q"] == got["max_seqlen_kv"] == [[3], [7]]
    assert got["token_count"] == [6, 7]
    assert got["attention_mask"] is None
    assert "cu_seqlens_q_padded" not in got and "padding_mask" not in got


def test_vector_p4_logical_and_physical() -> None:
    items = [_item([10, 11, 12, 2, 2, 20, 21, 2, 2, 2], [0, 5, 10])]
    batch = PackedCollator(EOS, 8, pad_seq_length_to_mult=1, pad_seq_to_mult=4)(items)
    got = _lists(batch)
    assert got["tokens"] == [[10, 11, 12, 2, 20, 21, 2, 2]]
    assert got["cu_seqlens_q"] == [[0, 3, 5]]
    assert got["cu_seqlens_q_padded"] == got["cu_seqlens_kv_padded"] == [[0, 4, 8]]
    assert got["max_seqlen_q"] == [[4]]
    assert got["position_ids"] == [[0, 1, 2, 3, 0, 1, 2, 3]]
    assert "padding_mask" not in got
    main = _lists(PackedCollator(EOS, 8, pad_seq_length_to_mult=1, pad_seq_to_mult=4, variant="main")(items))
    assert main["padding_mask"] == [[False, False, False, True, False, False, True, True]]


def test_vector_pad_cu_seqlens(tmp_path: Path) -> None:
    meta = write_metadata(
        tmp_path / "10_metadata.jsonl",
        [{"dataset_max_seqlen": 6, "max_samples_per_bin": 3, "packing_factor": 2.0,
          "packing_efficiency": 90.0, "pack_size": 10, "min_packed_seqlen": 9}],
    )  # fmt: skip
    items = [_item([*range(10, 16), 2, 20, 21, 22, 2], [0, 7, 11])]  # runtime 6 + 3
    got = _lists(PackedCollator(EOS, 10, pad_to_max_length=True, pad_cu_seqlens=True, metadata=meta)(items))
    assert got["cu_seqlens_q"] == [[0, 6, 9, 10, 10]]
    assert got["max_seqlen_q"] == [6]


def test_dtypes_and_shapes() -> None:
    items = [_item([10, 11, 2, 20, 2], [0, 3, 5]), _item([30, 31, 32, 2], [0, 4])]
    batch = PackedCollator(EOS, 32, pad_seq_to_mult=1)(items)
    for key in ("tokens", "labels", "loss_mask", "position_ids"):
        assert batch[key].dtype == torch.int64 and batch[key].shape == (2, 16)  # ceil to 16
    assert batch["cu_seqlens_q"].dtype == torch.int32 and batch["max_seqlen_q"].dtype == torch.int32
    assert batch["max_seqlen_q"].shape == (2, 1)


# ---- loss mask variants ------------------------------------------------------------------------------------


def test_eos_inputs_lose_their_loss_in_0_6_2_but_not_on_main() -> None:
    # A chat sequence with an EOS inside (end of a turn) whose next token is supervised.
    items = [_item([10, 2, 11, 12, 2], [0, 5], [1, 1, 1, 1, 0])]
    released = PackedCollator(EOS, 4, pad_seq_length_to_mult=1)(items)
    main = PackedCollator(EOS, 4, pad_seq_length_to_mult=1, variant="main")(items)
    assert released["loss_mask"].tolist() == [[1, 0, 1, 1]]
    assert main["loss_mask"].tolist() == [[1, 1, 1, 1]]
    assert main["padding_mask"].tolist() == [[False] * 4]


def test_answer_only_loss_off_supervises_every_non_eos_input() -> None:
    items = [_item([10, 2, 11, 2, 20, 2], [0, 4, 6], [0, 0, 0, 0, 0, 0])]
    got = PackedCollator(EOS, 8, pad_seq_length_to_mult=1, answer_only_loss=False)(items)
    assert got["loss_mask"].tolist() == [[1, 0, 1, 1]]


def test_attention_mask_mode_without_cu_seqlens() -> None:
    got = PackedCollator(EOS, 4, pad_seq_length_to_mult=1, return_cu_seqlen=False)(
        [_item([10, 11, 12, 2], [0, 4])]
    )
    assert got["attention_mask"].shape == (1, 1, 3, 3)
    assert got["attention_mask"][0, 0].tolist() == [
        [False, True, True],
        [False, False, True],
        [False, False, False],
    ]
    assert "cu_seqlens_q" not in got


# ---- legacy (<= v0.5) keys, derived by hand from Bridge v0.5.1's collate -------------------------------


def test_legacy_keys_p1() -> None:
    items = [_item([10, 11, 12, 13, 20, 21, 22, 23], [0, 4, 8]), _item(list(range(30, 38)), [0, 8])]
    got = _lists(PackedCollator(EOS, 8, pad_seq_length_to_mult=1, variant="legacy")(items))
    assert got["cu_seqlens"] == [[0, 3, 6, 7, -1], [0, 7, -1, -1, -1]]
    assert got["cu_seqlens_argmin"] == [[4], [2]]
    assert got["max_seqlen"] == [[3], [7]]
    assert "cu_seqlens_q" not in got and "cu_seqlens_unpadded" not in got


def test_legacy_keys_p4() -> None:
    items = [_item([10, 11, 12, 2, 2, 20, 21, 2, 2, 2], [0, 5, 10])]
    got = _lists(
        PackedCollator(EOS, 12, pad_seq_length_to_mult=4, pad_seq_to_mult=4, variant="legacy")(items)
    )
    assert got["cu_seqlens"] == [[0, 4, 8, -1]]  # width 8: no tail
    assert got["cu_seqlens_unpadded"] == [[0, 3, 5, -1]]
    assert got["cu_seqlens_unpadded_argmin"] == [[3]]
    assert got["max_seqlen"] == [[4]]


# ---- dataset -----------------------------------------------------------------------------------------------


def test_dataset_items_and_negative_index(tmp_path: Path) -> None:
    rows = [make_row([[10, 11, 2], [20, 2]]), make_row([[30, 31, 32, 2]])]
    write_packs(tmp_path / "training_8.idx.parquet", rows)
    ds = PackedDataset(tmp_path)
    assert len(ds) == 2
    item = ds[0]
    assert item["input_ids"].tolist() == [10, 11, 2, 20, 2]
    assert item["seq_boundaries"].tolist() == [0, 3, 5]
    assert item["loss_mask"].tolist() == [1, 1, 0, 1, 0]
    pad = ds[-1]
    assert pad["input_ids"].tolist() == [30, 31, 32, 2] and pad["loss_mask"].tolist() == [0, 0, 0, 0]
    batch = PackedCollator(EOS, 8)([ds[0], ds[-1]])
    assert batch["loss_mask"][1].sum() == 0
    clone = pickle.loads(pickle.dumps(ds))  # DataLoader workers started with spawn get a pickled copy
    assert clone[1]["input_ids"].tolist() == [30, 31, 32, 2]
    rows[1]["seq_start_id"] = [0, 2, 1]
    write_packs(tmp_path / "bad" / "training_8.idx.parquet", rows)
    with pytest.raises(
        DataError, match=r"training_8\.idx\.parquet row 1: field 'seq_start_id': not non-decreasing"
    ):
        PackedDataset(tmp_path / "bad")[0]


# ---- errors ------------------------------------------------------------------------------------------------


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope_metadata\.jsonl: no such file"):
        PackedCollator(
            EOS, 8, pad_to_max_length=True, pad_cu_seqlens=True, metadata=tmp_path / "nope_metadata.jsonl"
        )
    with pytest.raises(UsageError, match="needs the packing metadata"):
        PackedCollator(EOS, 8, pad_to_max_length=True, pad_cu_seqlens=True)
    meta = write_metadata(tmp_path / "m.json", [{"dataset_max_seqlen": 3}])
    with pytest.raises(DataError, match="missing key 'max_samples_per_bin'"):
        PackedCollator(EOS, 8, pad_to_max_length=True, pad_cu_seqlens=True, metadata=meta)
    with pytest.raises(UsageError, match="pad_to_max_length"):
        PackedCollator(EOS, 8, pad_cu_seqlens=True, metadata=[{}])
    with pytest.raises(DataError, match="batch row 1: 9 input tokens exceed the width 8"):
        PackedCollator(EOS, 8)([_item([1, 2], [0, 2]), _item(list(range(10, 20)), [0, 10])])
    with pytest.raises(DataError, match="batch row 0: seq_boundaries"):
        PackedCollator(EOS, 8)([_item([1, 2, 3], [0, 2, 2, 3])])


# ---- equality with Bridge 0.6.2's own GPTSFTPackedDataset.collate_fn -----------------------------------


def _generated_rows(rng: np.random.Generator, n: int, pack: int, p: int, with_eos_inside: bool) -> list[dict]:
    """Packs as Bridge's offline packing stores them: runtime lengths pre-padded to a multiple of P."""
    rows = []
    for _ in range(n):
        seqs, masks, budget = [], [], pack
        for _ in range(int(rng.integers(1, 5))):
            if budget < p:
                break
            r = int(rng.integers(1, max(2, budget // 2 + 1)))
            r_pad = min(-(-r // p) * p, budget // p * p)
            r = min(r, r_pad)
            body = rng.integers(3, 40, size=r).tolist()
            if with_eos_inside and r > 2 and rng.random() < 0.5:
                body[int(rng.integers(0, r - 1))] = EOS
            tokens = [*body, *[EOS] * (r_pad - r), EOS]
            mask = [*rng.integers(0, 2, size=r).tolist(), *[0] * (r_pad - r), 0]
            seqs.append(tokens)
            masks.append(mask)
            budget -= r_pad
        rows.append(make_row(seqs, masks))
    return rows


def _stats(rows: list[dict], pack: int) -> dict[str, Any]:
    runtime = [
        b - a - 1 for r in rows for a, b in itertools.pairwise([*r["seq_start_id"], len(r["input_ids"])])
    ]
    sums = [len(r["input_ids"]) - len(r["seq_start_id"]) for r in rows]
    return {
        "dataset_max_seqlen": max(runtime),
        "max_samples_per_bin": max(len(r["seq_start_id"]) for r in rows),
        "packing_factor": 1.0,
        "packing_efficiency": 1.0,
        "pack_size": pack,
        "min_packed_seqlen": min(sums),
    }


CASES = [
    # (P, pad_to_max_length, pad_cu_seqlens, pad_seq_length_to_mult, answer_only_loss)
    (1, False, False, 16, True),
    (1, False, False, 1, True),
    (1, True, False, 16, False),
    (1, True, True, 16, True),
    (4, False, False, 16, True),
    (4, True, True, 16, True),
    (2, False, False, 1, False),
]


@pytest.mark.network
@pytest.mark.parametrize(("p", "fixed", "pad_cu", "mult", "answer_only"), CASES)
def test_equals_bridge_collate(
    tmp_path: Path, p: int, fixed: bool, pad_cu: bool, mult: int, answer_only: bool
) -> None:
    from _support.bridge_batching import bridge_parquet_dataset

    pack = 64
    rng = np.random.default_rng(p * 100 + mult + 7 * fixed + 3 * pad_cu)
    rows = _generated_rows(rng, 24, pack, p, with_eos_inside=True)
    path = write_packs(tmp_path / f"training_{pack}.idx.parquet", rows, row_group_size=7)
    meta = write_metadata(tmp_path / f"{pack}_metadata.jsonl", [_stats(rows, pack)])
    options = {"pad_to_max_length": fixed, "pad_seq_length_to_mult": mult, "answer_only_loss": answer_only}
    theirs = bridge_parquet_dataset(
        str(path), EOS, max_seq_length=pack, pad_seq_to_mult=p, pad_cu_seqlens=pad_cu,
        pack_metadata_file_path=str(meta) if pad_cu else None, **options,
    )  # fmt: skip
    ours_ds = PackedDataset(path)
    collate = PackedCollator(
        EOS, pack, pad_seq_to_mult=p, pad_cu_seqlens=pad_cu, metadata=meta if pad_cu else None, **options
    )
    for indices in ([0, 1, 2, 3], [5, 17, 9, -1], [23], list(range(8, 24)), [-1, -2]):
        want = theirs.collate_fn([theirs[i] for i in indices])
        got = collate([ours_ds[i] for i in indices])
        assert set(got) == set(want)
        for key, value in want.items():
            if isinstance(value, torch.Tensor):
                assert got[key].dtype == value.dtype, key
                assert torch.equal(got[key], value), (key, indices)
            else:
                assert got[key] == value, key


LEGACY_CASES = [
    (1, False, 16, False),
    (1, True, 1, True),
    (4, False, 1, False),
    (4, True, 16, True),
    (2, False, 16, False),
]


@pytest.mark.network
@pytest.mark.parametrize(("p", "fixed", "mult", "pad_cu"), LEGACY_CASES)
def test_legacy_variant_equals_bridge_0_5_1(
    tmp_path: Path, p: int, fixed: bool, mult: int, pad_cu: bool
) -> None:
    from _support.bridge_batching import collate_only, legacy_packed_dataset_cls

    pack = 64
    rows = _generated_rows(np.random.default_rng(p + mult + 5 * pad_cu), 24, pack, p, with_eos_inside=True)
    ds = PackedDataset(write_packs(tmp_path / f"training_{pack}.idx.parquet", rows))
    meta = [_stats(rows, pack)]
    theirs = collate_only(
        legacy_packed_dataset_cls(), EOS, meta, max_seq_length=pack, pad_to_max_length=fixed,
        pad_seq_length_to_mult=mult, _pad_seq_to_mult=p, pad_cu_seqlens=pad_cu,
    )  # fmt: skip
    options = {"pad_to_max_length": fixed, "pad_seq_length_to_mult": mult, "pad_seq_to_mult": p}
    metadata = meta if pad_cu else None
    ours = PackedCollator(EOS, pack, pad_cu_seqlens=pad_cu, metadata=metadata, variant="legacy", **options)
    for indices in ([0, 1, 2, 3], [5, 9, 23, -1], list(range(24))):
        items = [ds[i] for i in indices]
        want = theirs.collate_fn([{k: v.tolist() for k, v in item.items()} for item in items])
        got = ours(items)
        assert set(got) == set(want)
        for key, value in want.items():
            if isinstance(value, torch.Tensor):
                assert got[key].dtype == value.dtype and torch.equal(got[key], value), (key, indices)
            else:
                assert got[key] == value, key
