"""Hugging Face Trainer runs in ``bridgepack curves``: a real tiny Trainer run, read back and compared.

The fixture trains a random-init tiny Llama for 6 steps on CPU (no hub) with ``report_to=tensorboard``,
saving ``checkpoint-3``, ``checkpoint-6`` and ``trainer_state.json``; a callback records what the Trainer
logged, which is what the readers must give back.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bridgepack.cli import main
from bridgepack.curves import detect_format, parse_metric_map, read_curves, rename_metrics
from bridgepack.errors import DataError, InputError, UsageError
from curves._lines import mlm_line

STEPS = 6


@dataclass
class TrainerRun:
    out: Path
    logged: dict[str, dict[int, float]]  # Trainer log key -> {step: value}, as the callback saw it


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> TrainerRun:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("hf") / "out"
    logged: dict[str, dict[int, float]] = {}

    class Record(transformers.TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            for key, value in (logs or {}).items():
                logged.setdefault(key, {})[state.global_step] = float(value)

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    gen = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(16):
        ids = torch.randint(0, 64, (12,), generator=gen)
        rows.append({"input_ids": ids, "labels": ids.clone()})
    args = transformers.TrainingArguments(
        output_dir=str(out),
        max_steps=STEPS,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        logging_steps=1,
        eval_strategy="steps",
        eval_steps=3,
        save_steps=3,
        save_only_model=True,
        report_to=["tensorboard"],
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    model = transformers.LlamaForCausalLM(config)
    trainer = transformers.Trainer(
        model=model, args=args, train_dataset=rows, eval_dataset=rows[:4], callbacks=[Record()]
    )
    trainer.train()
    trainer.save_state()
    return TrainerRun(out, logged)


def test_trainer_state_maps_hf_names_to_canonical_ones(run: TrainerRun) -> None:
    curves = read_curves(run.out / "trainer_state.json")
    assert curves.format == "hf" and curves.notes == []
    assert curves.metrics["lm loss"].as_dict() == run.logged["loss"]
    assert sorted(run.logged["loss"]) == list(range(1, STEPS + 1))
    assert curves.metrics["grad-norm"].as_dict() == run.logged["grad_norm"]
    assert curves.metrics["learning-rate"].as_dict() == run.logged["learning_rate"]
    assert curves.metrics["lm loss validation"].as_dict() == run.logged["eval_loss"]
    assert sorted(run.logged["eval_loss"]) == [3, 6]
    # The end-of-run summary is an average over the run, not a step's value.
    assert "train_runtime" not in curves.metrics and "train_loss" not in curves.metrics


def test_directories_output_checkpoint_and_checkpoints_only(run: TrainerRun, tmp_path: Path) -> None:
    assert read_curves(run.out).metrics["lm loss"].as_dict() == run.logged["loss"]
    first = read_curves(run.out / "checkpoint-3")
    assert first.metrics["lm loss"].as_dict() == {s: run.logged["loss"][s] for s in (1, 2, 3)}
    # An output dir without save_state(): the highest checkpoint holds the longest history.
    bare = tmp_path / "bare"
    for name in ("checkpoint-3", "checkpoint-6"):
        shutil.copytree(run.out / name, bare / name)
    curves = read_curves(bare)
    assert curves.metrics["lm loss"].as_dict() == run.logged["loss"]
    assert curves.notes == [f"{bare}: read {bare / 'checkpoint-6' / 'trainer_state.json'}"]
    renamed = tmp_path / "state.json"
    shutil.copy(run.out / "trainer_state.json", renamed)
    assert detect_format(renamed) == "trainer-state" and detect_format(run.out / "runs") == "tensorboard"


def test_tensorboard_tags_of_the_trainer(run: TrainerRun) -> None:
    curves = read_curves(run.out / "runs")
    assert curves.format == "tensorboard"
    for canonical, key in (
        ("lm loss", "loss"),
        ("grad-norm", "grad_norm"),
        ("learning-rate", "learning_rate"),
    ):
        got = curves.metrics[canonical].as_dict()
        want = run.logged[key]
        assert got.keys() == want.keys()
        # TensorBoard stores float32.
        assert np.array_equal(np.float32(list(got.values())), np.float32(list(want.values())))
    assert curves.metrics["lm loss validation"].as_dict().keys() == run.logged["eval_loss"].keys()


def _megatron_log(path: Path, losses: dict[int, float]) -> Path:
    path.write_text("".join(mlm_line(step, loss, total=STEPS) + "\n" for step, loss in losses.items()))
    return path


def test_compare_hf_run_against_megatron_log(
    run: TrainerRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = str(run.out / "trainer_state.json")
    same = _megatron_log(tmp_path / "megatron.log", run.logged["loss"])
    assert main(["curves", "compare", state, str(same), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["format"] for r in doc["runs"]] == ["hf", "mlm"]
    assert doc["comparisons"][0]["shared_steps"] == STEPS
    off = dict(run.logged["loss"])
    off[4] += 0.5
    other = _megatron_log(tmp_path / "off.log", off)
    assert main(["curves", "compare", state, str(other), "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["comparisons"][0]["first_divergence"]["step"] == 4


def test_metric_map_renames_what_the_defaults_miss(
    run: TrainerRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "wandb.csv"
    csv.write_text("step,train/my_loss\n" + "".join(f"{s},{v!r}\n" for s, v in run.logged["loss"].items()))
    state = str(run.out / "trainer_state.json")
    assert main(["curves", "compare", state, str(csv)]) == 1  # no shared 'lm loss' without the map
    capsys.readouterr()
    args = ["curves", "compare", state, str(csv), "-t", "exact", "--metric-map", "train/my_loss=lm loss"]
    assert main(args) == 0
    assert "verdict: match" in capsys.readouterr().out
    assert main([*args[:-1], "no-equals-sign"]) == 2
    assert main([*args[:-1], "train/typo=lm loss"]) == 2
    assert "no run has a metric 'train/typo'" in capsys.readouterr().err


def test_rename_metrics_keeps_builtins_and_notes_a_replacement(run: TrainerRun) -> None:
    curves = read_curves(run.out / "trainer_state.json")
    rename_metrics(curves, parse_metric_map(["train/loss=lm loss"]))  # built in: nothing to do
    assert curves.metrics["lm loss"].as_dict() == run.logged["loss"]
    rename_metrics(curves, parse_metric_map(["eval_loss=lm loss"]))
    assert curves.metrics["lm loss"].as_dict() == run.logged["eval_loss"]
    assert "lm loss validation" not in curves.metrics
    assert curves.notes == [
        f"{curves.source}: 'lm loss validation' mapped onto 'lm loss', which replaces the run's own"
    ]
    with pytest.raises(UsageError, match="NAME=CANONICAL"):
        parse_metric_map(["=lm loss"])


def test_nan_loss_and_bad_state_files(tmp_path: Path) -> None:
    state = tmp_path / "trainer_state.json"
    state.write_text('{"log_history": [{"step": 1, "loss": NaN}, {"step": 2, "loss": 1.5}]}')
    values = read_curves(state).metrics["lm loss"].as_dict()
    assert math.isnan(values[1]) and values[2] == 1.5
    cases = [
        ('{"log_history": {}}', InputError, "field 'log_history': expected a list"),
        (
            '{"log_history": [{"loss": 1.0}]}',
            DataError,
            r"field 'log_history\[0\]': expected an integer 'step'",
        ),
        ('{"log_history": [3]}', DataError, "expected an object, found 3"),
        ('{"log_history": [{"step": 1}]}', InputError, "no logged values"),
        ("{not json", InputError, "not JSON"),
    ]
    for text, error, message in cases:
        state.write_text(text)
        with pytest.raises(error, match=message):
            read_curves(state)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"no trainer_state\.json here"):
        read_curves(tmp_path / "empty", "hf")


def test_the_input_format_answers_to_its_name_and_to_its_old_name(run: TrainerRun) -> None:
    """``--input-format trainer-state`` is the format's name, ``hf`` its old one: both read the same run,
    which reports the format as it did before (``hf``)."""
    state = run.out / "trainer_state.json"
    named, old = (read_curves(state, spelling) for spelling in ("trainer-state", "hf"))
    assert named.metrics["lm loss"].as_dict() == old.metrics["lm loss"].as_dict() == run.logged["loss"]
    assert named.format == old.format == "hf"
    with pytest.raises(UsageError, match=r"expected one of trainer-state, tensorboard, .*found 'trainer'"):
        read_curves(state, "trainer")
