"""One rule for token ids and mask values, whatever reads them (#16.2).

Ids are JSON/Arrow integers in ``[0, 2**32 - 1]`` -- never strings, booleans, floats, nulls or lists; mask
values are 0/1 integers or booleans. The same row is written as a plain JSON line (the numba scanner), a
JSON line the scanner declines (a non-ASCII extra field: the orjson path), Parquet and a ``datasets``
directory (where Arrow can hold the row's values at all), and every reader must give the same verdict and,
when it accepts, the same values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridgepack.cli import main
from bridgepack.data.samples import iter_chunks
from bridgepack.data.samples._examples import pretokenized
from bridgepack.errors import DataError

MAX_ID = 2**32 - 1
GOOD_ID = st.integers(0, MAX_ID)
BAD_ID = st.sampled_from(["7", "", True, False, 1.0, 2.5, None, [3], -1, MAX_ID + 1, 10**26, {"a": 1}])
GOOD_MASK = st.sampled_from([0, 1, True, False])
BAD_MASK = st.sampled_from([2, -1, "1", "0", 1.0, 0.0, None, [1], 10**26])


def _ids_ok(row: dict[str, Any]) -> bool:
    return all(type(v) is int and 0 <= v <= MAX_ID for v in row["input_ids"])


def _valid(row: dict[str, Any]) -> bool:
    """The rule, stated independently of the readers."""
    ids_ok = _ids_ok(row)
    mask = row.get("loss_mask")
    mask_ok = mask is None or all(type(v) in (int, bool) and v in (0, 1) for v in mask)
    return ids_ok and mask_ok


@st.composite
def rows(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 5))
    ids = draw(st.lists(st.one_of(GOOD_ID, GOOD_ID, BAD_ID), min_size=n, max_size=n))
    row: dict[str, Any] = {"input_ids": ids}
    if draw(st.booleans()):
        row["loss_mask"] = draw(st.lists(st.one_of(GOOD_MASK, GOOD_MASK, BAD_MASK), min_size=n, max_size=n))
    return row


def _read(path: Path) -> tuple[str, Any]:
    """("ok", (tokens, mask)) or ("error", message) from bridgepack's ingest of ``path``."""
    try:
        [chunk] = list(iter_chunks([path]))
        examples = pretokenized(str(path), chunk)
    except DataError as exc:
        return "error", str(exc)
    return "ok", (examples.tokens.astype(np.int64).tolist(), examples.mask.astype(np.int64).tolist())


def _arrow_table(row: dict[str, Any]) -> pa.Table | None:
    """The row as Arrow, when Arrow can type it (mixed types in one list, or a 90-bit integer, cannot)."""
    try:
        return pa.Table.from_pylist([row])
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        return None


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], max_examples=60)
@given(row=rows())
def test_every_reader_applies_one_rule(row: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    import datasets

    base = tmp_path_factory.mktemp("rule")
    plain = base / "plain.jsonl"
    plain.write_text(json.dumps(row) + "\n")
    slow = base / "slow.jsonl"
    slow.write_text(json.dumps({"text": "é", **row}, ensure_ascii=False) + "\n")
    verdicts = {"scanner": _read(plain), "orjson": _read(slow)}
    table = _arrow_table(row)
    if table is not None:
        pq.write_table(table, base / "rows.parquet")
        verdicts["parquet"] = _read(base / "rows.parquet")
        datasets.Dataset(table).save_to_disk(str(base / "ds"))
        verdicts["datasets"] = _read(base / "ds")
    expected = "ok" if _valid(row) else "error"
    assert {name: v[0] for name, v in verdicts.items()} == dict.fromkeys(verdicts, expected), verdicts
    if expected == "ok":
        mask = row.get("loss_mask") or [1] * len(row["input_ids"])
        want = ([int(v) for v in row["input_ids"]], [int(v) for v in mask])
        assert all(v[1] == want for v in verdicts.values()), verdicts
    else:
        field = "loss_mask" if _ids_ok(row) else "input_ids"
        for name, (_, message) in verdicts.items():
            where = "plain.jsonl:1" if name == "scanner" else "slow.jsonl:1" if name == "orjson" else "row 0"
            assert where in message and f"field '{field}'" in message, (name, message)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'{"input_ids": ["7", "8", "2"]}\n', "field 'input_ids': expected integer token ids, found '7'"),
        (b'{"input_ids": [true, false, 2]}\n', "field 'input_ids': expected integer token ids, found a bool"),
        (b'{"input_ids": [5, 2], "loss_mask": ["1", "1"]}\n', "field 'loss_mask': expected 0/1 integers"),
        (
            b'{"input_ids": [99999999999999999999999999, 2]}\n',
            "field 'input_ids': token id 99999999999999999999999999 out of range [0, 4294967295]",
        ),
    ],
)
@pytest.mark.parametrize("command", ["pack", "plan"])
def test_pack_and_plan_refuse_what_the_rule_refuses(
    body: bytes, said: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(b'{"input_ids": [5, 2]}\n' + body)
    args = (
        ["pack", str(source), "--out", str(tmp_path / "out"), "--pack-size", "8", "--quiet"]
        if command == "pack"
        else ["plan", str(source), "--pack-sizes", "8", "--quiet"]
    )
    code = main(args)
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"in.jsonl:2: {said}" in err


@pytest.mark.parametrize("eos", ["4294967296", "-1", "99999999999999999999"])
@pytest.mark.parametrize("command", ["pack", "plan", "diff"])
def test_eos_id_is_range_checked_like_a_token_id(
    eos: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--eos-id 4294967296`` used to pad with 0 (the uint32 store wrapped it) and record 4294967296."""
    source = tmp_path / "in.jsonl"
    source.write_bytes(b'{"input_ids": [5, 2]}\n')
    args = {
        "pack": ["pack", str(source), "--out", str(tmp_path / "out"), "--pack-size", "8"],
        "plan": ["plan", str(source), "--pack-sizes", "8"],
        "diff": ["diff", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")],
    }[command]
    code = main([*args, "--eos-id", eos, "--quiet"] if command != "diff" else [*args, "--eos-id", eos])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--eos-id: expected an integer >= 0 and <= 4294967295, found {eos}" in err
    assert not (tmp_path / "out").exists()
