"""The bundled Bridge config really has the deliberate mistake, and the doctor's fix really clears it,
also against real packs made from the bundled data."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bridgepack.data.pipeline import PackOptions, TooLong, pack_files
from bridgepack.demo import EXPECTED_FINDING, QUICK, DemoPaths, build_tokenizer, config_path, dataset_path
from bridgepack.demo._steps import conversation_texts, doctor
from bridgepack.doctor import DoctorOptions, apply_overrides, check, load_config, suggest_fixes

OPTIONS = DoctorOptions(world_size=1)


def test_bundled_config_triggers_the_intended_finding() -> None:
    report = check(load_config(config_path()), OPTIONS)
    errors = [f.id for f in report.findings if f.severity == "error"]
    assert errors == [EXPECTED_FINDING]


def test_the_fix_clears_every_finding() -> None:
    loaded = load_config(config_path())
    fixes = suggest_fixes(loaded, OPTIONS)
    assert "train.micro_batch_size=1" in fixes
    assert check(apply_overrides(loaded, fixes), OPTIONS).findings == []


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> DemoPaths:
    """Packs and tokenizer as the demo makes them (same sizes), without training."""
    root = tmp_path_factory.mktemp("demo-config")
    paths = DemoPaths(root, QUICK.pack_size)
    build_tokenizer(conversation_texts(dataset_path()), paths.tokenizer, split_digits=True)
    pack_files(
        PackOptions.from_flat(
            [dataset_path()],
            paths.packed_dir,
            QUICK.pack_size,
            tokenizer=paths.tokenizer,
            too_long=TooLong.truncate,
            quiet=True,
        )
    )
    return paths


def test_fixed_config_passes_against_the_real_packs(paths: DemoPaths) -> None:
    out = doctor(config_path(), paths, lang="en", overwrite=True)
    assert out.found_expected
    assert out.fixed.findings == []
    # The fixed YAML written beside the original checks clean on its own, data included.
    fixed = yaml.safe_load(paths.fixed_config.read_text())
    assert fixed["train"]["micro_batch_size"] == 1
    assert fixed["dataset"]["offline_packing_specs"]["packed_sequence_size"] == QUICK.pack_size
    assert check(load_config(paths.fixed_config), OPTIONS).findings == []


def test_data_checks_really_ran(paths: DemoPaths) -> None:
    """Naming another tokenizer than the packs were made with is caught: the doctor read the packs."""
    loaded = load_config(
        config_path(),
        [
            f"dataset.offline_packing_specs.packed_train_data_path={paths.packed}",
            "tokenizer.tokenizer_model=some/other-tokenizer",
            f"dataset.offline_packing_specs.packed_sequence_size={QUICK.pack_size}",
            "train.micro_batch_size=1",
            "train.global_batch_size=4",
        ],
    )
    assert [f.id for f in check(loaded, OPTIONS).findings] == ["SP043"]


def test_bundled_config_is_plain_yaml() -> None:
    """Readable by a user's own tools: safe_load gives a mapping of Bridge sections."""
    document = yaml.safe_load(Path(config_path()).read_text())
    assert {"model", "train", "dataset"} <= set(document)
