"""The packing metadata record (#17): one frozen type reads and writes the sidecar, and re-writing what
it read gives the same bytes (Bridge's files included: key order, ints and rounded floats, keys of other
tools)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridgepack.data.packset import MetadataEntry, PackingMetadata, read_metadata
from bridgepack.errors import DataError
from bridgepack.packing import BRIDGE_METADATA_KEYS

_INT_KEYS = {"dataset_max_seqlen", "max_samples_per_bin", "pack_size", "min_packed_seqlen"}
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def entries(draw: st.DrawFn) -> dict[str, Any]:
    values: dict[str, Any] = {
        key: draw(st.integers(0, 2**20))
        if key in _INT_KEYS
        else round(draw(st.floats(0, 100, allow_nan=False)), 2)
        for key in BRIDGE_METADATA_KEYS
    }
    if draw(st.booleans()):
        values["bridgepack"] = draw(
            st.dictionaries(st.sampled_from(["split", "eos_id", "run_id", "x"]), _json)
        )
    for key in draw(st.lists(st.text(min_size=1, max_size=6), max_size=2)):
        values.setdefault(key, draw(_json))
    order = draw(st.permutations(list(values)))
    return {key: values[key] for key in order}


@settings(max_examples=60, deadline=None)
@given(doc=st.lists(entries(), max_size=3))
def test_rewriting_what_was_read_gives_the_same_bytes(
    tmp_path_factory: pytest.TempPathFactory, doc: list
) -> None:
    directory = tmp_path_factory.mktemp("meta")
    source = directory / "8_metadata.jsonl"
    source.write_text(json.dumps(doc))  # what Bridge's json.dump writes
    read = PackingMetadata.read(source)
    read.write(directory / "copy.jsonl")
    assert (directory / "copy.jsonl").read_bytes() == source.read_bytes()
    assert read_metadata(source) == doc


def _entry(split: str | None, size: int = 8) -> MetadataEntry:
    values = dict(zip(BRIDGE_METADATA_KEYS, [6, 3, 2.0, 73.33, size, 5], strict=True))
    return MetadataEntry.from_values(values, None if split is None else {"split": split, "eos_id": 2})


def test_an_entry_replaces_the_one_of_its_split_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "8_metadata.jsonl"
    PackingMetadata((_entry("training"), _entry(None), _entry("validation"))).write(path)
    updated = PackingMetadata.read(path).with_entry(_entry("training", 16))
    assert [(e.split, e.pack_size) for e in updated.entries] == [
        (None, 8),
        ("validation", 8),
        ("training", 16),
    ]
    assert updated.pick("training") == (2, updated.entries[2])
    assert updated.combined()["pack_size"] == 16 and updated.eos_id == 2


def test_the_record_is_read_only(tmp_path: Path) -> None:
    entry = _entry("training")
    assert entry.record is not None
    with pytest.raises(TypeError):
        entry.record["eos_id"] = 3  # type: ignore[index]


def test_an_entry_given_in_memory_is_checked_like_a_files() -> None:
    with pytest.raises(DataError, match=r"^packing metadata entry 0: key 'pack_size': expected a number"):
        MetadataEntry.from_dict({**_entry(None).to_dict(), "pack_size": "8"}, index=0)
