"""The flag table: specific mappings, every real model_config translates, mlm -> bridge -> mlm round trips."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.errors import UsageError
from bridgepack.translate import (
    BY_FLAG,
    FLAG_TABLE,
    NO_BRIDGE_EQUIVALENT,
    bridge_to_mlm,
    bridge_to_mlm_report,
    load_model_args,
    mlm_to_bridge,
    parse_scalar,
)


def _cases(shared: Path) -> list[Path]:
    found = sorted((shared / "data" / "mlm-functional-cases").glob("*/model_config.yaml"))
    assert found, "no model_config.yaml under shared/data/mlm-functional-cases"
    return found


def test_dual_inverted_multi_field_and_converted_flags() -> None:
    argv = ["--seq-length", "4096", "--disable-bias-linear", "--swiglu", "--bf16", "--lr=3e-4"]
    t = mlm_to_bridge([*argv, "--hidden-size", "1024"])
    assert t.overrides == {
        "dataset.seq_length": 4096,
        "model.seq_length": 4096,
        "model.add_bias_linear": False,
        "model.gated_linear_unit": True,
        "model.activation_func": "silu",
        "mixed_precision": "bf16_mixed",
        "optimizer.lr": 0.0003,
        "model.hidden_size": 1024,
        "model.ffn_hidden_size": 2688,  # Megatron-LM's SwiGLU size: int(8 * 1024 / 3 / 64) * 64
    }
    assert t.untranslated == []
    assert mlm_to_bridge(argv).untranslated == ["--swiglu"]  # the FFN size needs the hidden size


def test_flags_without_equivalent_are_listed_with_reason() -> None:
    t = mlm_to_bridge(["--use-mcore-models", "--transformer-impl", "local", "--no-such-flag", "7"])
    assert t.untranslated == ["--use-mcore-models", "--transformer-impl local", "--no-such-flag 7"]
    assert t.reasons["--use-mcore-models"] == NO_BRIDGE_EQUIVALENT["--use-mcore-models"]
    assert "not in bridgepack's flag table" in t.reasons["--no-such-flag"]


def test_conflicting_flags_are_reported() -> None:
    t = mlm_to_bridge(["--bf16", "--fp16"])
    assert t.conflicts and "mixed_precision" in t.conflicts[0]


def test_bad_flag_values() -> None:
    with pytest.raises(UsageError, match="expects a value"):
        mlm_to_bridge(["--seq-length"])
    with pytest.raises(UsageError, match="switch"):
        mlm_to_bridge({"--bf16": "yes"})
    with pytest.raises(UsageError, match="expects an integer, found 'four'"):
        mlm_to_bridge(["--seq-length", "four"])
    with pytest.raises(UsageError, match="expects a number"):
        mlm_to_bridge({"--lr": "fast"})
    with pytest.raises(UsageError, match="starting with '--'"):
        mlm_to_bridge(["seq-length", "4"])


def test_parse_scalar_matches_argparse_types() -> None:
    assert [parse_scalar(s) for s in ("4096", "1e-2", ".01", "-1", "cosine")] == [
        4096,
        0.01,
        0.01,
        -1,
        "cosine",
    ]


def test_reverse_lookup_is_unambiguous() -> None:
    """No value key is shared and no switch (key, value) pair repeats, so bridge -> mlm has one answer."""
    value_keys = Counter(key for m in FLAG_TABLE if m.kind == "value" for key in m.keys)
    switch_pairs = Counter(pair for m in FLAG_TABLE if m.kind == "switch" for pair in m.sets)
    assert [key for key, n in value_keys.items() if n > 1] == []
    assert [pair for pair, n in switch_pairs.items() if n > 1] == []
    assert not set(value_keys) & {key for key, _ in switch_pairs}
    assert len(BY_FLAG) == len(FLAG_TABLE)
    assert not set(BY_FLAG) & set(NO_BRIDGE_EQUIVALENT)


def test_reverse_of_partial_and_default_values() -> None:
    report = bridge_to_mlm_report(
        {
            "model.seq_length": 2048,
            "model.sequence_parallel": False,
            "model.gated_linear_unit": True,
            "x.y": 1,
        }
    )
    assert report.flags == ["--seq-length", "2048"]
    assert report.untranslated == ["model.gated_linear_unit=true", "x.y=1"]


@pytest.mark.shared
def test_every_model_config_translates_deterministically(shared_dir: Path) -> None:
    for path in _cases(shared_dir):
        args = load_model_args(path)
        first, second = mlm_to_bridge(args), mlm_to_bridge(args)
        assert first == second
        assert first.conflicts == []
        mapped = [flag for flag in args if flag in BY_FLAG]
        assert len(mapped) + len(first.untranslated) == len(args), path
        assert "--use-mcore-models" not in args or "--use-mcore-models" in first.untranslated


def _fixpoint(flags: list[str] | dict[str, object]) -> None:
    """bridge -> mlm of a translation translates back to the same overrides (the resolved-config tests
    prove what those overrides train)."""
    forward = mlm_to_bridge(flags).overrides
    assert mlm_to_bridge(bridge_to_mlm(forward)).overrides == forward


@pytest.mark.shared
def test_round_trip_on_real_configs(shared_dir: Path) -> None:
    for path in _cases(shared_dir):
        args = load_model_args(path)
        _fixpoint(args)


@given(
    st.lists(st.sampled_from(FLAG_TABLE), unique_by=lambda m: m.flag, max_size=12).filter(
        lambda ms: len({k for m in ms for k in m.targets()}) == sum(len(m.targets()) for m in ms)
        # flags writing the same key (--bf16 / --fp16) contradict each other: never both in one set
    ),
    st.integers(min_value=1, max_value=10**6),
)
def test_round_trip_any_flag_set(mappings: list, value: int) -> None:
    argv: list[str] = []
    for m in mappings:
        argv += [m.flag, str(value)] if m.kind == "value" else [m.flag]
    _fixpoint(argv)


def test_every_target_is_a_bridge_field() -> None:
    """Keys of the sections whose field lists bridgepack holds (from the 0.6.2 wheel) name real fields."""
    from bridgepack.doctor import _bridge_fields as bf

    known = {
        "model": bf.MODEL_FIELDS,
        "ddp": bf.DDP_FIELDS,
        "optimizer": bf.OPTIMIZER_FIELDS,
        "dataset": bf.DATASET_FIELDS,
    }
    wrong = []
    for mapping in FLAG_TABLE:
        for key in mapping.targets():
            section, _, name = key.partition(".")
            if section not in bf.CONTAINER_SECTIONS or name not in known.get(section, {name}):
                wrong.append(f"{mapping.flag} -> {key}")
    assert wrong == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["bridge-to-mlm", "model.seq_length=abc"],
            "override 'model.seq_length=abc': field 'model.seq_length': expected int",
        ),
        (
            ["bridge-to-mlm", "model.context_parallel_size=0"],
            "model.context_parallel_size: expected an integer >= 1",
        ),
        (
            ["mlm-to-bridge", "--context-parallel-size", "0"],
            "--context-parallel-size: model.context_parallel_size",
        ),
    ],
)
def test_counts_out_of_range_are_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from bridgepack.cli import main

    assert main(["translate", *argv]) == 2
    assert message in capsys.readouterr().err


def test_an_interpolation_passes_through(capsys: pytest.CaptureFixture[str]) -> None:
    from bridgepack.cli import main

    assert main(["translate", "bridge-to-mlm", "model.seq_length=${dataset.seq_length}"]) == 0
    assert capsys.readouterr().out.strip() == "--seq-length '${dataset.seq_length}'"
