"""hypothesis strategies of structured garbage (reader fuzz tests, ``fuzz/run.py --engine hypothesis``).

Two kinds: *mutated seeds* (a valid file with a few byte-level edits: a byte flipped, a range cut or
doubled, a token that means something to some parser spliced in) and *shaped documents* (JSON, YAML,
Parquet and Arrow IPC that parse but hold the wrong types, sizes and nesting in the places readers look).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import yaml
from hypothesis import strategies as st

from _support.sample_files import arrow_ipc_bytes, parquet_bytes

#: Fragments that mean something to one of the parsers: JSON, YAML (tags, anchors), CSV, Megatron logs.
TOKENS: tuple[bytes, ...] = (
    b"{", b"}", b"[", b"]", b'"', b",", b":", b"\n", b"\r\n", b"\\", b"\x00", b"\xff", b"\xc3(", b"|",
    b"-1", b"0", b"1", b"2", b"1e999", b"-0.0", b"NaN", b"nan", b"inf", b"99999999999999999999999",
    b"9223372036854775808", b"null", b"true", b"false", b"[[[[[[[[", b"{{{{", b"]]]]",
    b"!!python/object/apply:os.system ['true']", b"!!binary aGk=", b"&a ", b"*a", b"<<: *a", b"%YAML 1.1\n",
    b"---\n", b"...\n", b"? ", b"- ", b"  ", b"\t", b"${oc.env:HOME}", b"${a.b}", b"~", b"+", b"++", b"=",
    b"input_ids", b"loss_mask", b"seq_start_id", b"values", b"iteration ", b" iteration 5/ 10 |",
    b"lm loss: ", b"Step Time : ", b"validation loss at iteration 3 | ", b"Training epoch 0, ",
    b"reduced_train_loss", b"--seq-length", b"--bf16", b"'", b"`", b"#",
)  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, seeds: tuple[bytes, ...], max_len: int = 65536) -> bytes:
    """A seed after 1-6 byte-level edits (or, one time in eight, arbitrary bytes)."""
    if not seeds or draw(st.integers(0, 7)) == 0:
        return draw(st.binary(max_size=min(max_len, 512)))
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.integers(0, 6))
        pos = draw(st.integers(0, len(data)))
        if op == 0:  # splice a meaningful token
            data[pos:pos] = draw(st.sampled_from(TOKENS))
        elif op == 1:  # cut a range
            end = draw(st.integers(pos, min(len(data), pos + 64)))
            del data[pos:end]
        elif op == 2 and pos < len(data):  # overwrite a byte
            data[pos] = draw(st.integers(0, 255))
        elif op == 3:  # insert random bytes
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == 4:  # repeat a range (long lines, deep nesting, many keys)
            end = draw(st.integers(pos, min(len(data), pos + 16)))
            data[pos:pos] = data[pos:end] * draw(st.integers(2, 64))
        elif op == 5:  # truncate
            del data[pos:]
        else:  # splice in a piece of another seed
            other = draw(st.sampled_from(seeds))
            start = draw(st.integers(0, len(other)))
            data[pos:pos] = other[start : start + draw(st.integers(0, 256))]
    return bytes(data[:max_len])


def _dumps(value: Any) -> bytes:
    """JSON text of ``value`` (the standard library writes integers of any size, as a hostile file may)."""
    return json.dumps(value).encode()


#: Scalars of every JSON type, including the awkward ones (big ints, negative zero, long strings).
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=20,
)


def _field_value(name_hint: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(json_values, name_hint)


token_lists = st.lists(st.integers(min_value=-3, max_value=2**33), max_size=8)
mask_lists = st.lists(st.one_of(st.integers(-1, 2), st.booleans(), st.none()), max_size=8)


@st.composite
def sample_records(draw: st.DrawFn) -> dict[str, Any]:
    """A pre-tokenized record with plausible keys and wrong-ish values."""
    record: dict[str, Any] = draw(st.dictionaries(st.text(max_size=6), json_values, max_size=3))
    if draw(st.booleans()):
        record["input_ids"] = draw(_field_value(token_lists))
    if draw(st.booleans()):
        record["loss_mask"] = draw(_field_value(mask_lists))
    return record


@st.composite
def jsonl_documents(draw: st.DrawFn, records: st.SearchStrategy[Any]) -> bytes:
    lines = draw(st.lists(st.one_of(records, json_values), min_size=0, max_size=6))
    blank = draw(st.sampled_from([b"\n", b"\r\n", b"\n\n"]))
    return b"".join(_dumps(line) + blank for line in lines)


@st.composite
def metadata_documents(draw: st.DrawFn) -> bytes:
    keys = ("dataset_max_seqlen", "max_samples_per_bin", "packing_factor", "packing_efficiency",
            "pack_size", "min_packed_seqlen", "bridgepack")  # fmt: skip
    entry = st.dictionaries(st.sampled_from(keys), json_values, max_size=7)
    doc = draw(st.one_of(st.lists(entry, max_size=3), json_values))
    return _dumps(doc)


@st.composite
def golden_documents(draw: st.DrawFn) -> bytes:
    values = st.one_of(
        st.dictionaries(st.text(max_size=4) | st.integers(-5, 99).map(str), json_values, max_size=5),
        st.lists(json_values, max_size=5),
        json_values,
    )
    entry = st.fixed_dictionaries(
        {"values": values},
        optional={"start_step": json_values, "step_interval": json_values, "end_step": json_values},
    )
    doc = draw(st.one_of(st.dictionaries(st.text(max_size=8), st.one_of(entry, json_values), max_size=3)))
    return _dumps(doc)


#: Plausible config keys, so YAML documents reach the typed sections, not only "unknown section".
CONFIG_KEYS = ("model", "train", "dataset", "ddp", "optimizer", "scheduler", "mixed_precision", "peft",
               "seq_length", "context_parallel_size", "micro_batch_size", "offline_packing_specs",
               "packed_sequence_specs", "packed_sequence_size", "pad_seq_to_mult", "_target_",
               "enable_offline_packing", "dataset_kwargs", "MODEL_ARGS", "--seq-length",
               "--bf16")  # fmt: skip
yaml_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.one_of(st.sampled_from(CONFIG_KEYS), st.text(max_size=6)), inner, max_size=4)
    ),
    max_leaves=16,
)


@st.composite
def yaml_documents(draw: st.DrawFn) -> bytes:
    doc = draw(
        st.dictionaries(st.sampled_from(CONFIG_KEYS), yaml_values, max_size=5)
        | st.dictionaries(
            st.sampled_from(CONFIG_KEYS[:6]),
            st.dictionaries(st.sampled_from(CONFIG_KEYS), yaml_values, max_size=4),
            max_size=4,
        )
        | yaml_values
    )
    return yaml.safe_dump(doc, default_flow_style=draw(st.booleans()), allow_unicode=True).encode()


_LIST_TYPES = (pa.list_(pa.int64()), pa.list_(pa.int8()), pa.large_list(pa.int32()), pa.list_(pa.bool_()),
               pa.list_(pa.float64()), pa.list_(pa.string()), pa.list_(pa.list_(pa.int64())), pa.int64(),
               pa.string(), pa.list_(pa.uint64()))  # fmt: skip
_VALUES = {
    str(pa.int64()): st.integers(-(2**63), 2**63 - 1),
    str(pa.int8()): st.integers(-128, 127),
    str(pa.int32()): st.integers(-(2**31), 2**31 - 1),
    str(pa.uint64()): st.integers(0, 2**64 - 1),
    str(pa.bool_()): st.booleans(),
    str(pa.float64()): st.floats(allow_nan=True),
    str(pa.string()): st.text(max_size=4),
}


def _values_of(kind: pa.DataType) -> st.SearchStrategy[Any]:
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return st.one_of(st.none(), st.lists(st.one_of(st.none(), _values_of(kind.value_type)), max_size=6))
    base = _VALUES[str(kind)]
    return st.one_of(st.none(), base)


@st.composite
def tables(draw: st.DrawFn, columns: tuple[str, ...]) -> pa.Table:
    """A table whose named columns (some, all or none of them) have random types, nulls and values."""
    rows = draw(st.integers(0, 5))
    names = draw(st.lists(st.sampled_from(columns), unique=True, min_size=0, max_size=len(columns)))
    if draw(st.booleans()):
        names = list(columns)
    arrays = {}
    for name in names:
        kind = draw(st.sampled_from(_LIST_TYPES)) if draw(st.integers(0, 3)) == 0 else pa.list_(pa.int64())
        values = draw(st.lists(_values_of(kind), min_size=rows, max_size=rows))
        arrays[name] = pa.array(values, type=kind)
    return pa.table(arrays) if arrays else pa.table({"other": pa.array([0] * rows)})


@st.composite
def parquet_documents(draw: st.DrawFn, columns: tuple[str, ...]) -> bytes:
    """A real Parquet file of :func:`tables` (row groups of 1 to 3 rows)."""
    return parquet_bytes(draw(tables(columns)), row_group_size=draw(st.integers(1, 3)))


@st.composite
def arrow_ipc_documents(draw: st.DrawFn, columns: tuple[str, ...]) -> bytes:
    """A real Arrow IPC stream of :func:`tables` (batches of 1 to 3 rows)."""
    return arrow_ipc_bytes(draw(tables(columns)), max_chunksize=draw(st.integers(1, 3)))
