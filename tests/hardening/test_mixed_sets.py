"""Mixed and incomplete pack sets (#43 items 2, 5, 12): every reader refuses a sharded set's folder that
holds anything but its shards, and a sidecar of another split, pack size or run, with one message.

Before: ``training_512/old.parquet`` copied into a ray set's folder made every reader look for the sidecar
inside the folder, find none and pass the set ("no metadata sidecar found"), while Bridge trained on the
foreign file's rows; ``fingerprint --check`` took a sidecar named for another pack size; two pack sizes
packed into one folder shared ``rejects_training.jsonl``, the second run's replacing the first's.

The readers are the app's readers of packed data (``test_damaged_packs.py`` finds them by help text).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import pytest

import bridgepack
from _support.pack_inputs import random_examples, write_jsonl
from _support.sharded_sets import packed_readers, sharded_pack
from bridgepack.cli import main

PACK = 32
META = f"{PACK}_metadata.jsonl"
SHARD = "training_32-{:05d}.idx.parquet"


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A sharded set of three shards, the one-file set of the same samples, and sets of other runs: a
    sharded one of other samples, one of another pack size and one of the validation split."""
    root = tmp_path_factory.mktemp("mixed")
    rng = np.random.default_rng(43)
    data = write_jsonl(root / "in.jsonl", random_examples(rng, 2600, 40))
    other = write_jsonl(root / "other.jsonl", random_examples(rng, 2600, 40))
    made = {
        "sharded": sharded_pack([data], root / "sharded", 3, PACK).metadata_path.parent,
        "other_sharded": sharded_pack([other], root / "other_sharded", 3, PACK).metadata_path.parent,
    }
    for name, args in {
        "file": [str(data), "-n", str(PACK)],
        "size64": [str(data), "-n", "64"],
        "validation": [str(data), "-n", str(PACK), "--split", "validation"],
    }.items():
        assert main(["pack", "-q", *args, "--out", str(root / name)]) == 0
        made[name] = root / name
    assert sorted(os.listdir(made["sharded"] / "training_32")) == [SHARD.format(i) for i in range(3)]
    return made


def _copy(source: Path, tmp_path: Path) -> Path:
    out = tmp_path / "set"
    shutil.copytree(source, out)
    return out


def _refused_alike(location: str, code: int, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every reader exits ``code`` with one last line, the same for all, that starts with ``expected``."""
    lines = {}
    for name, argv in packed_readers(location, PACK).items():
        got = main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert got == code, (name, err[-2:])
        assert err and err[-1].startswith(f"error: {expected}"), (name, err[-1:], expected)
        lines[name] = err[-1]
    assert len(set(lines.values())) == 1, lines


def _foreign(what: str) -> Callable[[Path, Path], str]:
    return lambda folder, _: (
        f"{folder / what}: not a shard of the set in {folder} (its shards are {SHARD.format(0)}, "
        f"{SHARD.format(1)}, ...)"
    )


def _missing(index: int) -> Callable[[Path, Path], str]:
    return lambda folder, _: f"{folder}: {SHARD.format(index)} is missing"


#: kind -> (how the folder is changed, the message every reader prints); ``folder`` is the set's shards'
#: folder, ``others`` another run's.
FOLDER_CHANGES: dict[str, tuple[Callable[[Path, Path], None], Callable[[Path, Path], str]]] = {
    "foreign parquet": (
        lambda folder, others: shutil.copy(others / SHARD.format(0), folder / "old.parquet"),
        _foreign("old.parquet"),
    ),
    "copy of a shard": (
        lambda folder, _: shutil.copy(folder / SHARD.format(0), folder / "copy.pq"),
        _foreign("copy.pq"),
    ),
    "a shard past the recorded count": (
        lambda folder, _: shutil.copy(folder / SHARD.format(0), folder / SHARD.format(3)),
        lambda folder, _: (
            f"{folder / SHARD.format(3)}: not a shard of the set ({folder.parent / META} entry 0 "
            "records 3 shards"
        ),
    ),
    "middle shard missing": (lambda folder, _: (folder / SHARD.format(1)).unlink(), _missing(1)),
    "last shard missing": (
        lambda folder, _: (folder / SHARD.format(2)).unlink(),
        lambda folder, _: f"{folder}: 2 of the set's 3 shards ({SHARD.format(2)} is missing",
    ),
    "shard renamed": (
        lambda folder, _: (folder / SHARD.format(1)).rename(folder / "part1.parquet"),
        _foreign("part1.parquet"),
    ),
    "shard hidden": (
        lambda folder, _: (folder / SHARD.format(1)).rename(folder / f".{SHARD.format(1)}"),
        _missing(1),
    ),
    "a note": (
        lambda folder, _: (folder / "NOTES.txt").write_text("packed on monday"),
        _foreign("NOTES.txt"),
    ),
    "a subfolder": (lambda folder, _: (folder / "old").mkdir(), _foreign("old")),
    "another run's shard under its name": (
        lambda folder, others: shutil.copy(others / SHARD.format(1), folder / SHARD.format(1)),
        lambda folder, _: f"{folder / SHARD.format(1)} (run ",
    ),
}


@pytest.mark.parametrize("kind", FOLDER_CHANGES)
def test_every_reader_refuses_a_set_folder_holding_more_or_less_than_its_shards(
    kind: str, sets: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change, expected = FOLDER_CHANGES[kind]
    folder = _copy(sets["sharded"], tmp_path) / "training_32"
    change(folder, sets["other_sharded"] / "training_32")
    _refused_alike(str(folder), 1, expected(folder, folder), capsys)


def test_the_whole_set_passes_every_reader_and_fingerprint_check_finds_its_sidecar(
    sets: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = sets["sharded"] / "training_32"
    for name, argv in packed_readers(str(folder), PACK).items():
        if name != "train":  # trains a model: the engine tests read sharded sets with it
            assert main(argv) == 0, (name, capsys.readouterr().err)
    for given in (folder, folder / "*.parquet"):  # the folder or a glob of its shards: the sidecar beside it
        assert main(["fingerprint", str(given), "--check"]) == 0, capsys.readouterr().err
        assert f"matches the record in {sets['sharded'] / META}" in capsys.readouterr().out


def _sidecar_of(source: str) -> Callable[[dict[str, Path], Path], None]:
    """Replace the set's sidecar with ``source``'s (named as this set's)."""
    return lambda sets, out: shutil.copy(next(sets[source].glob("*_metadata.jsonl")), out / META)


RENAMED = "named for another size"


def _renamed_for_64(sets: dict[str, Path], out: Path) -> None:
    """The set's own sidecar renamed for packs of 64, and the packed file renamed so that no name says its
    pack size (the folder's only sidecar is then the one a reader takes)."""
    (out / META).rename(out / "64_metadata.jsonl")
    (out / "training_32.idx.parquet").rename(out / "packs.parquet")


#: kind -> (the change, the message every reader prints), on the one-file set and on the sharded one
#: (``first``: the set's first packed file, which the message names).
SIDECARS: dict[str, tuple[Callable[[dict[str, Path], Path], None], Callable[[Path, str], str]]] = {
    "another run": (_sidecar_of("other_sharded"), lambda out, first: f"{first} (run "),
    "another pack size": (
        _sidecar_of("size64"),
        lambda out, first: f"{out / META}: entry 0: pack_size 64 differs from the file name's 32 ({first}",
    ),
    "another split": (
        _sidecar_of("validation"),
        lambda out, first: f"{out / META}: holds no entry of the training split for {first}",
    ),
    RENAMED: (
        _renamed_for_64,
        lambda out, first: (
            f"{out / '64_metadata.jsonl'}: entry 0 holds packs of 32 tokens, but the sidecar "
            f"is named for 64: Bridge looks for {out / META}"
        ),
    ),
}


#: Every kind on both layouts but a sidecar named for another size beside shards: a shard's name says its
#: pack size, so readers look for the sidecar of that size only (a renamed one is not the set's).
CASES = [
    (k, layout) for k in SIDECARS for layout in ("file", "sharded") if (k, layout) != (RENAMED, "sharded")
]


@pytest.mark.parametrize(("kind", "layout"), CASES)
def test_every_reader_refuses_a_sidecar_of_another_split_size_or_run(
    kind: str, layout: str, sets: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change, expected = SIDECARS[kind]
    out = _copy(sets[layout], tmp_path)
    change(sets, out)
    if layout == "sharded":
        location, first = out / "training_32", out / "training_32" / SHARD.format(0)
    else:
        location = first = next(out.glob("*.parquet"))  # training_32.idx.parquet, or packs.parquet
    _refused_alike(str(location), 1, expected(out, str(first)), capsys)


def test_a_sidecar_named_for_another_size_is_not_the_sets_for_any_reader(
    sets: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As reported: the set's folder given (its name says no pack size) beside its only sidecar, named for
    another size; ``fingerprint --check`` said "matches the record in 64_metadata.jsonl" while Bridge, as
    every other reader, looks for the size the packed files' names say. Every reader, given the folder
    or its file, now looks for that name: the set has no sidecar, and ``--check`` has no record."""
    out = _copy(sets["file"], tmp_path)
    (out / META).rename(out / "64_metadata.jsonl")
    for location in (out, out / "training_32.idx.parquet", out / "*.parquet"):
        for name, argv in packed_readers(str(location), PACK).items():
            if name == "train":  # trains a model when it passes: it finds the sidecar of the same files
                continue
            code = main(argv)
            captured = capsys.readouterr()
            assert "64_metadata.jsonl" not in captured.out + captured.err, (name, location)
            if name == "fingerprint":
                expected = f"error: {location}: no fingerprint recorded in a metadata sidecar beside it"
                assert (code, captured.err.strip()[: len(expected)]) == (2, expected)
            elif name == "inspect":
                assert code == 0 and "not checked: no metadata sidecar found" in captured.out


def test_inspect_refuses_an_explicit_sidecar_named_for_another_size(
    sets: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy(sets["file"], tmp_path)
    (out / META).rename(out / "64_metadata.jsonl")
    args = ["inspect", str(out / "training_32.idx.parquet"), "--metadata", str(out / "64_metadata.jsonl")]
    assert main([*args, "-q"]) == 1
    assert "is named for 64: Bridge looks for" in capsys.readouterr().err


def test_two_pack_sizes_in_one_folder_keep_their_own_rejects(tmp_path: Path) -> None:
    """Packs of 32 then of 24 into one folder: each set's rejects are its own (those of the size packed
    alone, with its run id), and every reader accepts both sets."""
    rows = random_examples(np.random.default_rng(5), 300, 40)
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    results = {n: bridgepack.pack(data, out, n) for n in (32, 24)}
    for n, result in results.items():
        alone = bridgepack.pack(data, tmp_path / f"alone{n}", n)
        assert result.rejects_path == out / f"rejects_training_{n}.jsonl"
        lines = [orjson.loads(x) for x in result.rejects_path.read_bytes().splitlines()]
        assert {line["run_id"] for line in lines} == {result.metadata.run_id}
        solo = [orjson.loads(x) for x in alone.rejects_path.read_bytes().splitlines()]
        assert [{**x, "run_id": None} for x in lines] == [{**x, "run_id": None} for x in solo] != []
        assert bridgepack.inspect(result.packed_path).metadata.status == "consistent"
        assert main(["fingerprint", str(result.packed_path), "--check", "-q"]) == 0
