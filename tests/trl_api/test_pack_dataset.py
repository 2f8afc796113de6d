"""``bridgepack.trl.pack_dataset`` vs TRL 1.16.0's ``pack_dataset`` (loaded from its wheel) on random
datasets.

TRL plans each ``map`` batch apart; with ``map_kwargs={"batch_size": None}`` its plan is global too, and then
best fit decreasing needs as many packs, with the same fills (which of two equally full packs takes the next
row may differ, so not always the same rows), and ``wrapped`` gives the very same rows. TRL fails on a
``map`` batch without a token, so its per-batch runs see the non-empty rows only (it drops the others).
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

datasets = pytest.importorskip("datasets")
from datasets import Dataset, DatasetDict, IterableDatasetDict  # noqa: E402
from datasets.table import InMemoryTable  # noqa: E402

from _support.hf_tables import token_table as _table  # noqa: E402
from _support.trl import trl_data_utils  # noqa: E402
from bridgepack.trl import pack_dataset  # noqa: E402

datasets.disable_progress_bars()

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def trl() -> object:
    return trl_data_utils()


@st.composite
def packing_inputs(draw: st.DrawFn) -> tuple[Dataset, int]:
    seq_length = draw(st.integers(1, 16))
    lengths = draw(st.lists(st.integers(0, 3 * seq_length), min_size=1, max_size=40))
    lengths[draw(st.integers(0, len(lengths) - 1))] = draw(
        st.integers(1, 3 * seq_length)
    )  # TRL needs a token
    cuts = draw(st.lists(st.integers(0, 40), max_size=4))
    table = _table(lengths, cuts, draw(st.booleans()), draw(st.booleans()), draw(st.integers(0, 2**16)))
    dataset = Dataset(InMemoryTable(table))
    if draw(st.booleans()) and len(dataset) > 1:  # an indices mapping over the table
        dataset = dataset.shuffle(seed=draw(st.integers(0, 99)))
    return dataset, seq_length


def _non_empty(dataset: Dataset) -> Dataset:
    lengths = np.array([len(ids) for ids in dataset["input_ids"]])
    return dataset.select(np.flatnonzero(lengths))


def _sequences(rows: dict[str, list]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every packed sequence as (ids, mask), cut at ``seq_lengths``, sorted."""
    out = []
    for ids, mask, lens in zip(rows["input_ids"], rows["completion_mask"], rows["seq_lengths"], strict=True):
        assert sum(lens) == len(ids) == len(mask)
        ends = np.cumsum([0, *lens])
        out += [(tuple(ids[a:b]), tuple(mask[a:b])) for a, b in itertools.pairwise(ends)]
    return sorted(out)


@given(packing_inputs(), st.sampled_from(["bfd", "bfd_split"]), st.integers(1, 9))
def test_bfd_strategies_match_trl(trl: object, case: tuple[Dataset, int], strategy: str, batch: int) -> None:
    dataset, seq_length = case
    ours = pack_dataset(dataset, seq_length, strategy)
    theirs = trl.pack_dataset(dataset, seq_length, strategy, map_kwargs={"batch_size": None})  # type: ignore[attr-defined]
    per_batch = trl.pack_dataset(_non_empty(dataset), seq_length, strategy, map_kwargs={"batch_size": batch})  # type: ignore[attr-defined]
    assert ours.features == theirs.features
    rows, expected = ours[:], theirs[:]
    assert sorted(map(sum, rows["seq_lengths"])) == sorted(map(sum, expected["seq_lengths"]))  # same fills
    assert _sequences(rows) == _sequences(expected)  # same sequences, masks with their tokens
    assert all(len(ids) <= seq_length for ids in rows["input_ids"])
    assert len(ours) <= len(per_batch)
    source = dataset[:]
    pairs = zip(source["input_ids"], source["completion_mask"], strict=True)
    originals = [(tuple(i), tuple(m)) for i, m in pairs if i]
    if strategy == "bfd":  # each non-empty row once, its first seq_length tokens
        assert _sequences(rows) == sorted((i[:seq_length], m[:seq_length]) for i, m in originals)
    else:  # every token exactly once
        assert sorted(t for ids in rows["input_ids"] for t in ids) == sorted(
            t for i, _ in originals for t in i
        )


@given(packing_inputs(), st.integers(1, 9))
def test_wrapped_matches_trl_with_one_batch(trl: object, case: tuple[Dataset, int], batch: int) -> None:
    dataset, seq_length = case
    ours = pack_dataset(dataset, seq_length, "wrapped")
    theirs = trl.pack_dataset(dataset, seq_length, "wrapped", map_kwargs={"batch_size": None})  # type: ignore[attr-defined]
    assert ours.features == theirs.features
    assert ours[:] == theirs[:]
    per_batch = trl.pack_dataset(_non_empty(dataset), seq_length, "wrapped", map_kwargs={"batch_size": batch})  # type: ignore[attr-defined]
    assert len(ours) <= len(per_batch)


def _rows(stream: object) -> dict[str, list]:
    """A stream's rows as columns of Python lists."""
    rows = list(stream)  # type: ignore[call-overload]
    return {name: [list(r[name]) for r in rows] for name in (rows[0] if rows else {})}


@given(packing_inputs(), st.sampled_from(["bfd", "bfd_split", "wrapped"]), st.integers(1, 9))
def test_streams_pack_per_batch_as_trl(
    trl: object, case: tuple[Dataset, int], strategy: str, batch: int
) -> None:
    """An ``IterableDataset`` is packed batch by batch, as TRL packs it: ``wrapped`` gives TRL's very rows,
    the bfd strategies the same sequences with the same fills in each batch."""
    dataset, seq_length = case
    stream = _non_empty(dataset).to_iterable_dataset()  # TRL fails on a batch without a token
    kwargs = {"batch_size": batch}
    ours = _rows(pack_dataset(stream, seq_length, strategy, map_kwargs=kwargs))
    theirs = _rows(trl.pack_dataset(stream, seq_length, strategy, map_kwargs=kwargs))  # type: ignore[attr-defined]
    if strategy == "wrapped":
        assert ours == theirs
        return
    assert _sequences(ours) == _sequences(theirs)
    assert sorted(map(sum, ours["seq_lengths"])) == sorted(map(sum, theirs["seq_lengths"]))
    assert all(len(ids) <= seq_length for ids in ours["input_ids"])


def test_stream_splits_and_format_as_trl(trl: object) -> None:
    stream = Dataset(InMemoryTable(_table([5, 2, 3, 1, 7], [2], False, False, 0))).to_iterable_dataset()
    splits = IterableDatasetDict({"train": stream.with_format("numpy"), "test": stream.with_format("numpy")})
    ours = pack_dataset(splits, 4, "wrapped")
    theirs = trl.pack_dataset(splits, 4, "wrapped")  # type: ignore[attr-defined]
    assert isinstance(ours, IterableDatasetDict) and list(ours) == ["train", "test"]
    for split in ours:
        mine, expected = list(ours[split]), list(theirs[split])
        assert [type(row["input_ids"]) for row in mine] == [type(row["input_ids"]) for row in expected]
        assert [{k: list(v) for k, v in row.items()} for row in mine] == [
            {k: list(v) for k, v in row.items()} for row in expected
        ]
    # TRL gives every split the first split's format; each split keeps its own here
    mixed = pack_dataset(IterableDatasetDict({"train": stream.with_format("numpy"), "test": stream}), 4)
    assert [type(next(iter(mixed[split]))["input_ids"]) for split in mixed] == [np.ndarray, list]


def test_null_rows_are_dropped_as_trl_drops_them(trl: object) -> None:
    dataset = Dataset.from_dict({"input_ids": [[1, 2], None, [3], [], [4, 5, 6]]})
    for strategy in ("bfd", "bfd_split", "wrapped"):
        ours = pack_dataset(dataset, 3, strategy)
        assert ours[:] == trl.pack_dataset(dataset, 3, strategy)[:]  # type: ignore[attr-defined]


def test_columns_of_any_value_type_travel_with_their_tokens(trl: object) -> None:
    """Booleans, strings and values with nulls take Arrow's ``take`` path; the rows are TRL's."""
    dataset = Dataset.from_dict(
        {
            "input_ids": [[1, 2, 3, 4, 5], [6, 7], [8, 9, 10], [11]],
            "flags": [[True, False, True, False, True], [False, True], [True, True, False], [False]],
            "words": [["a", "b", "c", "d", "e"], ["f", "g"], ["h", "i", "j"], ["k"]],
            "scores": [[0.5, None, 1.5, 2.0, None], [None, 3.0], [1.0, 2.0, 3.0], [None]],
        }
    )
    for strategy in ("bfd", "bfd_split", "wrapped"):
        ours = pack_dataset(dataset, 4, strategy)
        theirs = trl.pack_dataset(dataset, 4, strategy)  # type: ignore[attr-defined]
        assert ours.features == theirs.features
        assert ours[:] == theirs[:]


def test_no_token_gives_no_pack() -> None:
    """TRL fails here (an Arrow ``take`` of nothing); bridgepack returns no row, with the packed columns."""
    for rows in ([], [[], []]):
        dataset = Dataset.from_dict(
            {"input_ids": rows},
            features=datasets.Features({"input_ids": datasets.List(datasets.Value("int32"))}),
        )
        packed = pack_dataset(dataset, 4)
        assert len(packed) == 0 and packed.column_names == ["input_ids", "seq_lengths"]
        assert packed.features["seq_lengths"] == datasets.List(datasets.Value("int32"))


def test_bad_columns_raise_what_trl_raises(trl: object) -> None:
    not_a_list = Dataset.from_dict({"input_ids": [[1, 2], [3]], "source": ["a", "b"]})
    ragged = Dataset.from_dict({"input_ids": [[1, 2], [3]], "labels": [[1, 2], [3, 4]]})
    for dataset, error, words in (
        (not_a_list, TypeError, "'source' is string"),
        (ragged, ValueError, "row 1"),
    ):
        with pytest.raises(error):
            trl.pack_dataset(dataset, 4)  # type: ignore[attr-defined]
        with pytest.raises(error, match=words):
            pack_dataset(dataset, 4)
    with pytest.raises(ValueError, match="Invalid packing strategy 'ffd'"):
        pack_dataset(ragged, 4, "ffd")
    with pytest.raises(TypeError, match=r"\['remove_columns'\] not supported"):
        pack_dataset(ragged, 4, map_kwargs={"remove_columns": ["labels"]})


def test_dataset_dict_and_format_as_trl(trl: object, tmp_path: object) -> None:
    table = _table([5, 2, 3, 1, 7], [2], False, False, 0)
    splits = DatasetDict(
        {"train": Dataset(InMemoryTable(table)), "test": Dataset(InMemoryTable(table.slice(1)))}
    )
    splits = splits.with_format("numpy", columns=["input_ids"])
    named = os.path.join(str(tmp_path), "train-packed.arrow")
    kwargs = {"num_proc": 1, "desc": "packing", "cache_file_names": {"train": named}}
    ours = pack_dataset(splits, 4, map_kwargs=kwargs)
    theirs = trl.pack_dataset(splits, 4)  # type: ignore[attr-defined]
    assert list(ours) == ["train", "test"]
    assert [f["filename"] for f in ours["train"].cache_files] == [named] and ours["test"].cache_files == []
    for split in ours:
        assert ours[split].format == theirs[split].format
        assert ours[split].format["columns"] == ["input_ids", "seq_lengths"]
        assert [r.tolist() for r in ours[split]["seq_lengths"]] == [
            r.tolist() for r in theirs[split]["seq_lengths"]
        ]


def test_result_is_a_reused_memory_mapped_cache_file(tmp_path: object, trl: object) -> None:
    path = os.path.join(str(tmp_path), "data.arrow")
    table = _table(list(np.random.default_rng(1).integers(0, 50, 3000)), [700, 1500], False, False, 1)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=1000)
    dataset = Dataset.from_file(path)
    packed = pack_dataset(dataset, 64)
    (cache,) = packed.cache_files
    assert os.path.dirname(cache["filename"]) == str(tmp_path) and cache["filename"] != path
    assert packed.data.table.column("input_ids").num_chunks == -(-len(packed) // 1000)  # 1,000 packs a batch
    stamp = os.stat(cache["filename"]).st_mtime_ns
    again = pack_dataset(dataset, 64)
    assert again.cache_files == packed.cache_files and os.stat(cache["filename"]).st_mtime_ns == stamp
    assert again._fingerprint == packed._fingerprint != pack_dataset(dataset, 65)._fingerprint
    assert pack_dataset(dataset, 64, map_kwargs={"keep_in_memory": True}).cache_files == []
    theirs = trl.pack_dataset(dataset, 64)  # type: ignore[attr-defined]
    assert len(packed) < len(theirs)  # TRL plans 3 batches of 1,000 rows apart
    assert sorted(t for row in packed["input_ids"] for t in row) == list(
        range(1, len(table["input_ids"].combine_chunks().values) + 1)
    )


@pytest.mark.parametrize("strategy", ["bfd", "bfd_split", "wrapped"])
def test_cache_file_holds_the_same_rows_as_memory_whatever_the_batch_size(
    tmp_path: object, strategy: str
) -> None:
    """Batches are built ahead on a thread into rotating buffers while earlier ones are written: a batch
    overwritten before its write would show here as rows that differ from the in-memory result."""
    path = os.path.join(str(tmp_path), "data.arrow")
    table = _table(list(np.random.default_rng(2).integers(0, 90, 4000)), [900, 2500], False, True, 2)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=1000)
    dataset = Dataset.from_file(path)
    expected = pack_dataset(dataset, 128, strategy, map_kwargs={"keep_in_memory": True})[:]
    for size in (1, 7, 100, 10_000):
        written = pack_dataset(
            dataset, 128, strategy, map_kwargs={"writer_batch_size": size, "load_from_cache_file": False}
        )
        assert written.cache_files and written.data.table.column("input_ids").num_chunks == -(
            -len(written) // size
        )
        assert written[:] == expected
