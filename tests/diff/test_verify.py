"""seqpack verify --bridge: the packing part against Megatron-Bridge 0.6.2's own code (from its wheel)."""

from __future__ import annotations

import importlib.util
import json
import zipfile
from pathlib import Path

import pytest

from _support import peers
from seqpack.cli import main
from seqpack.diff import VerifyOptions, _verify, verify_bridge


def bridge_wheel() -> Path:
    peers.bridge_wheel_root()  # downloads the wheel into the cache (or skips / fails in CI)
    wheels = sorted((peers.CACHE_DIR / "wheels").glob(f"megatron_bridge-{peers.BRIDGE_VERSION}-*.whl"))
    if not wheels:
        pytest.skip("the megatron-bridge wheel is not in the test cache")
    return wheels[0]


@pytest.mark.network
@pytest.mark.parametrize("pad", [1, 4])
def test_packing_part_matches_bridge_062(pad: int) -> None:
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
def test_a_different_bridge_packing_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = bridge_wheel()
    monkeypatch.setattr(_verify, "BRIDGE_ALGORITHM", "first_fit_decreasing")
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
