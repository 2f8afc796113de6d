"""One command's output given to another as input is named for what it is (#43 item 3): exit 2, one line.

Before: ``bridgepack pack packed/training_512.idx.parquet --out p2`` read each pack as one pre-tokenized
sample (``seq_start_id`` ignored, the sequences of a pack merged), exit 0; a rejects file or a sidecar
given to ``pack`` failed on a missing field; given to ``inspect`` they were "not a packed Parquet
location". The readers are found in the app by their help text: the readers of samples (``pack``,
``plan``) and of packed data (``test_damaged_packs.py`` holds that list).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer

from _support.pack_inputs import random_examples, write_jsonl
from _support.sample_files import WRITERS
from _support.sharded_sets import packed_readers, sharded_pack
from bridgepack.cli import app, main
from bridgepack.cli._pack_options import INPUTS_HELP
from bridgepack.data import packset as fmt
from bridgepack.data.pipeline import PackOptions, prepare_sharded
from bridgepack.data.samples import INPUT_FORMATS
from bridgepack.errors import InputError

PACK = 32


def samples_readers(path: str) -> dict[str, list[str]]:
    return {
        "pack": ["pack", path, "--out", "never", "-n", str(PACK), "-q"],
        "plan": ["plan", path, "-q"],
    }


def test_every_reader_of_samples_is_swept() -> None:
    found = set()

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, (*path, name))
        leaf = getattr(command, "commands", None) is None
        if leaf and any(p.help == INPUTS_HELP for p in command.params):
            found.add(" ".join(path))

    walk(typer.main.get_command(app), ())
    assert found == set(samples_readers("x"))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """Every kind of file bridgepack writes: name -> (path, the kind bridgepack calls it)."""
    root = tmp_path_factory.mktemp("outputs")
    data = write_jsonl(root / "in.jsonl", random_examples(np.random.default_rng(3), 300, 40))
    assert main(["pack", str(data), "--out", str(root / "p"), "-n", str(PACK), "-q"]) == 0
    assert main(["pack", str(data), "--out", str(root / "hf"), "-n", str(PACK), "--layout", "hf", "-q"]) == 0
    sharded = sharded_pack([data], root / "s", 2, PACK).packed_path
    dump = root / "batches.npz"
    packed = root / "p" / f"training_{PACK}.idx.parquet"
    assert main(["inspect", str(packed), "--dump-batches", "2", "--out", str(dump), "-q"]) == 0
    return {
        "packed file": (packed, fmt.PACKED_DATA),
        "sharded set": (sharded, fmt.SHARDED_SET),
        "pack output folder": (root / "p", fmt.OUTPUT_DIRECTORY),
        "hf data file": (root / "hf" / "data" / "train-00000-of-00001.parquet", fmt.HF_PACKED_DATA),
        "hf output folder": (root / "hf", fmt.OUTPUT_DIRECTORY),
        "rejects": (root / "p" / f"rejects_training_{PACK}.jsonl", fmt.REJECTS_FILE),
        "sidecar": (root / "p" / f"{PACK}_metadata.jsonl", fmt.METADATA_SIDECAR),
        "hf sidecar": (root / "hf" / fmt.HF_METADATA, fmt.METADATA_SIDECAR),
        "batch dump": (dump, fmt.BATCH_DUMP),
    }


KINDS = [
    "packed file",
    "sharded set",
    "pack output folder",
    "hf data file",
    "hf output folder",
    "rejects",
    "sidecar",
    "hf sidecar",
    "batch dump",
]


@pytest.mark.parametrize("kind", KINDS)
def test_readers_of_samples_refuse_every_output_of_bridgepack(
    kind: str,
    outputs: dict[str, tuple[Path, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    path, called = outputs[kind]
    assert fmt.bridgepack_output(path) == called
    for name, argv in samples_readers(str(path)).items():
        code = main(argv)
        err = capsys.readouterr().err.strip()
        assert code == 2, (name, err)
        assert err.startswith(f"error: {path}: is {called}, not samples; "), (name, err)
        assert len(err.splitlines()) == 1
    assert not Path("never").exists()


#: The outputs that are no reader of packed data's input (a batch dump is ``diff``'s).
NOT_PACKED = ["rejects", "sidecar", "hf sidecar", "batch dump"]


@pytest.mark.parametrize("kind", NOT_PACKED)
def test_readers_of_packed_data_refuse_the_other_outputs_of_bridgepack(
    kind: str, outputs: dict[str, tuple[Path, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, called = outputs[kind]
    for name, argv in packed_readers(str(path), PACK).items():
        if name == "diff" and kind == "batch dump":
            continue  # diff compares two batch dumps
        code = main(argv)
        err = capsys.readouterr().err.strip()
        assert code == 2, (name, err)
        assert err.startswith(f"error: {path}: is {called}, not packed data ("), (name, err)


def test_samples_are_no_output_of_bridgepack(tmp_path: Path) -> None:
    rows = random_examples(np.random.default_rng(4), 5, 10)
    assert fmt.bridgepack_output(write_jsonl(tmp_path / "rejects_training_32.jsonl", rows)) is None
    assert fmt.bridgepack_output(write_jsonl(tmp_path / "32_metadata.jsonl", rows)) is None
    assert fmt.bridgepack_output(tmp_path) is None


def test_every_input_format_is_swept() -> None:
    assert set(WRITERS) == {f.name for f in INPUT_FORMATS}


@pytest.mark.parametrize("layout", ["packed file", "hf data file"])
@pytest.mark.parametrize("convert", [c for cs in WRITERS.values() for c in cs], ids=lambda c: c.__name__)
def test_packed_data_in_every_input_format_is_refused_as_samples(
    layout: str,
    convert: Callable[[pa.Table, Path], Path],
    outputs: dict[str, tuple[Path, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A packed set converted to another input format is still one pack a row: refused by its columns,
    locally and on the ray engine's driver (which resolves the inputs the same way, before any cluster)."""
    monkeypatch.chdir(tmp_path)
    packed, called = outputs[layout]
    path = convert(pq.read_table(packed), tmp_path / "converted")
    capsys.readouterr()  # what the conversion printed
    expected = f"{path}: is {called}, not samples; give the samples it was packed from"
    for argv in samples_readers(str(path)).values():
        code = main(argv)
        err = capsys.readouterr().err.strip()
        assert (code, err) == (2, f"error: {expected}")
    with pytest.raises(InputError) as refused:
        prepare_sharded(PackOptions.from_flat([path], Path("never"), PACK, quiet=True), 2)
    assert str(refused.value) == expected
    assert not Path("never").exists()
