"""``bridgepack pack`` behaviour: too-long modes, splits in one directory, --overwrite, JSON, --example."""

from __future__ import annotations

import errno
import itertools
import json
import os
import re
from pathlib import Path

import numpy as np
import orjson
import pytest

from _support.pack_inputs import EOS, random_examples, read_rows, run, write_jsonl
from bridgepack.cli import main
from bridgepack.data.pipeline._scratch import ScratchStore
from bridgepack.data.samples import example_dataset_path
from bridgepack.errors import InputError

LONG = {
    "input_ids": [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, EOS],
    "loss_mask": [0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1],
}
SHORT = {"input_ids": [5, 6, EOS], "loss_mask": [0, 1, 1]}


def pack(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str, rows: list | None = None) -> dict:
    source = write_jsonl(tmp_path / "in.jsonl", rows or [SHORT, LONG])
    code, out, err = run([str(source), "--out", str(tmp_path / "out"), "--format", "json", *extra], capsys)
    assert code == 0, err
    return json.loads(out)


def sequences(path: Path) -> list[tuple[list[int], list[int]]]:
    seqs = []
    for row in read_rows(path):
        bounds = [*row["seq_start_id"], len(row["input_ids"])]
        seqs += [(row["input_ids"][a:b], row["loss_mask"][a:b]) for a, b in itertools.pairwise(bounds)]
    return sorted(seqs)


def rejects(tmp_path: Path) -> list[dict]:
    [path] = (tmp_path / "out").glob("rejects_training_*.jsonl")  # the one pack size of the test
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_reject_is_default_and_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = pack(tmp_path, capsys, "--pack-size", "8")
    assert (summary["samples_in"], summary["samples_packed"], summary["rejected"]) == (2, 1, 1)
    [rej] = rejects(tmp_path)
    assert rej == {
        "source": str(tmp_path / "in.jsonl"),
        "line": 2,
        "reason": "too long: 10 runtime tokens > 8",
        "length": 10,
        "action": "rejected (not packed)",
        "run_id": orjson.loads((tmp_path / "out" / "8_metadata.jsonl").read_bytes())[0]["bridgepack"][
            "run_id"
        ],
    }
    assert sequences(tmp_path / "out" / "training_8.idx.parquet") == [([5, 6, EOS], [1, 1, 0])]


def test_truncate_keeps_head_and_eos(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = pack(tmp_path, capsys, "--pack-size", "8", "--too-long", "truncate")
    assert summary["truncated"] == 1 and summary["samples_packed"] == 2
    ids = [10, 11, 12, 13, 14, 15, 16, 17, EOS]
    assert ([*ids], [0, 1, 1, 1, 1, 1, 1, 1, 0]) in sequences(tmp_path / "out" / "training_8.idx.parquet")
    assert rejects(tmp_path)[0]["action"] == "truncated to 8 runtime tokens"


@pytest.mark.parametrize(
    ("cap", "eos_trained"),
    [(5, False), (3, False), (6, True), (8, True)],  # cut in the user turn / in the answer
)
def test_truncate_trains_the_eos_only_when_the_cut_is_in_a_trained_span(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cap: int, eos_trained: bool
) -> None:
    """A chat row ``system user | assistant EOS`` cut inside the user turn must not learn to stop there; cut
    inside the answer, the EOS stays the target it was (as Bridge's truncation keeps it)."""
    row = {"input_ids": [*range(20, 30), EOS], "loss_mask": [0] * 6 + [1] * 5}  # 6 prompt, 5 trained
    pack(
        tmp_path,
        capsys,
        "--pack-size",
        "16",
        "--max-seq-length",
        str(cap),
        "--too-long",
        "truncate",
        rows=[row],
    )
    ((ids, mask),) = sequences(tmp_path / "out" / "training_16.idx.parquet")
    assert ids == [*range(20, 20 + cap), EOS]
    # stored masks are rolled left (mask[j] supervises token j+1): the EOS's flag sits at position cap - 1
    assert mask[cap - 1] == int(eos_trained) and mask[-1] == 0


def test_split_covers_every_label_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = pack(tmp_path, capsys, "--pack-size", "4", "--too-long", "split")
    assert summary["split"] == 1 and summary["sequences"] == 1 + 3
    got = sequences(tmp_path / "out" / "training_4.idx.parquet")
    assert ([10, 11, 12, 13, 14], [0, 1, 1, 1, 0]) in got
    assert ([14, 15, 16, 17, 18], [1, 1, 1, 1, 0]) in got
    assert ([18, 19, EOS], [1, 1, 0]) in got


def test_cp_derives_pad_multiple(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = pack(tmp_path, capsys, "--pack-size", "16", "--cp", "2")
    meta = json.loads((tmp_path / "out" / "16_metadata.jsonl").read_text())[0]
    assert meta["bridgepack"]["pad_seq_to_mult"] == 4
    assert "dataset.offline_packing_specs.pad_seq_to_mult=4" in summary["overrides"]
    # The overrides carry the topology the packs were made for, with CP's loss rules (bridge-format §8).
    assert {"model.context_parallel_size=2", "model.calculate_per_token_loss=true"} <= set(
        summary["overrides"]
    )
    # SHORT (runtime 2) is pre-padded to runtime 4 with EOS and mask 0.
    assert ([5, 6, EOS, EOS, EOS], [1, 1, 0, 0, 0]) in sequences(tmp_path / "out" / "training_16.idx.parquet")


def test_validation_split_joins_and_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pack(tmp_path, capsys, "--pack-size", "16")
    summary = pack(tmp_path, capsys, "--pack-size", "16", "--split", "validation")
    out = tmp_path / "out"
    entries = json.loads((out / "16_metadata.jsonl").read_text())
    assert [e["bridgepack"]["split"] for e in entries] == ["training", "validation"]
    assert any("packed_val_data_path" in o for o in summary["overrides"])
    source = str(tmp_path / "in.jsonl")
    code, _, err = run([source, "--out", str(out), "--pack-size", "16"], capsys)
    assert code == 2 and "training_16.idx.parquet: already exists" in err
    code, _, err = run(
        [source, "--out", str(out), "--pack-size", "16", "--split", "validation", "--seed", "5"], capsys
    )
    assert code == 2 and "already exists" in err
    code, _, err = run(
        [
            source,
            "--out",
            str(out),
            "--pack-size",
            "16",
            "--split",
            "validation",
            "--seed",
            "5",
            "--overwrite",
        ],
        capsys,
    )
    assert code == 2 and "seed=0" in err  # the other split was packed with another seed
    code, _, err = run([source, "--out", str(out), "--pack-size", "16", "--overwrite"], capsys)
    assert code == 0, err
    assert len(json.loads((out / "16_metadata.jsonl").read_text())) == 2


def test_example_dataset_text_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--example", "--out", str(tmp_path / "ex"), "--pack-size", "1024"], capsys)
    assert code == 0, err
    assert "samples in" in out and "dataset.enable_offline_packing=true" in out
    rows = read_rows(tmp_path / "ex" / "training_1024.idx.parquet")
    assert sum(len(r["seq_start_id"]) for r in rows) == 1000
    assert example_dataset_path().stat().st_size < 400_000


def test_interrupt_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from bridgepack.data.pipeline import _pipeline

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_pipeline, "write_packed", interrupted)
    source = write_jsonl(tmp_path / "in.jsonl", [SHORT, LONG])
    scratch = tmp_path / "scratch"
    args = [str(source), "--out", str(tmp_path / "out"), "--pack-size", "16", "--scratch-dir", str(scratch)]
    code, _, _ = run(args, capsys)
    assert code == 130
    assert not (tmp_path / "out").exists()  # the run made it, so the run removes it
    assert not scratch.exists()


def test_datasets_directory_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list([SHORT, LONG]).save_to_disk(str(tmp_path / "ds"))
    code, _, err = run([str(tmp_path / "ds"), "--out", str(tmp_path / "out"), "--pack-size", "16"], capsys)
    assert code == 0, err
    assert sequences(tmp_path / "out" / "training_16.idx.parquet") == [
        (SHORT["input_ids"], [*SHORT["loss_mask"][1:], 0]),
        (LONG["input_ids"], [*LONG["loss_mask"][1:], 0]),
    ]


def test_padding_free_layout_positions_and_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = pack(
        tmp_path, capsys, "--pack-size", "16", "--layout", "hf", "--algorithm", "first_fit_decreasing"
    )
    assert summary["overrides"] == []
    assert summary["metadata_path"].endswith("metadata.hf.jsonl")
    [row] = read_rows(tmp_path / "out" / "data" / "train-00000-of-00001.parquet")
    assert row["seq_lengths"] == [11, 3]  # LONG first (decreasing), then SHORT
    assert row["input_ids"] == LONG["input_ids"] + SHORT["input_ids"]
    assert row["position_ids"] == [*range(11), 0, 1, 2]
    # -100 on each sequence's first token and wherever the input mask is 0.
    long_labels = [-100, -100, *LONG["input_ids"][2:]]
    assert row["labels"] == [*long_labels, -100, 6, EOS]


def test_scratch_out_of_disk_names_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*_args: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    store = ScratchStore(tmp_path / "scratch")  # the store's own folder inside the folder the user chose
    monkeypatch.setattr(os, "pwrite", full)
    with pytest.raises(InputError, match=rf"^{re.escape(str(tmp_path))}: no space left .* scratch_dir"):
        store.append(np.zeros(4, np.int64), np.ones(4, np.uint8), np.array([4]))
    store.remove()
    assert not (tmp_path / "scratch").exists()


def test_inspect_accepts_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = random_examples(np.random.default_rng(1), 200, 60)
    pack(tmp_path, capsys, "--pack-size", "64", "--cp", "2", rows=rows)
    assert main(["inspect", str(tmp_path / "out")]) == 0
    assert "consistent" in capsys.readouterr().out


def test_an_unusable_scratch_dir_is_named_as_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The error names the ``--scratch-dir`` the user typed, never the store's internal folder inside it."""
    blocked = tmp_path / "afile"
    blocked.write_text("not a folder")
    source = write_jsonl(tmp_path / "in.jsonl", [SHORT])
    code, _, err = run(
        [str(source), "--out", str(tmp_path / "out"), "-n", "8", "--scratch-dir", str(blocked / "s")], capsys
    )
    assert code == 2
    assert (
        err.startswith(f"error: {blocked / 's'}: cannot use the scratch store") and ".bridgepack" not in err
    )
