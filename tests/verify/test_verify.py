"""bridgepack verify --bridge: the packing part against Megatron-Bridge 0.6.2's own code (from its wheel)."""

from __future__ import annotations

import importlib.util
import json
import zipfile
from pathlib import Path

import pytest

from _support import peers
from bridgepack.cli import main
from bridgepack.verify import VerifyOptions, _bridge_config, _verify, verify_bridge


def bridge_wheel() -> Path:
    peers.bridge_wheel_root()  # downloads the wheel into the cache (or skips / fails in CI)
    wheels = sorted((peers.CACHE_DIR / "wheels").glob(f"megatron_bridge-{peers.BRIDGE_VERSION}-*.whl"))
    if not wheels:
        pytest.skip("the megatron-bridge wheel is not in the test cache")
    return wheels[0]


@pytest.mark.network
@pytest.mark.parametrize("pad", [1, 4])
def test_packing_part_matches_bridge_062(monkeypatch: pytest.MonkeyPatch, pad: int) -> None:
    # the config part would run with an installed Megatron-Core >= 0.17; here it must have nothing to run with
    monkeypatch.setattr(_bridge_config, "_installed_mcore_training", lambda: None)
    results = verify_bridge(
        VerifyOptions(wheel=str(bridge_wheel()), samples=400, pack_size=128, pad_seq_to_mult=pad)
    )
    packing, *others = results
    assert packing.status == "passed", packing.details
    assert packing.details["bridge_version"] == "0.6.2"
    assert packing.details["packs"][0] == packing.details["packs"][1] > 1
    # parts that need an importable Bridge are skipped with a reason here, never passed
    assert [(p.name, p.status) for p in others] == [("collate", "skipped"), ("config", "skipped")]
    assert all(p.reason for p in others)


@pytest.mark.network
def test_keep_leaves_both_packings(tmp_path: Path) -> None:
    opts = VerifyOptions(wheel=str(bridge_wheel()), samples=50, pack_size=64, keep=tmp_path / "keep")
    packing = verify_bridge(opts)[0]
    files = packing.details["files"]
    assert Path(files["bridgepack"]).is_file() and Path(files["bridge"]).is_file()
    assert main(["diff", files["bridgepack"], files["bridge"], "-q"]) == 0


@pytest.mark.network
def test_a_different_bridge_packing_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = bridge_wheel()
    monkeypatch.setattr(_verify, "BRIDGE_DEFAULT_ALGORITHM", "first_fit_decreasing")
    code = main(
        [
            "verify",
            "--bridge",
            "--bridge-wheel",
            str(wheel),
            "--samples",
            "300",
            "--pack-size",
            "128",
            "--format",
            "json",
        ]
    )
    assert code == 1
    packing = json.loads(capsys.readouterr().out)["parts"][0]
    assert packing["status"] == "failed" and packing["details"]["first_differing_pack"] is not None


def _bridge_importable_via_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand in for an importable Bridge: its dataset class loaded by path from the 0.6.2 wheel."""
    from _support.bridge_batching import bridge_packing_modules

    cls = bridge_packing_modules().parquet.GPTSFTPackedParquetDataset
    monkeypatch.setattr(_verify, "bridge_available", lambda: (True, ""))
    monkeypatch.setattr(_verify, "bridge_dataset_class", lambda: cls)


@pytest.mark.network
@pytest.mark.parametrize("pad", [1, 4])
def test_collate_part_against_bridge_062_collate(monkeypatch: pytest.MonkeyPatch, pad: int) -> None:
    _bridge_importable_via_wheel(monkeypatch)
    opts = VerifyOptions(wheel=str(bridge_wheel()), samples=300, pack_size=128, pad_seq_to_mult=pad)
    packing, collate, config = verify_bridge(opts)
    assert packing.status == "passed"
    assert collate.status == "passed", collate.details
    assert collate.details["variant"] == "0.6.2"
    assert config.status == "skipped" and config.reason


@pytest.mark.network
def test_collate_part_sees_a_release_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Collating as Bridge main (no EOS zeroing, padding_mask) differs from the 0.6.2 collate_fn."""
    _bridge_importable_via_wheel(monkeypatch)
    monkeypatch.setattr(_verify, "collate_variant", lambda _version: "main")
    opts = VerifyOptions(wheel=str(bridge_wheel()), samples=300, pack_size=128)
    _, collate, _ = verify_bridge(opts)
    assert collate.status == "failed"
    keys = {m["key"] for m in collate.details["mismatches"]}
    assert {"loss_mask", "padding_mask"} <= keys


@pytest.mark.parametrize(
    ("version", "variant"),
    [("0.5.1", "legacy"), ("0.6.0", "0.6.2"), ("0.6.2", "0.6.2"), ("0.7.0rc1", "main")],
)
def test_collate_variant_by_release(version: str, variant: str) -> None:
    assert _verify.collate_variant(version) == variant


def test_not_a_wheel_is_unreadable(tmp_path: Path) -> None:
    fake = tmp_path / "megatron_bridge-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(fake, "w") as archive:
        archive.writestr("README.txt", "nothing here")
    assert main(["verify", "--bridge", "--bridge-wheel", str(fake)]) == 2
    assert main(["verify", "--bridge", "--bridge-wheel", str(tmp_path / "missing.whl")]) == 2


def test_needs_bridge_flag_and_an_installed_bridge_or_wheel() -> None:
    assert main(["verify"]) == 2
    if importlib.util.find_spec("megatron.bridge") is None:
        assert main(["verify", "--bridge"]) == 2  # nothing to compare with
