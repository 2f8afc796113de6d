"""``bridgepack doctor --fix --write-config``: the user's YAML with the fixes applied, comments and order
kept,
re-checked before an atomic write; the original never touched (#40 item 4)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from bridgepack.cli import main
from bridgepack.doctor import fixed_yaml

pytest.importorskip("ruamel.yaml", reason="the yaml extra (ruamel.yaml) is in the dev extra")

STACK = ["--stack", "megatron-bridge==0.6.2,megatron-core==0.19.2,transformer-engine==2.18"]
SFT = """\
# Long-context SFT on 32 GPUs.
model:
  seq_length: 8192   # the data's longest conversation
  tensor_model_parallel_size: 4
  sequence_parallel: true
  context_parallel_size: 2
  cuda_graph_scope: [mlp]
  layers_to_skip:
    - 0
    - 31
train:
  micro_batch_size: 2  # two packs per step and rank
  global_batch_size: 64
dataset:
  seq_length: 8192
  enable_offline_packing: true
  offline_packing_specs:
    packed_sequence_size: 4096
    pad_seq_to_mult: 4
    pad_cu_seqlens: true
ddp:
  average_in_collective: true
"""


def _write(tmp_path: Path, text: str, name: str = "sft.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _doctor(*args: str) -> int:
    return main(["doctor", *args, *STACK, "--world-size", "32", "--quiet"])


def test_fixed_config_keeps_comments_and_order_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _write(tmp_path, SFT)
    out = tmp_path / "fixed.yaml"
    assert _doctor(str(config), "--fix", "--write-config", str(out)) == 1  # the config as given has errors
    fixes = capsys.readouterr().out.split("corrected overrides:\n", 1)[1].split()
    assert config.read_text() == SFT  # the original is never touched
    written = out.read_text()
    # every line of the original is still there, in order, except the values the fixes changed
    changed = {"  seq_length: 8192   # the data's longest conversation"}  # unchanged value: stays
    kept = [line for line in SFT.splitlines() if line in written.splitlines()]
    assert changed <= set(kept)
    assert "  micro_batch_size: 1  # two packs per step and rank" in written.splitlines()
    assert "  cuda_graph_scope: [mlp]" in written.splitlines() and "    - 31" in written.splitlines()
    lines = written.splitlines()
    order = [lines.index(line) for line in kept]
    assert order == sorted(order)
    # the values are the fixes, and the doctor finds no error in the result
    loaded = yaml.safe_load(written)
    for item in fixes:
        key, value = item.split("=", 1)
        node = loaded
        for part in key.split("."):
            node = node[part]
        assert node == yaml.safe_load(value), item
    assert _doctor(str(out)) == 0


def test_legacy_names_and_a_wrapper_are_written_where_the_file_has_them() -> None:
    v05 = "dataset:\n  packed_sequence_specs:\n    packed_sequence_size: 2048\n"
    v05 += "  pack_sequences_in_batch: false\n"
    fixed = yaml.safe_load(
        fixed_yaml(
            v05, ["dataset.offline_packing_specs.pad_seq_to_mult=8", "dataset.enable_in_batch_packing=true"]
        )
    )
    assert fixed == {
        "dataset": {
            "packed_sequence_specs": {"packed_sequence_size": 2048, "pad_seq_to_mult": 8},
            "pack_sequences_in_batch": True,
        }
    }
    wrapped = "ConfigContainer:\n  model:\n    seq_length: 510\n"
    assert yaml.safe_load(
        fixed_yaml(wrapped, ["model.seq_length=512", "dataset.offline_packing_specs=null"])
    ) == {"ConfigContainer": {"model": {"seq_length": 512}, "dataset": {"offline_packing_specs": None}}}


def test_still_broken_is_not_written_and_says_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _write(
        tmp_path, "model:\n  tensor_model_parallel_size: 4\n  seq_length: 510\n  context_parallel_size: 2\n"
    )
    out = tmp_path / "fixed.yaml"
    code = main(["doctor", str(config), "--world-size", "12", "--fix", "--write-config", str(out), *STACK])
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert "not written, the fixed config still has errors: SP018 world size 12 is not divisible" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sft.yaml"]  # no temporary file left


def test_existing_output_needs_overwrite_and_the_original_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _write(tmp_path, SFT)
    out = _write(tmp_path, "keep: me\n", "fixed.yaml")
    assert _doctor(str(config), "--fix", "--write-config", str(out)) == 2
    assert out.read_text() == "keep: me\n"
    assert _doctor(str(config), "--fix", "--write-config", str(out), "--overwrite") == 1
    assert "keep" not in out.read_text()
    assert _doctor(str(config), "--fix", "--write-config", str(config), "--overwrite") == 2
    assert config.read_text() == SFT
    assert _doctor(str(config), "--write-config", str(tmp_path / "x.yaml")) == 2  # without --fix
    assert "that is the config itself" in capsys.readouterr().err


def test_without_the_extra_it_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ruamel.yaml", None)
    config = _write(tmp_path, SFT)
    assert _doctor(str(config), "--fix", "--write-config", str(tmp_path / "fixed.yaml")) == 2
    assert "pip install 'bridgepack[yaml]'" in capsys.readouterr().err
