"""The numba JSON-lines fast path: equal to orjson on what it accepts, declines everything else."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.data.samples._jsonscan import scan_lines

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
records = st.fixed_dictionaries(
    {"input_ids": st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=12)},
    optional={"extra": json_values, "loss_mask": st.just(None)},
)


@given(st.lists(records, min_size=1, max_size=5), st.sampled_from([b" ", b"", b"\t"]))
def test_scanner_matches_orjson_or_declines(rows: list[dict[str, object]], pad: bytes) -> None:
    lines = []
    for row in rows:
        if "loss_mask" in row:
            row["loss_mask"] = [i % 2 for i in range(len(row["input_ids"]))]  # type: ignore[arg-type]
        lines.append(pad + orjson.dumps(row) + pad + b"\n")
    scanned = scan_lines(lines)
    has_mask = ["loss_mask" in row for row in rows]
    ascii_only = all(line.isascii() for line in lines)
    if not ascii_only or (any(has_mask) and not all(has_mask)):
        assert scanned is None
        return
    assert scanned is not None
    tokens, mask, lengths = scanned
    assert tokens.tolist() == [t for row in rows for t in row["input_ids"]]  # type: ignore[attr-defined]
    assert lengths.tolist() == [len(row["input_ids"]) for row in rows]  # type: ignore[arg-type]
    expected_mask = [m for row in rows for m in row.get("loss_mask") or [1] * len(row["input_ids"])]  # type: ignore[attr-defined, arg-type]
    assert mask.tolist() == expected_mask


@pytest.mark.parametrize(
    "line",
    [
        b'{"input_ids": [5, 2]',
        b'{"input_ids": [5, -2]}',
        b'{"input_ids": [5, 2.0]}',
        b'{"input_ids": [5, 2e1]}',
        b'{"input_ids": [5, true]}',
        b'{"input_ids": []}',
        b'{"input_ids": [5, 2], "x": tru}',
        b'{"input_ids": [5, 2], "x": 01}',
        b'{"input_ids": [05, 2]}',
        b'{"input_ids": [5, 2]} x',
        b'{"input_ids": [5, 2], "loss_mask": [1]}',
        b'{"input_ids": [5, 2], "loss_mask": [1, 2]}',
        b'{"input\\u005fids": [5, 2]}',
        b'{"input_ids": [5, 2], "input_ids": [5, 2]}',
        b'{"input_ids": [5, 2], "t": "\xc3\xa9"}',
        b"[1]",
        b'{"input_ids": [5, 2],}',
        b'{"input_ids": [4294967296]}',
        b'{"input_ids": [5, 2], "x": "a\\qb"}',
        b'{"loss_mask": [1, 1]}',
        b"{}",
    ],
)
def test_scanner_declines(line: bytes) -> None:
    assert scan_lines([line]) is None


def test_scanner_reads_nested_other_fields() -> None:
    line = (
        b'{"meta": {"a": [1.5e3, -0, "s\\u00e9\\n", true, null, false, {}], "b": []}, '
        b'"input_ids": [7, 0, 2]}\n'
    )
    tokens, mask, lengths = scan_lines([line])  # type: ignore[misc]
    assert tokens.tolist() == [7, 0, 2] and mask.tolist() == [1, 1, 1] and lengths.tolist() == [3]
    assert np.array_equal(tokens, orjson.loads(line)["input_ids"])
