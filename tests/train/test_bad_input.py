"""Bad input: metadata vs flags, a model too large for the machine, an interrupted run, wrong flags."""

from __future__ import annotations

import json
import os
import re
import signal
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bridgepack.cli import main
from bridgepack.cli._common import flag
from bridgepack.errors import DataError, UsageError
from bridgepack.packing import ModelDims
from bridgepack.train import DataMode, StepRecord, TrainConfig, count_parameters, train
from bridgepack.train._data import load_training_data
from bridgepack.train._model import build_model
from train.conftest import PACK_SIZE, VOCAB, pack, with_, write_samples


def test_pack_size_flag_must_match_metadata(base_config: TrainConfig) -> None:
    with pytest.raises(DataError, match=rf"pack_size={PACK_SIZE}, but pack_size is 128"):
        train(with_(base_config, pack_size=128))


def test_pad_multiple_flag_must_match_metadata(base_config: TrainConfig) -> None:
    with pytest.raises(DataError, match=r"pad_seq_to_mult=1, but pad_multiple is 4"):
        train(with_(base_config, pad_multiple=4))


def test_pad_multiple_is_checked_against_the_rows_without_metadata(
    base_config: TrainConfig, tmp_path: Path
) -> None:
    data = tmp_path / "packs.parquet"
    data.write_bytes(base_config.data.read_bytes())  # no sidecar beside it
    with pytest.raises(
        DataError, match=r"packs.parquet row \d+: field 'seq_start_id': a sequence of \d+ runtime"
    ):
        train(with_(base_config, data=data, pad_multiple=4))


def test_data_packed_with_a_pad_multiple_trains_with_it(tmp_path: Path, base_config: TrainConfig) -> None:
    data = pack(write_samples(tmp_path / "s.jsonl", 24, seed=3), tmp_path / "out", "--pad-seq-to-mult", "4")
    meta = json.loads((tmp_path / "out" / f"{PACK_SIZE}_metadata.jsonl").read_text())
    assert meta[0]["bridgepack"]["pad_seq_to_mult"] == 4
    packed = train(with_(base_config, data=data, pad_multiple=4, steps=2))
    padded = train(with_(base_config, data=data, pad_multiple=4, steps=2, mode=DataMode.padded))
    np.testing.assert_allclose(packed.losses, padded.losses, rtol=1e-4)


@pytest.mark.parametrize("name", [f"training_{PACK_SIZE}.idx.parquet", f"training_{PACK_SIZE}.parquet"])
def test_a_sidecar_of_another_pack_size_is_never_taken(
    tmp_path: Path, base_config: TrainConfig, name: str
) -> None:
    """Data named for pack size N with only a ``{M}_metadata.jsonl`` beside it: the sidecar belongs to other
    packs, so the trainer reads none (it used to take any lone sidecar, and ignored ``.parquet`` names)."""
    data = tmp_path / name
    data.write_bytes(base_config.data.read_bytes())
    entries = json.loads((base_config.data.parent / f"{PACK_SIZE}_metadata.jsonl").read_text())
    entries[0]["pack_size"] = PACK_SIZE // 2
    (tmp_path / f"{PACK_SIZE // 2}_metadata.jsonl").write_text(json.dumps(entries))
    opened = load_training_data(data, pack_size=None, pad_multiple=None, vocab=VOCAB)
    assert opened.metadata_path is None
    train(with_(base_config, data=data, steps=1, pack_size=PACK_SIZE))  # the other sidecar's 32 is not read


def test_token_ids_must_fit_the_vocabulary(base_config: TrainConfig) -> None:
    with pytest.raises(DataError, match=r"row \d+: field 'input_ids': token id \d+ does not fit vocab 10"):
        train(with_(base_config, model=replace(base_config.model, vocab=10)))


def test_too_large_model_is_refused_before_allocation(base_config: TrainConfig, capsys) -> None:
    huge = with_(base_config, model=ModelDims(hidden=8192, layers=64, heads=64, ffn=32768, vocab=128000))
    with pytest.raises(UsageError, match=r"model too large for this machine: [\d,]+ parameters need about"):
        train(huge)
    code = main(
        [
            "train",
            "--data",
            str(base_config.data),
            "--vocab",
            "64",
            "--memory-limit-gib",
            "0.0001",
            "--steps",
            "1",
        ]
    )
    assert code == 2
    assert "is available" in capsys.readouterr().err


def test_parameter_count_matches_the_model() -> None:
    dims = ModelDims(hidden=32, layers=3, heads=4, ffn=48, vocab=50)
    model = build_model(dims, max_positions=16, seed=0)
    assert count_parameters(dims) == sum(p.numel() for p in model.parameters())


def test_ctrl_c_stops_after_the_current_step_and_names_the_log(
    base_config: TrainConfig, tmp_path: Path
) -> None:
    log = tmp_path / "run.log"

    def interrupt(record: StepRecord) -> None:
        if record.iteration == 2:
            os.kill(os.getpid(), signal.SIGINT)

    # Whatever handler was installed (a background CI job starts with SIGINT ignored) comes back after.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = train(with_(base_config, steps=6, log=log), on_step=interrupt)
        restored = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
    assert result.interrupted and result.steps_done == 2 and result.steps_planned == 6
    assert result.log_path == log
    assert "stopped on request after iteration 2 of 6" in log.read_text()
    assert restored is signal.default_int_handler


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"gbs": 6, "mbs": 4}, r"--gbs 6 must be a multiple of --mbs x processes"),
        ({"gbs": 1000}, r"--gbs 1000 is larger than the \d+ packs"),
        ({"steps": 2, "epochs": 1}, r"give --steps or --epochs, not both"),
        ({"model": {"hidden": 6, "heads": 2}}, r"--hidden 6 / --heads 2 = 3: the head size must be even"),
        ({"pad_to": 5, "mode": "padded"}, r"--pad-to 5 is shorter than the longest sequence"),
        ({"device": "tpu"}, r"--device must be cpu, cuda or auto"),
    ],
)
def test_wrong_flags_are_usage_errors(base_config: TrainConfig, changes: dict, message: str) -> None:
    if "mode" in changes:
        changes = {**changes, "mode": DataMode(changes["mode"])}
    if "model" in changes:
        changes = {**changes, "model": replace(base_config.model, **changes["model"])}
    with pytest.raises(UsageError) as caught:
        train(with_(base_config, **changes))
    assert re.search(message, caught.value.render(flag))  # the command line's words
    assert "--" not in str(caught.value)  # the library's: parameter names, no flags


def test_heads_must_divide_hidden_in_the_flags_words(base_config: TrainConfig, capsys) -> None:
    code = main(
        ["train", "--data", str(base_config.data), "--vocab", str(VOCAB), "--hidden", "30", "--steps", "1"]
    )
    assert code == 2
    assert "--hidden 30 must be divisible by --heads 4" in capsys.readouterr().err


@pytest.mark.parametrize("dims", [{"query_groups": 2}, {"gated": False}])
def test_model_shapes_the_trainer_cannot_build_are_refused(base_config: TrainConfig, dims: dict) -> None:
    with pytest.raises(UsageError, match=r"the reference trainer builds multi-head SwiGLU models"):
        with_(base_config, model=replace(base_config.model, **dims))


def test_existing_log_needs_overwrite(base_config: TrainConfig, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("old")
    with pytest.raises(UsageError, match="exists"):
        train(with_(base_config, log=log))
    assert train(with_(base_config, log=log, overwrite=True, steps=1)).steps_done == 1


def test_cli_needs_exactly_one_data_source(capsys) -> None:
    assert main(["train", "--steps", "1"]) == 2
    assert "exactly one of --data" in capsys.readouterr().err
