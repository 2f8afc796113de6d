"""Python API errors name the row and the field as the CLI does, and refuse what the CLI refuses (#29).

The sweep is generated from the API's own parameters -- every typed field of :class:`PackOptions`'s
groups, every field of :class:`PaddingFreeCollator`, every row field the collator reads -- and from real
rows (the bundled example dataset packed by ``pack_dataset``): each gets values of the wrong kind (a
float, a boolean, a string, a null, a nested list; for ids a negative), as a list, a numpy array and a
tensor. Each must be a :class:`BridgepackError` (or, for ``pack_dataset``, TRL's ``TypeError``/``ValueError``)
with one line naming what is wrong -- never a truncated value, nor numpy's or torch's own error.
"""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import bridgepack
from _support.pack_inputs import run, write_jsonl
from bridgepack.data.pipeline._options import InputOptions, LengthPolicy, PackSize, RunSettings
from bridgepack.data.samples import example_dataset_path
from bridgepack.data.samples.text import TextOptions
from bridgepack.errors import BridgepackError, DataError, UsageError
from bridgepack.packing import MAX_PAD_MULTIPLE

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")

from bridgepack.batching import PackedCollator, pack_in_batch, pack_rows  # noqa: E402
from bridgepack.trl import PaddingFreeCollator, pack_dataset  # noqa: E402

#: Wrong values per declared kind (``True`` is no integer; ``"3"`` is no number).
WRONG: dict[str, list[Any]] = {
    "int": [1.5, 2.0, True, "3"],
    "bool": ["yes", 1, None],
    "str": [3, b"input"],
    "Path": [3],
}
_NOT_FLAT = {"paths", "text", "pack_size", "out_dir"}


def _flat_options() -> list[tuple[str, str]]:
    """(flat keyword, declared kind) of every option ``bridgepack.pack`` takes whose kind is checkable."""
    found = []
    for group in (InputOptions, TextOptions, PackSize, LengthPolicy, RunSettings):
        for f in fields(group):
            kind = str(f.type).replace(" | None", "")
            if f.name not in _NOT_FLAT and kind in WRONG:
                found.append((f.name, kind))
    return [*found, ("bridge_compat", "bool")]


def _example_rows(n: int = 40) -> list[dict[str, Any]]:
    table = pq.read_table(example_dataset_path()).slice(0, n)
    return [{"input_ids": row["input_ids"]} for row in table.to_pylist()]


def test_every_pack_option_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "ids.jsonl", _example_rows(8))
    options = _flat_options()
    assert {"eos_id", "workers", "pad_seq_to_mult", "max_seq_length", "seed", "add_bos"} <= {
        n for n, _ in options
    }
    tried = 0
    for name, kind in [*options, ("pack_size", "int")]:
        for value in WRONG[kind]:
            out = tmp_path / f"out-{name}-{tried}"
            kwargs = {name: value}
            size = kwargs.pop("pack_size", 64)
            with pytest.raises(UsageError) as refused:
                bridgepack.pack(source, out, size, **kwargs)
            message = str(refused.value)
            assert name in message and "\n" not in message and repr(value) in message, message
            assert not out.exists()
            tried += 1
    assert tried > 60


def test_paths_and_too_long_given_as_strings_work(tmp_path: Path) -> None:
    """What the CLI's parser converts, the API converts too (a tokenizer path as ``str``, ``too_long`` by
    name); a wrong name is refused with the choices."""
    source = write_jsonl(tmp_path / "ids.jsonl", _example_rows(8))
    result = bridgepack.pack(
        str(source), str(tmp_path / "a"), 2048, too_long="truncate", scratch_dir=str(tmp_path)
    )
    assert result.counts.samples_in == 8
    with pytest.raises(UsageError, match=r"too_long must be one of .*, got 'cut'"):
        bridgepack.pack(source, tmp_path / "b", 2048, too_long="cut")


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("pad_token_id", [-1, 1.5, True, "0", None, 2**32]),
        ("return_flash_attn_kwargs", [1, "yes", None]),
    ],
)
def test_collator_settings_of_the_wrong_kind_are_refused(name: str, values: list[Any]) -> None:
    assert {f.name for f in fields(PaddingFreeCollator)} == {
        "pad_token_id",
        "pad_to_multiple_of",
        "return_flash_attn_kwargs",
    }
    for value in values:
        with pytest.raises(UsageError) as refused:
            PaddingFreeCollator(**{name: value})
        assert str(refused.value).startswith(f"{name} must be "), refused.value


#: How to call each batch builder with one pad-multiple setting (a tiny real batch where it collates).
BATCH_BUILDERS: dict[str, Any] = {
    "PackedCollator": lambda **kw: PackedCollator(2, 8, **kw),
    "PaddingFreeCollator": lambda **kw: PaddingFreeCollator(**kw),
    "pack_in_batch": lambda **kw: pack_in_batch(
        {"input_ids": torch.tensor([[5, 6, 7]]), "position_ids": torch.tensor([[0, 1, 2]])}, **kw
    ),
    "pack_rows": lambda **kw: pack_rows(
        [{"input_ids": torch.tensor([5, 6]), "position_ids": torch.arange(2)}], **kw
    ),
}
#: Pad multiples ``bridgepack pack`` refuses (out of ``[1, MAX_PAD_MULTIPLE]``, or no integer).
BAD_MULTIPLES: list[Any] = [0, -16, MAX_PAD_MULTIPLE + 1, 2**31, 2**64, 2.5, 8.0, np.float64(8), True, "8"]


def _pad_multiple_parameters() -> list[tuple[str, str]]:
    """Every pad-multiple parameter of the public batch builders, found by name in their signatures."""
    found = []
    for package in (bridgepack.batching, bridgepack.trl):
        for name in package.__all__:
            try:
                parameters = inspect.signature(getattr(package, name)).parameters
            except (TypeError, ValueError):  # constants, typed dicts
                continue
            found += [(name, p) for p in parameters if re.search(r"pad_.*mult", p)]
    return sorted(set(found))


def test_the_sweep_covers_every_pad_multiple_parameter() -> None:
    assert {name for name, _ in _pad_multiple_parameters()} == set(BATCH_BUILDERS)


@pytest.mark.parametrize(("builder", "parameter"), _pad_multiple_parameters())
def test_pad_multiples_out_of_the_cli_range_are_refused_by_name(builder: str, parameter: str) -> None:
    """The CLI caps pad multiples at MAX_PAD_MULTIPLE (65,536); the Python builders refuse the same values
    with the parameter's name, and take the limit itself and numpy integers."""
    call = BATCH_BUILDERS[builder]
    for value in BAD_MULTIPLES:
        with pytest.raises(UsageError) as refused:
            call(**{parameter: value})
        assert str(refused.value).startswith(
            f"{parameter}: expected an integer >= 1 and <= {MAX_PAD_MULTIPLE}, found "
        ), (value, refused.value)
        assert "\n" not in str(refused.value)
    call(**{parameter: MAX_PAD_MULTIPLE})
    call(**{parameter: np.int64(4)})


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("eos_id", [-1, 1.5, True, "2", 2**32]),
        ("max_seq_length", [0, -8, 8.5, True, "8", 2**31]),
        ("pad_to_max_length", [1, "yes", None]),
        ("pad_cu_seqlens", [1, "no", None]),
    ],
)
def test_packed_collator_settings_the_cli_refuses_are_refused_by_name(name: str, values: list[Any]) -> None:
    """``int(1.5)`` made a pack size of 1 and ``"yes"`` a fixed width; the CLI's ranges hold here too."""
    for value in values:
        settings: dict[str, Any] = {"eos_id": 2, "max_seq_length": 8, name: value}
        with pytest.raises(UsageError) as refused:
            PackedCollator(**settings)
        assert str(refused.value).startswith(f"{name}: expected "), (value, refused.value)


@pytest.fixture(scope="module")
def packed_rows() -> list[dict[str, Any]]:
    """Real packed rows: the example dataset's first rows through ``pack_dataset``, with a completion
    mask, TRL's assistant mask, labels and positions made from them."""
    rows = _example_rows(60)
    for row in rows:
        n = len(row["input_ids"])
        row["completion_mask"] = [int(i >= n // 2) for i in range(n)]
    packed = pack_dataset(datasets.Dataset.from_list(rows), 512)
    out = []
    for row in packed.to_list()[:4]:
        lengths = row["seq_lengths"]
        row["position_ids"] = [i for n in lengths for i in range(n)]
        row["labels"] = [
            t if m else -100 for t, m in zip(row["input_ids"], row["completion_mask"], strict=True)
        ]
        row["assistant_masks"] = row["completion_mask"]
        out.append(row)
    return out


#: Row fields the collator reads and what a bad value of each is (``-1`` is fine in labels/positions).
ROW_FIELDS = {
    "input_ids": [1.5, True, "7", None, [3], -1, 2**40],
    "labels": [1.5, True, "7", None, [3]],
    "position_ids": [0.5, True, "0", None, [0]],
    "seq_lengths": [1.5, True, "2", None, [2]],
    "completion_mask": [0.5, "1", None, [1], 2],
    "assistant_masks": [0.5, "1", None, [1], 2],
}


def _without(row: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in names}


def _unread(field: str) -> tuple[str, ...]:
    """The fields that would keep ``field`` from being read: ``position_ids`` win over ``seq_lengths``,
    ``labels`` over the masks (each mask is read alone here)."""
    if field == "seq_lengths":
        return ("position_ids",)
    if field in ("completion_mask", "assistant_masks"):
        return ("labels", "assistant_masks" if field == "completion_mask" else "completion_mask")
    return ()


@pytest.mark.parametrize("field", sorted(ROW_FIELDS))
def test_collator_rows_with_a_bad_value_name_the_row_and_field(
    packed_rows: list[dict[str, Any]], field: str
) -> None:
    collate = PaddingFreeCollator()
    rows = [_without(r, *_unread(field)) for r in packed_rows]
    good = collate(rows)
    tried = 0
    for index in range(len(rows)):
        for at in (0, len(rows[index][field]) // 2, len(rows[index][field]) - 1):
            for value in ROW_FIELDS[field]:
                bad = [dict(r) for r in rows]
                bad[index][field] = list(rows[index][field])
                bad[index][field][at] = value
                with pytest.raises(DataError) as refused:
                    collate(bad)
                message = str(refused.value)
                assert message.startswith(f"row {index}: field {field!r}: ") and "\n" not in message
                tried += 1
            for container in (np.asarray, torch.tensor):  # the same field as an array / a tensor of floats
                bad = [dict(r) for r in rows]
                bad[index][field] = container(np.asarray(rows[index][field], dtype=np.float64) + 0.5)
                with pytest.raises(DataError, match=rf"^row {index}: field '{field}': expected "):
                    collate(bad)
    assert tried >= 4 * 3 * 5
    for container in (np.asarray, torch.tensor):  # integer arrays and tensors: the very batch lists give
        same = collate([{k: container(v) if isinstance(v, list) else v for k, v in r.items()} for r in rows])
        assert all(torch.equal(same[k], good[k]) for k in good)


def test_collator_says_what_the_cli_says(
    tmp_path: Path, packed_rows: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    """One bad id, the same words from ``bridgepack pack`` and from the collator (after the location)."""
    for value in (1.5, True, "7", -1, 2**33):
        row = {"input_ids": list(packed_rows[0]["input_ids"])}
        row["input_ids"][3] = value
        source = write_jsonl(tmp_path / "bad.jsonl", [row])
        code, _, err = run([str(source), "--out", str(tmp_path / "out"), "-n", "4096"], capsys)
        assert code == 1
        cli = err.strip().split("field 'input_ids': ", 1)[1]
        with pytest.raises(DataError) as refused:
            PaddingFreeCollator()([row])
        assert str(refused.value) == f"row 0: field 'input_ids': {cli}"


def test_pack_dataset_refuses_ids_that_are_not_integers() -> None:
    for values in ([[1.5, 2.0], [3.0]], [[1.0, 2.0], [3.0]], [[True, False], [True]]):
        dataset = datasets.Dataset.from_dict({"input_ids": values})
        with pytest.raises(TypeError, match=r"^column 'input_ids': expected integer token ids, found "):
            pack_dataset(dataset, 4)
    other = datasets.Dataset.from_dict({"input_ids": [[1, 2], [3]], "weights": [[0.5, 1.0], [2.0]]})
    assert pack_dataset(other, 4).to_dict()["weights"] == [[0.5, 1.0, 2.0]]  # other columns: as TRL


@pytest.mark.parametrize("name", ["dp", "gbs"])
def test_inspect_sampler_settings_of_the_wrong_kind(tmp_path: Path, name: str) -> None:
    source = write_jsonl(tmp_path / "ids.jsonl", _example_rows(8))
    result = bridgepack.pack(source, tmp_path / "out", 2048)
    for value in (-1, 0, 1.5, True, "2"):
        settings = {"dp": 1, "gbs": 1, name: value}
        with pytest.raises(UsageError, match=rf"^inspect\(\): {name} must be a positive integer, got "):
            bridgepack.inspect(result.packed_path, **settings)
    alone = {"dp": {"dp": 2}, "gbs": {"gbs": 8}}[name]  # as `bridgepack inspect --dp 2` alone: exit 2
    with pytest.raises(UsageError, match=r"^inspect\(\): dp and gbs go together$"):
        bridgepack.inspect(result.packed_path, **alone)


def test_every_refusal_is_a_bridgepack_error_with_one_line(packed_rows: list[dict[str, Any]]) -> None:
    """The sweep's values as a whole batch field (not one element): a clear error, not numpy's."""
    collate = PaddingFreeCollator()
    for field in ROW_FIELDS:
        for value in ("abc", 3, {"a": 1}, [[1, 2], [3, 4]], *([None] if field == "input_ids" else [])):
            row = _without(packed_rows[0], *_unread(field))
            row[field] = value
            try:
                collate([row])
            except BridgepackError as exc:
                assert str(exc).startswith(f"row 0: field {field!r}: ") and "\n" not in str(exc), exc
            else:  # pragma: no cover - a shown failure
                raise AssertionError(f"{field}={json.dumps(value)} was accepted")
