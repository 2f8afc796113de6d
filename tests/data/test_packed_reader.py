"""The packed-data reader: path rules, memory-mapped row access, streaming blocks, invariants, legacy .npy."""

from __future__ import annotations

import itertools
import os
import pickle
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _support.packs import make_row, random_rows, write_packs
from bridgepack.data.packed import (
    PackedBlock,
    PackedReader,
    read_legacy_npy,
    resolve_packed_paths,
    validate_block,
)
from bridgepack.errors import DataError, InputError


def _touch_pack(path: Path) -> Path:
    return write_packs(path, [make_row([[5, 6, 2]])])


# ---- path rules (Bridge 0.6.2 data/packing/paths.py) ----------------------------------------------------


def test_directory_lists_parquet_and_pq_sorted_without_hidden_or_other_files(tmp_path: Path) -> None:
    for name in ["b.idx.parquet", "a.pq", "c.parquet", ".hidden.parquet", "notes.txt", "x.npy"]:
        _touch_pack(tmp_path / name) if name.endswith(("parquet", "pq")) else (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()
    _touch_pack(tmp_path / "sub" / "d.parquet")
    assert resolve_packed_paths(tmp_path) == [
        str(tmp_path / n) for n in ["a.pq", "b.idx.parquet", "c.parquet"]
    ]


def test_glob_keeps_parquet_suffixes_in_any_case_sorted(tmp_path: Path) -> None:
    for name in ["s_2.PARQUET", "s_1.parquet", "s_3.pq", "s_4.json"]:
        (tmp_path / name).write_bytes(b"")
    got = resolve_packed_paths(str(tmp_path / "s_*"))
    assert got == [str(tmp_path / n) for n in ["s_1.parquet", "s_2.PARQUET", "s_3.pq"]]


def test_single_file_and_errors(tmp_path: Path) -> None:
    path = _touch_pack(tmp_path / "t.idx.parquet")
    assert resolve_packed_paths(path) == [str(path)]
    with pytest.raises(InputError, match="no such file"):
        resolve_packed_paths(tmp_path / "missing.parquet")
    with pytest.raises(InputError, match="not a packed Parquet location"):
        resolve_packed_paths(tmp_path / "data.jsonl")
    with pytest.raises(InputError, match="no Parquet files match"):
        resolve_packed_paths(str(tmp_path / "zz*.parquet"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"holds no \.parquet or \.pq files$"):
        resolve_packed_paths(tmp_path / "empty")


def test_a_folder_holding_sharded_sets_names_them(tmp_path: Path) -> None:
    """A pack's output folder with ``{split}_{N}/`` shard directories (the ray engine's) is not itself a
    location (a directory means its own files, as in Bridge): the error names the directories to give."""
    out = tmp_path / "out"
    for shard in (
        "training_256/training_256-00000.idx.parquet",
        "validation_256/validation_256-00000.idx.pq",
    ):
        (out / shard).parent.mkdir(parents=True)
        _touch_pack(out / shard)
    (out / ".training_256.staging").mkdir()
    _touch_pack(out / ".training_256.staging" / "x.parquet")  # hidden: a run in progress, not a set
    expected = (
        f"give the directory of a packed set inside it: {out / 'training_256'}, {out / 'validation_256'}"
    )
    with pytest.raises(InputError, match=re.escape(expected) + "$"):
        resolve_packed_paths(out)


# ---- reading -------------------------------------------------------------------------------------------


def test_random_access_and_streaming_agree_with_written_rows(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    rows_a, rows_b = random_rows(rng, 23, 32), random_rows(rng, 9, 32)
    write_packs(tmp_path / "part_0.parquet", rows_a, row_group_size=5)
    write_packs(tmp_path / "part_1.parquet", rows_b, row_group_size=4)
    rows = rows_a + rows_b
    reader = PackedReader(tmp_path)
    assert len(reader) == 32
    for index in [0, 4, 5, 22, 23, 31, 7, -1, -32]:
        got = reader.row(index)
        want = rows[index]
        assert got.input_ids.tolist() == want["input_ids"]
        assert got.loss_mask.tolist() == want["loss_mask"]
        assert got.seq_start_id.tolist() == want["seq_start_id"]
    assert len(reader._cache) <= 4  # bounded row-group cache, never the whole file
    streamed = []
    for block in reader.iter_blocks():
        validate_block(block)
        assert block.num_rows <= 5
        streamed.extend(block.row(i).input_ids.tolist() for i in range(block.num_rows))
        lengths = block.sequence_lengths()
        assert lengths.sum() == block.row_lengths().sum()
    assert streamed == [r["input_ids"] for r in rows]
    with pytest.raises(IndexError):
        reader.row(32)


def test_block_rows_name_their_file_and_row(tmp_path: Path) -> None:
    rows = [make_row([[5, 6, 2]]) for _ in range(7)]
    rows[5]["seq_start_id"] = [1]
    write_packs(tmp_path / "p.parquet", rows, row_group_size=3)
    blocks = list(PackedReader(tmp_path / "p.parquet").iter_blocks())
    validate_block(blocks[0])
    with pytest.raises(DataError, match=r"p\.parquet row 5: field 'seq_start_id': must start at 0"):
        validate_block(blocks[1])


def test_extra_columns_allowed_missing_column_and_empty_file_are_errors(tmp_path: Path) -> None:
    table = pa.table(
        {
            "input_ids": [[5, 6, 2]],
            "loss_mask": pa.array([[1, 1, 0]], type=pa.list_(pa.int8())),
            "seq_start_id": [[0]],
            "source": ["a"],
        }
    )
    pq.write_table(table, tmp_path / "extra.parquet")
    assert PackedReader(tmp_path / "extra.parquet").row(0).input_ids.tolist() == [5, 6, 2]
    pq.write_table(table.drop(["seq_start_id"]), tmp_path / "missing.parquet")
    with pytest.raises(DataError, match=r"missing\.parquet: field 'seq_start_id': required column missing"):
        PackedReader(tmp_path / "missing.parquet")
    pq.write_table(table.slice(0, 0), tmp_path / "empty.parquet")
    with pytest.raises(DataError, match=r"empty\.parquet: holds no rows"):
        PackedReader(tmp_path / "empty.parquet")
    pq.write_table(
        table.drop(["input_ids"]).append_column("input_ids", pa.array(["x"])), tmp_path / "t.parquet"
    )
    with pytest.raises(DataError, match="field 'input_ids': expected a list of integers"):
        PackedReader(tmp_path / "t.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match=r"junk\.parquet: cannot read as Parquet"):
        PackedReader(tmp_path / "junk.parquet")


# ---- invariants (bridge-format §3) -------------------------------------------------------------------------

GOOD = {"input_ids": [5, 6, 2, 7, 2], "loss_mask": [1, 1, 0, 1, 0], "seq_start_id": [0, 3]}


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"loss_mask": [1, 1, 0, 1]}, "loss_mask", "length 4 differs from len(input_ids) = 5"),
        ({"seq_start_id": []}, "seq_start_id", "is empty (a pack holds at least one sequence)"),
        ({"seq_start_id": [1, 3]}, "seq_start_id", "must start at 0, found 1"),
        ({"seq_start_id": [0, 3, 2]}, "seq_start_id", "not non-decreasing at index 2: 3 > 2"),
        ({"seq_start_id": [0, 5]}, "seq_start_id", "entry 1 = 5 is not < len(input_ids) = 5"),
        ({"loss_mask": [1, 1, 0, 2, 0]}, "loss_mask", "value 2 at position 3 is not 0/1"),
        ({"input_ids": [5, -6, 2, 7, 2]}, "input_ids", "negative token id -6 at position 1"),
    ],
)
def test_each_invariant_names_row_and_field(tmp_path: Path, change: dict, field: str, message: str) -> None:
    rows = [dict(GOOD), {**GOOD, **change}, dict(GOOD)]
    write_packs(tmp_path / "bad.parquet", rows)
    (block,) = PackedReader(tmp_path / "bad.parquet").iter_blocks()
    with pytest.raises(DataError) as info:
        validate_block(block)
    assert str(info.value) == f"{tmp_path / 'bad.parquet'} row 1: field '{field}': {message}"


def test_first_bad_row_wins_across_checks(tmp_path: Path) -> None:
    rows = [dict(GOOD), dict(GOOD), {**GOOD, "loss_mask": [0, 0, 0, 0, 9]}, {**GOOD, "seq_start_id": [2]}]
    write_packs(tmp_path / "b.parquet", rows)
    (block,) = PackedReader(tmp_path / "b.parquet").iter_blocks()
    with pytest.raises(DataError, match="row 2: field 'loss_mask'"):
        validate_block(block)


def test_repeated_start_is_allowed_by_bridge_but_not_strictly(tmp_path: Path) -> None:
    write_packs(tmp_path / "r.parquet", [{**GOOD, "seq_start_id": [0, 3, 3]}])
    (block,) = PackedReader(tmp_path / "r.parquet").iter_blocks()
    validate_block(block)
    with pytest.raises(DataError, match="repeats 3 at index 2"):
        validate_block(block, allow_empty_sequences=False)


def _reference_first_bad(rows: list[dict]) -> int | None:
    """Bridge's validate_row semantics, one row at a time in plain Python (plus 0/1 mask values)."""
    for i, r in enumerate(rows):
        ids, mask, starts = r["input_ids"], r["loss_mask"], r["seq_start_id"]
        if len(mask) != len(ids) or not starts or starts[0] != 0:
            return i
        if any(s >= len(ids) for s in starts) or any(b < a for a, b in itertools.pairwise(starts)):
            return i
        if any(m not in (0, 1) for m in mask):
            return i
    return None


@given(
    st.lists(
        st.tuples(
            st.integers(1, 6),
            st.lists(st.integers(-1, 7), max_size=4),
            st.lists(st.integers(0, 2), max_size=8),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_vectorised_validation_matches_row_by_row_reference(
    spec: list[tuple[int, list[int], list[int]]],
) -> None:
    rows = []
    for length, starts, mask in spec:
        full_mask = (mask + [0] * length)[:length] if len(mask) <= length else mask
        rows.append({"input_ids": list(range(3, 3 + length)), "loss_mask": full_mask, "seq_start_id": starts})
    ids = [np.asarray(r["input_ids"], np.int64) for r in rows]
    masks = [np.asarray(r["loss_mask"], np.int64) for r in rows]
    starts_ = [np.asarray(r["seq_start_id"], np.int64) for r in rows]

    def csr(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64), np.concatenate(
            parts
        )

    block = PackedBlock("x.parquet", 0, 0, *csr(ids), *csr(masks), *csr(starts_))
    expected = _reference_first_bad(rows)
    if expected is None:
        validate_block(block)
    else:
        with pytest.raises(DataError, match=rf"^x\.parquet row {expected}: "):
            validate_block(block)


# ---- legacy .npy through the restricted unpickler ----------------------------------------------------


def test_legacy_npy_round_trip(tmp_path: Path) -> None:
    rows = [make_row([[5, 6, 2], [7, 2]]), make_row([[8, 9, 10, 2]])]
    items = np.array([{**rows[0], "input_ids": np.asarray(rows[0]["input_ids"])}, rows[1]], dtype=object)
    np.save(tmp_path / "training_8.npy", items, allow_pickle=True)  # writing our own fixture, not reading
    block = read_legacy_npy(tmp_path / "training_8.npy")
    validate_block(block)
    assert block.num_rows == 2
    assert block.row(0).input_ids.tolist() == rows[0]["input_ids"]
    assert block.row(1).seq_start_id.tolist() == [0]
    assert block.sequence_lengths().tolist() == [3, 2, 4]


class _Exploit:
    def __reduce__(self) -> tuple:
        return (os.system, ("touch pwned",))


def test_legacy_npy_refuses_code(tmp_path: Path) -> None:
    target = tmp_path / "evil.npy"
    np.save(target, np.array([{"input_ids": [1], "loss_mask": [0], "seq_start_id": [0]}], dtype=object))
    header_end = target.read_bytes().index(b"\n") + 1
    target.write_bytes(target.read_bytes()[:header_end] + pickle.dumps(np.array([_Exploit()], dtype=object)))
    with pytest.raises(DataError, match=r"refused to load '(posix|os|nt)\.system'"):
        read_legacy_npy(target)
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_legacy_npy_wrong_shapes(tmp_path: Path) -> None:
    np.save(tmp_path / "ints.npy", np.arange(3))
    with pytest.raises(DataError, match="expected a pickled object array"):
        read_legacy_npy(tmp_path / "ints.npy")
    np.save(tmp_path / "nokey.npy", np.array([{"input_ids": [1, 2]}], dtype=object))
    with pytest.raises(DataError, match=r"nokey\.npy row 0: field 'loss_mask': missing"):
        read_legacy_npy(tmp_path / "nokey.npy")
    (tmp_path / "text.npy").write_text("hello")
    with pytest.raises(InputError, match=r"not a \.npy file"):
        read_legacy_npy(tmp_path / "text.npy")
