"""``bridgepack correlate plan``: every knob on both sides, the skill's unmatched knobs, and blocked specs."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bridgepack.cli import main
from bridgepack.correlate import (
    KNOBS,
    analyse_pair,
    build_plan,
    check_spec,
    load_spec,
    parse_overrides,
    parse_spec,
    unmatched_knobs,
)
from bridgepack.errors import DataError, InputError
from bridgepack.translate import mlm_to_bridge

SPEC: dict[str, Any] = {
    "model": {
        "num_layers": 2,
        "hidden_size": 256,
        "num_attention_heads": 4,
        "ffn_hidden_size": 1024,
        "seq_length": 512,
        "vocab_size": 32000,
    },
    "train": {"micro_batch_size": 4, "global_batch_size": 32, "train_iters": 10},
    "lr": {"lr": 3.0e-4, "min_lr": 3.0e-5, "decay_style": "cosine", "warmup_iters": 1},
    "optimizer": {"adam_beta2": 0.95, "weight_decay": 0.033},
}


def write_spec(tmp_path: Path, doc: dict[str, Any], name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def with_field(section: str, key: str, value: Any) -> dict[str, Any]:
    doc = {s: dict(body) for s, body in SPEC.items()}
    doc.setdefault(section, {})[key] = value
    return doc


def bridge_side(argv: tuple[str, ...]) -> dict[str, Any]:
    return parse_overrides(list(argv[argv.index("--recipe") + 2 :]))


def mlm_side(argv: tuple[str, ...], script: str) -> list[str]:
    return list(argv[argv.index(script) + 1 :])


def test_every_knob_is_set_on_both_sides(tmp_path: Path) -> None:
    spec = parse_spec(SPEC)
    plan = build_plan(spec, tmp_path / "run")
    bridge = bridge_side(plan.bridge.argv)
    mlm = mlm_side(plan.mlm.argv, spec["launch.mlm_script"])
    for knob in KNOBS:
        for key, value in knob.bridge_values(knob.value(spec)).items():
            assert key in bridge, f"{knob.name}: {key} missing on the Bridge side"
            assert bridge[key] == value
    # Nothing the MLM side runs with differs from the Bridge side, defaults of both launchers included.
    unmatched, untranslated = unmatched_knobs(mlm, bridge)
    assert unmatched == []
    assert untranslated == ["--max-position-embeddings 512"]
    assert mlm[mlm.index("--max-position-embeddings") + 1] == "512"


# Knobs whose vanilla_gpt_pretrain_config default (bridge-format §12, Bridge 0.6.2 recipe) differs from SPEC's
# value.
RECIPE_DIFFERS = {
    "seq length": 1024,
    "micro batch size": 2,
    "train iters": 300000,
    "eval iters": 32,
    "eval interval": 500,
    "log interval": 10,
    "lr warmup iters": 500,
    "distributed optimizer": True,  # optimizer.use_distributed_optimizer=True, OR-ed with the ddp field
}


@pytest.mark.parametrize("knob", KNOBS, ids=lambda k: k.name)
def test_dropping_a_knob_from_bridge_falls_back_to_the_recipe(tmp_path: Path, knob: Any) -> None:
    """Without its overrides a knob takes the recipe default: a mismatch exactly where the default differs."""
    spec = parse_spec(SPEC)
    plan = build_plan(spec, tmp_path / "run")
    bridge = {k: v for k, v in bridge_side(plan.bridge.argv).items() if k not in knob.bridge}
    unmatched, _ = unmatched_knobs(mlm_side(plan.mlm.argv, spec["launch.mlm_script"]), bridge)
    if knob.name in RECIPE_DIFFERS:
        assert [(m.knob, m.bridge) for m in unmatched] == [(knob.name, RECIPE_DIFFERS[knob.name])]
    elif knob.recipe_default is not None:
        assert unmatched == []


def test_each_side_writes_into_its_own_fresh_folder(tmp_path: Path) -> None:
    plan = build_plan(parse_spec(SPEC), tmp_path / "run")
    bridge = bridge_side(plan.bridge.argv)
    mlm = plan.mlm.argv
    assert bridge["checkpoint.save"] == str(tmp_path / "run" / "bridge" / "checkpoints")
    assert mlm[mlm.index("--save") + 1] == str(tmp_path / "run" / "mlm" / "checkpoints")
    assert "nemo_experiments" not in " ".join(plan.bridge.argv)


def test_shell_lines_split_back_to_the_argv(tmp_path: Path) -> None:
    plan = build_plan(parse_spec(SPEC), tmp_path / "run with space")
    assert shlex.split(plan.bridge.shell()) == list(plan.bridge.argv)
    prefix, _, rest = plan.mlm.shell().partition(" ")
    assert prefix == "PYTHONPATH=3rdparty/Megatron-LM:$PYTHONPATH"
    assert shlex.split(rest) == list(plan.mlm.argv)


def test_cli_writes_the_plan_into_a_new_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, SPEC)
    out = tmp_path / "runs"
    assert main(["correlate", "plan", "--spec", str(spec), "--out", str(out), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 2
    run_dir = Path(doc["run_dir"])
    assert run_dir.parent == out.absolute()
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "aligned.txt",
        "bridge",
        "bridge.sh",
        "mlm",
        "mlm.sh",
        "plan.json",
    ]
    assert list((run_dir / "mlm").iterdir()) == [] and list((run_dir / "bridge").iterdir()) == []
    assert json.loads((run_dir / "plan.json").read_text())["bridge"]["argv"] == doc["bridge"]["argv"]
    knobs = {row["knob"] for row in doc["aligned"]}
    assert {k.name for k in KNOBS} <= knobs


def test_two_plans_in_one_second_each_get_their_own_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The skill runs ``correlate plan --out runs`` twice back to back: both succeed, in two folders."""
    import datetime as dt

    frozen = dt.datetime(2026, 8, 30, 10, 15, 0, tzinfo=dt.timezone.utc)
    monkeypatch.setattr("bridgepack.correlate._plan._utc_now", lambda: frozen)
    spec, out = write_spec(tmp_path, SPEC), tmp_path / "runs"
    dirs = []
    for _ in range(2):
        assert main(["correlate", "plan", "--spec", str(spec), "--out", str(out), "--format", "json"]) == 0
        dirs.append(Path(json.loads(capsys.readouterr().out)["run_dir"]))
    assert [d.name for d in dirs] == ["correlate-20260830-101500", "correlate-20260830-101500-2"]
    assert all((d / "plan.json").is_file() for d in dirs)


def test_cli_text_shows_both_commands_and_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = write_spec(tmp_path, SPEC)
    monkeypatch.chdir(tmp_path)
    assert main(["correlate", "plan", "--spec", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "pretrain_gpt.py" in out and "--recipe vanilla_gpt_pretrain_config" in out
    assert "MLM default 0.999" in out and "recipe default 0.033" not in out
    assert [p.name for p in tmp_path.iterdir()] == ["spec.yaml"]  # without --out nothing is written


# The knobs bridge-format §12 (correlation trap) says the skill's pairs leave unmatched.
TRAP_1GPU = {
    "lr decay style",
    "lr warmup iters",
    "Adam beta2",
    "weight decay",
    "distributed optimizer",
    "output folder",
}
TRAP_TP2 = TRAP_1GPU | {"lr", "min lr", "vocab size"}


def test_skill_pairs_unmatched_knobs() -> None:
    one, tp2 = analyse_pair("1gpu"), analyse_pair("tp2")
    assert {m.knob for m in one.unmatched} == TRAP_1GPU
    assert {m.knob for m in tp2.unmatched} == TRAP_TP2
    beta2 = next(m for m in one.unmatched if m.knob == "Adam beta2")
    assert (beta2.mlm, beta2.bridge) == (0.999, 0.95)
    wd = next(m for m in one.unmatched if m.knob == "weight decay")
    assert (wd.mlm, wd.bridge) == (0.01, 0.033)
    assert "--use-mcore-models" in one.untranslated


def test_cli_from_skill(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["correlate", "plan", "--from-skill", "--format", "json"]) == 0
    pairs = json.loads(capsys.readouterr().out)["skill_pairs"]
    assert {m["knob"] for m in pairs[0]["unmatched"]} == TRAP_1GPU
    assert main(["correlate", "plan", "--from-skill"]) == 0
    assert "lr decay style MLM linear vs Bridge cosine" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        ("train", "micro_batch_size", "four", "field 'train.micro_batch_size': expected a positive integer"),
        ("lr", "lr", True, "field 'lr.lr': expected a positive number"),
        ("lr", "decay_style", "exp", "field 'lr.decay_style': expected one of constant"),
        ("optimizer", "adam_beta2", 1.5, "field 'optimizer.adam_beta2': expected a number in [0, 1)"),
        ("optimizer", "betas", 0.9, "field 'optimizer.betas': unknown field"),
    ],
)
def test_wrong_value_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, key: str, value: Any, expected: str
) -> None:
    spec = write_spec(tmp_path, with_field(section, key, value))
    assert main(["correlate", "plan", "--spec", str(spec)]) == 1
    err = capsys.readouterr().err
    assert f"{spec}: {expected}" in " ".join(err.split())


def test_exponent_without_a_dot_is_a_number(tmp_path: Path) -> None:
    """PyYAML reads ``3e-4`` as a string; a spec means the number."""
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(SPEC).replace("lr: 0.0003", "lr: 3e-4"))
    assert "lr: 3e-4" in path.read_text()
    assert load_spec(path)["lr.lr"] == 3e-4


def test_blocked_plan_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path, with_field("seed", "data", 99))
    assert main(["correlate", "plan", "--spec", str(spec), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["blocked"] is True and [f["id"] for f in doc["findings"]] == ["CR001"]


def test_missing_required_field() -> None:
    doc = {s: dict(b) for s, b in SPEC.items()}
    del doc["model"]["vocab_size"]
    with pytest.raises(DataError, match=re.escape("'model.vocab_size': required field is missing")):
        parse_spec(doc, "spec.yaml")


@pytest.mark.parametrize(
    ("changes", "rule"),
    [
        ({"seed.data": 7}, "CR001"),
        ({"lr.warmup_iters": 10}, "CR002"),
        ({"lr.min_lr": 1.0}, "CR003"),
        ({"parallel.tp": 2, "parallel.nproc_per_node": 3}, "SP018"),
        ({"train.global_batch_size": 30}, "SP017"),
        ({"parallel.tp": 3}, "CR007"),
        ({"parallel.sp": True}, "CR009"),
        ({"data.mock": False}, "CR010"),
        ({"precision.grad_reduce_in_fp32": False}, "CR011"),
        ({"precision.dtype": "fp16"}, "CR012"),
    ],
)
def test_incompatible_spec_blocks_the_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, Any], rule: str
) -> None:
    doc = {s: dict(b) for s, b in SPEC.items()}
    for name, value in changes.items():
        section, key = name.split(".")
        doc.setdefault(section, {})[key] = value
    spec = write_spec(tmp_path, doc)
    assert [f.id for f in check_spec(load_spec(spec))] == [rule]
    out = tmp_path / "runs"
    assert main(["correlate", "plan", "--spec", str(spec), "--out", str(out)]) == 1
    assert rule in capsys.readouterr().out
    assert not out.exists()


def test_cp_divisibility_from_spec_8(tmp_path: Path) -> None:
    """Bridge's own cases (bridge-format §8): seq 512 with CP 2 is fine, 510 with CP 2 is not."""
    doc = with_field("parallel", "cp", 2)
    doc["train"]["global_batch_size"] = 32
    assert check_spec(parse_spec(doc)) == []
    doc["model"]["seq_length"] = 510
    assert [f.id for f in check_spec(parse_spec(doc))] == ["SP011"]


def test_unreadable_spec_is_exit_2(tmp_path: Path) -> None:
    assert main(["correlate", "plan", "--spec", str(tmp_path / "missing.yaml")]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [1, 2\n")
    with pytest.raises(InputError, match=r"bad\.yaml:2:\d+: not valid YAML"):
        load_spec(bad)
    assert main(["correlate", "plan"]) == 2


def test_the_bridge_side_is_the_mlm_commands_translation(tmp_path: Path) -> None:
    """The Bridge overrides are ``bridgepack translate``'s of the MLM command as a whole launch (output
    folders
    differ by side), plus the knobs both launchers leave at one shared default."""
    spec = parse_spec(SPEC)
    plan = build_plan(spec, tmp_path / "run")
    translation = mlm_to_bridge(mlm_side(plan.mlm.argv, spec["launch.mlm_script"]), full=True)
    assert translation.untranslated == ["--max-position-embeddings 512"]
    per_side = {"checkpoint.save", "logger.tensorboard_dir"}
    assert {k: v for k, v in translation.overrides.items() if k not in per_side} == {
        k: v for k, v in plan.overrides.items() if k in translation.overrides and k not in per_side
    }
    # MLM's defaults, no flag needed, and the recipe's too: written so a new default cannot unmatch the pair.
    assert set(plan.overrides) - set(translation.overrides) == {
        "model.gated_linear_unit",
        "model.add_bias_linear",
        "model.share_embeddings_and_output_weights",
        "model.sequence_parallel",
        "ddp.use_distributed_optimizer",
    }
    assert plan.overrides["optimizer.use_distributed_optimizer"] is False  # the recipe's True, OR-ed


def test_llama_style_model_round_trips(tmp_path: Path) -> None:
    """RMSNorm, rope, SwiGLU, no bias, untied: the MLM flags say so and translate back to the same keys."""
    doc = {s: dict(b) for s, b in SPEC.items()}
    doc["model"].update(
        normalization="RMSNorm",
        position_embedding_type="rope",
        swiglu=True,
        add_bias_linear=False,
        untie_embeddings=True,
        hidden_dropout=0.0,
        attention_dropout=0.0,
    )
    spec = parse_spec(doc)
    plan = build_plan(spec, tmp_path / "run")
    mlm = mlm_side(plan.mlm.argv, spec["launch.mlm_script"])
    for flag in ("--swiglu", "--disable-bias-linear", "--untie-embeddings-and-output-weights"):
        assert flag in mlm
    assert mlm[mlm.index("--normalization") + 1] == "RMSNorm"
    bridge = bridge_side(plan.bridge.argv)
    assert (bridge["model.gated_linear_unit"], bridge["model.activation_func"]) == (True, "silu")
    assert bridge["model.share_embeddings_and_output_weights"] is False
    back = mlm_to_bridge(mlm).overrides
    for key in ("model.gated_linear_unit", "model.activation_func", "model.add_bias_linear"):
        assert back[key] == bridge[key]


def test_unknown_mlm_flag_is_listed_never_dropped() -> None:
    unmatched, untranslated = unmatched_knobs(["--lr", "0.1", "--frobnicate", "3", "--use-flash-attn"], {})
    assert untranslated == ["--frobnicate 3", "--use-flash-attn"]
    assert "lr" in {m.knob for m in unmatched}


@settings(max_examples=40)
@given(
    lr=st.sampled_from([1e-4, 3e-4, 2.5e-3, 0.01]),
    beta2=st.sampled_from([0.95, 0.98, 0.999]),
    wd=st.sampled_from([0.0, 0.01, 0.033, 0.1]),
    style=st.sampled_from(["constant", "linear", "cosine", "inverse-square-root", "WSD"]),
    warmup=st.integers(0, 9),
    dtype=st.sampled_from(["bf16", "fp16", "fp32"]),
    grad_fp32=st.booleans(),
    tp=st.sampled_from([1, 2, 4]),
    sp=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
    arch=st.fixed_dictionaries(
        {
            "normalization": st.sampled_from(["LayerNorm", "RMSNorm"]),
            "position_embedding_type": st.sampled_from(["learned_absolute", "rope"]),
            "swiglu": st.booleans(),
            "add_bias_linear": st.booleans(),
            "untie_embeddings": st.booleans(),
            "hidden_dropout": st.sampled_from([0.0, 0.1]),
        }
    ),
)
def test_any_valid_spec_gives_a_matched_pair(
    lr: float,
    beta2: float,
    wd: float,
    style: str,
    warmup: int,
    dtype: str,
    grad_fp32: bool,
    tp: int,
    sp: bool,
    seed: int,
    arch: dict[str, Any],
) -> None:
    doc = {s: dict(b) for s, b in SPEC.items()}
    doc["model"].update(arch)
    doc["lr"] = {"lr": lr, "min_lr": 0.0, "decay_style": style, "warmup_iters": warmup}
    doc["optimizer"] = {"adam_beta2": beta2, "weight_decay": wd}
    doc["precision"] = {"dtype": dtype, "grad_reduce_in_fp32": grad_fp32}
    doc["parallel"] = {"tp": tp, "sp": sp and tp > 1}
    doc["seed"] = {"init": seed}
    spec = parse_spec(doc)
    if [f.id for f in check_spec(spec)] in (["CR011"], ["CR012"]):
        return  # gradient reduce in bf16 (MLM) or in fp32 under fp16 (Bridge): blocked, never half-matched
    plan = build_plan(spec, "/runs/correlate-20260830-101500")
    mlm = mlm_side(plan.mlm.argv, spec["launch.mlm_script"])
    unmatched, untranslated = unmatched_knobs(mlm, bridge_side(plan.bridge.argv))
    assert unmatched == [] and untranslated == ["--max-position-embeddings 512"]


def test_mlm_pythonpath_is_prepended_not_replaced(tmp_path: Path) -> None:
    plan = build_plan(parse_spec(SPEC), tmp_path / "run")
    assert plan.mlm.environment({"PYTHONPATH": "/site", "HOME": "/h"}) == {
        "PYTHONPATH": f"3rdparty/Megatron-LM{os.pathsep}/site",
        "HOME": "/h",
    }
    assert plan.mlm.environment({})["PYTHONPATH"] == "3rdparty/Megatron-LM"
    assert plan.bridge.environment({"A": "1"}) == {"A": "1"}
