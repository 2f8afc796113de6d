"""Loading configs: Bridge YAML of both eras, defaults, overrides, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridgepack._yaml import load_yaml
from bridgepack.doctor import DoctorOptions, check, load_config
from bridgepack.errors import InputError, UsageError
from bridgepack.findings import Location
from bridgepack.translate import mlm_to_bridge

DRY_RUN_V06 = """\
_target_: megatron.bridge.training.config.ConfigContainer
train:
  _target_: megatron.bridge.training.config.TrainingConfig
  micro_batch_size: 1
  global_batch_size: 32
  train_iters: 100
model:
  _target_: megatron.bridge.models.llama.llama_provider.Llama31ModelProvider8B
  seq_length: 4096
  tensor_model_parallel_size: 2
  context_parallel_size: 2
  sequence_parallel: true
  calculate_per_token_loss: true
  activation_func:
    _target_: torch.nn.functional.silu
    _call_: false
dataset:
  _target_: megatron.bridge.data.builders.gpt_sft.GPTSFTDatasetConfig
  seq_length: 4096
  dataset_root: /data/squad
  enable_offline_packing: true
  offline_packing_specs:
    _target_: megatron.bridge.data.packing.config.PackedSequenceSpecs
    packed_sequence_size: 4096
    pad_seq_to_mult: 4
  dataset_kwargs:
    pad_to_max_length: true
ddp:
  _target_: megatron.bridge.training.config.DistributedDataParallelConfig
  average_in_collective: false
mixed_precision: bf16_mixed
logger:
  log_interval: 10
"""

V05 = """\
dataset:
  seq_length: 2048
  packed_sequence_specs:
    _target_: megatron.bridge.data.datasets.packed_sequence.PackedSequenceSpecs
    packed_sequence_size: 2048
model:
  seq_length: 2048
train:
  micro_batch_size: 2
  global_batch_size: 16
"""


def _write(tmp_path: Path, text: str, name: str = "cfg.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_dry_run_dump_reads_clean(tmp_path: Path) -> None:
    loaded = load_config(_write(tmp_path, DRY_RUN_V06))
    view = loaded.view
    assert view.era == "v0.6"
    assert view.dataset.kind == "sft"
    assert view.offline_specs.pad_seq_to_mult == 4 and view.dataset.fixed_width
    assert view.mixed_precision == "bf16_mixed"
    assert view.model.target is not None and view.model.target.endswith("Llama31ModelProvider8B")
    findings = check(loaded).findings
    assert [f.id for f in findings if not f.id.startswith("SP2")] == []  # no rule fires
    # Packed CP 2 with pre-padding and validation on, versions unknown: the atlas's entries for packed CP,
    # pre-padding and packed evaluation warn conditionally, nothing more -- those of Bridge releases fixed
    # before 0.6.0 (SP203, SP217, SP218, SP242) cannot hit a config with 0.6's key names.
    atlas = ("SP212", "SP213", "SP243")
    assert [(f.id, f.severity) for f in findings] == [(i, "warning") for i in atlas]
    # On the stack bridgepack targets only the open Transformer Engine slowdown is left.
    on_062 = check(loaded, DoctorOptions(stack={"megatron-bridge": "0.6.2", "transformer-engine": "2.18"}))
    assert [f.id for f in on_062.findings] == ["SP213"]


def test_legacy_names_map_to_v06_and_report_the_era(tmp_path: Path) -> None:
    loaded = load_config(_write(tmp_path, V05))
    assert loaded.view.era == "<=v0.5"
    assert loaded.view.dataset.enable_offline_packing
    assert loaded.view.offline_specs.packed_sequence_size == 2048
    ids = [f.id for f in check(loaded).findings]
    assert "SP005" in ids and "SP105" in ids


def test_mixed_era_is_a_warning(tmp_path: Path) -> None:
    text = V05.replace("  seq_length: 2048\n", "  seq_length: 2048\n  enable_offline_packing: true\n", 1)
    loaded = load_config(_write(tmp_path, text))
    assert loaded.view.era == "mixed"
    assert "SP104" in [f.id for f in check(loaded).findings]
    assert "SP105" not in [f.id for f in check(load_config(_write(tmp_path, DRY_RUN_V06, "b.yaml"))).findings]


def test_partial_file_takes_bridge_defaults(tmp_path: Path) -> None:
    view = load_config(
        _write(tmp_path, "dataset:\n  enable_offline_packing: true\n  offline_packing_specs: {}\n")
    ).view
    assert view.model.seq_length == 1024  # GPTModelProvider default
    assert view.offline_specs.packed_sequence_size == -1 and view.offline_specs.pad_seq_to_mult == 1
    assert view.offline_specs.pad_cu_seqlens is False
    assert view.ddp.average_in_collective is False and view.model.context_parallel_size == 1


def test_overrides_win_over_the_file(tmp_path: Path) -> None:
    loaded = load_config(
        _write(tmp_path, DRY_RUN_V06), ["model.context_parallel_size=4", "+train.exit_interval=5"]
    )
    assert loaded.view.model.context_parallel_size == 4
    assert loaded.raw["train"]["exit_interval"] == 5


def test_mlm_flags_then_overrides() -> None:
    mlm = mlm_to_bridge(["--seq-length", "4096", "--context-parallel-size", "2"])
    loaded = load_config(overrides=["dataset.seq_length=8192", "model.seq_length=8192"], mlm=mlm)
    assert loaded.view.model.seq_length == 8192 and loaded.view.model.context_parallel_size == 2


def test_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cfg\.yaml:3:\d+"):
        load_config(_write(tmp_path, "model:\n  seq_length: 4096\n  tp: a: b\n"))


def test_python_tags_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cfg\.yaml:1:\d+"):
        load_config(_write(tmp_path, "model: !!python/object/apply:os.system ['true']\n"))


def test_missing_file_and_non_mapping(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(InputError, match="expected a mapping"):
        load_config(_write(tmp_path, "- 1\n- 2\n"))


def test_bad_override_syntax_is_usage_error() -> None:
    with pytest.raises(UsageError, match="KEY=VALUE"):
        load_config(overrides=["model.seq_length"])


def test_misspelled_field_names_the_closest(tmp_path: Path) -> None:
    text = (
        "dataset:\n  offline_packing_specs:\n    packed_sequense_size: 4096\n  enable_ofline_packing: true\n"
    )
    loaded = load_config(_write(tmp_path, text))
    found = {p.key: p.suggestion for p in loaded.problems if p.kind == "unknown-field"}
    specs = "dataset.offline_packing_specs"
    assert found == {
        f"{specs}.packed_sequense_size": f"{specs}.packed_sequence_size",
        "dataset.enable_ofline_packing": "dataset.enable_offline_packing",
    }


def test_wrong_type_names_the_field(tmp_path: Path) -> None:
    loaded = load_config(_write(tmp_path, 'model:\n  sequence_parallel: "maybe"\n'))
    (finding,) = [f for f in check(loaded).findings if f.id == "SP102"]
    assert finding.fields == ["model.sequence_parallel"] and "'maybe'" in finding.message


def test_a_count_that_is_not_a_number_is_unusable_input(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match=r"cfg\.yaml:3:3: field 'model\.context_parallel_size': .* found 'two'"
    ):
        load_config(_write(tmp_path, 'model:\n  seq_length: 4096\n  context_parallel_size: "two"\n'))
    with pytest.raises(UsageError, match=r"^override 'train\.global_batch_size=\[8\]': field 'train\.global"):
        load_config(overrides=["train.global_batch_size=[8]"])
    # an interpolation is resolved when the run starts: not judged here, not refused
    load_config(overrides=["dataset.seq_length=${model.seq_length}"])


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("model:\n  tensor_model_parallel_size: 0\n", "model.tensor_model_parallel_size"),
        ("model:\n  context_parallel_size: -2\n", "model.context_parallel_size"),
        (
            "model:\n  pipeline_model_parallel_size: 18446744073709551616\n",
            "model.pipeline_model_parallel_size",
        ),
        ("train:\n  global_batch_size: -8\n", "train.global_batch_size"),
        ("train:\n  micro_batch_size: 0\n", "train.micro_batch_size"),
        ("dataset:\n  seq_length: -5\n", "dataset.seq_length"),
    ],
)
def test_a_count_out_of_range_is_an_error_finding_naming_the_field(
    tmp_path: Path, text: str, field: str
) -> None:
    loaded = load_config(_write(tmp_path, text))
    (finding,) = [f for f in check(loaded, DoctorOptions(world_size=8)).findings if f.id == "SP106"]
    assert finding.severity == "error" and finding.fields == [field]
    assert str(finding.location) == f"{tmp_path / 'cfg.yaml'}:2:3" and "cfg.yaml" not in finding.message


def test_a_key_given_twice_in_a_yaml_is_an_error_finding(tmp_path: Path) -> None:
    text = "model:\n  seq_length: 4096\n  context_parallel_size: 2\n  seq_length: 8192\n"
    loaded = load_config(_write(tmp_path, text))
    (finding,) = [f for f in check(loaded).findings if f.id == "SP107"]
    assert finding.severity == "error" and finding.fields == ["model.seq_length"]
    assert finding.message == "field 'model.seq_length' is given twice (lines 2 and 4); YAML keeps the last"
    assert finding.location is not None and (finding.location.line, finding.location.col) == (4, 3)
    # other YAML inputs (a model_config.yaml) refuse it outright
    with pytest.raises(
        InputError, match=r"cfg\.yaml:4: key 'model\.seq_length' is given twice \(first at line 2\)"
    ):
        load_yaml(tmp_path / "cfg.yaml")


def test_contradictory_plain_option_and_override() -> None:
    loaded = load_config(overrides=["model.context_parallel_size=4"], options={"cp": 2})
    (finding,) = [f for f in check(loaded).findings if f.id == "SP103"]
    assert "--cp" in finding.message


def test_findings_point_at_the_yaml_line_and_column(tmp_path: Path) -> None:
    loaded = load_config(_write(tmp_path, "model:\n  seq_length: 4096\n  context_paralel_size: 2\n"))
    (finding,) = [f for f in check(loaded).findings if f.id == "SP101"]
    assert finding.location == Location(str(tmp_path / "cfg.yaml"), 3, 3)
    assert "model.context_parallel_size" in finding.message


def test_real_scheduler_fields_are_known_and_typos_suggested(tmp_path: Path) -> None:
    text = "scheduler:\n  lr_warmup_init: 0.0\n  lr_warmup_iter: 3\n"
    unknown = [f for f in check(load_config(_write(tmp_path, text))).findings if f.id == "SP101"]
    assert len(unknown) == 1
    assert (
        "scheduler.lr_warmup_iter'" in unknown[0].message
        and "scheduler.lr_warmup_iters" in unknown[0].message
    )


def test_delete_override_removes_a_key(tmp_path: Path) -> None:
    loaded = load_config(_write(tmp_path, DRY_RUN_V06), ["~dataset.offline_packing_specs"])
    assert loaded.view.dataset.offline_packing_specs is None
    assert "SP002" in [f.id for f in check(loaded).findings]


def test_dates_stay_strings_and_null_sections_take_overrides(tmp_path: Path) -> None:
    text = "dataset:\n  seq_length: 4096\n  offline_packing_specs: null\n  note: 2024-01-01\n"
    loaded = load_config(_write(tmp_path, text), ["dataset.offline_packing_specs.packed_sequence_size=4096"])
    assert loaded.raw["dataset"]["note"] == "2024-01-01"
    assert loaded.view.offline_specs.packed_sequence_size == 4096


def test_checkpoint_directory_reads_the_newest_run_config(tmp_path: Path) -> None:
    for step, seq in (("iter_0000100", 2048), ("iter_0000200", 4096)):
        (tmp_path / step).mkdir()
        (tmp_path / step / "run_config.yaml").write_text(f"model:\n  seq_length: {seq}\n")
    loaded = load_config(tmp_path)
    assert loaded.view.model.seq_length == 4096
    assert loaded.source is not None and loaded.source.endswith("iter_0000200/run_config.yaml")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"without run_config\.yaml"):
        load_config(tmp_path / "empty")


def test_a_finding_points_at_the_key_its_fix_sets_and_only_at_what_the_file_still_decides(
    tmp_path: Path,
) -> None:
    text = (
        "model:\n  context_parallel_size: 2\n  seq_length: 4096\ndataset:\n  enable_offline_packing: true\n"
    )
    text += "ddp:\n  average_in_collective: true\n"
    path = _write(tmp_path, text)
    found = {f.id: f.location for f in check(load_config(path, dataset_kind="sft")).findings}
    # SP013's fix sets ddp.average_in_collective: that line, not the CP line the rule also reads
    assert found["SP013"] == Location(str(path), 7, 3)
    # SP012's fix key is not in the file: the first field it reads that is
    assert found["SP012"] == Location(str(path), 2, 3)
    # a key an override replaced is no longer the file's: CP now comes from the command line
    loaded = load_config(path, ["model.context_parallel_size=4"], dataset_kind="sft")
    assert {f.id: f.location for f in check(loaded).findings}["SP012"] == Location(str(path))


def test_locations_follow_legacy_names_and_the_container_wrapper(tmp_path: Path) -> None:
    v05 = "dataset:\n  packed_sequence_specs:\n    packed_sequence_size: 2048\n    pad_seq_to_mult: 0\n"
    (finding,) = [f for f in check(load_config(_write(tmp_path, v05))).findings if f.id == "SP021"]
    assert finding.location == Location(str(tmp_path / "cfg.yaml"), 4, 5)
    wrapped = _write(
        tmp_path, "ConfigContainer:\n  model:\n    seq_length: 510\n    context_parallel_size: 2\n"
    )
    (finding,) = check(load_config(wrapped)).findings
    assert finding.id == "SP011" and finding.location == Location(str(wrapped), 3, 5)
