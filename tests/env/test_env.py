"""The environment report: structure, and the rules on faked version tables."""

from __future__ import annotations

import json

import pytest

from bridgepack.cli import main
from bridgepack.env import VersionTable, env_findings, env_report, parse_version
from bridgepack.env import _stack as _env
from bridgepack.findings import Finding

NONE_INSTALLED = {name: None for name, _ in _env.REPORTED_PACKAGES}


def table(python: str = "3.12.3", **packages: str) -> VersionTable:
    versions = dict(NONE_INSTALLED)
    versions.update({name.replace("_", "-"): v for name, v in packages.items()})
    return VersionTable(python=python, packages=versions)


def ids(found: list[_env.EnvFinding]) -> dict[str, str]:
    return {f.id: f.severity for f in found}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.16.1", (0, 16, 1)),
        ("0.18.0rc1", (0, 18, 0)),
        ("2.13.0+cpu", (2, 13, 0)),
        ("v1.2", (1, 2)),
        ("dev", ()),
    ],
)
def test_parse_version(text: str, expected: tuple[int, ...]) -> None:
    assert parse_version(text) == expected


def test_thd_cp_needs_mcore_018() -> None:
    assert ids(env_findings(table(megatron_core="0.17.2"))) == {"ENV001": "warning"}
    assert ids(env_findings(table(megatron_core="0.18.0"))) == {}
    assert ids(env_findings(table(megatron_core="0.18.0rc1"))) == {}


def test_python_312_needed_by_new_mcore_and_bridge() -> None:
    found = env_findings(table("3.11.7", megatron_core="0.18.0", megatron_bridge="0.4.0"))
    assert ids(found)["ENV002"] == "error"
    error = next(f for f in found if f.id == "ENV002")
    assert "megatron-core 0.18.0" in error.message and "megatron-bridge 0.4.0" in error.message
    # older releases run on 3.11: only the informational note remains
    assert (
        ids(env_findings(table("3.11.7", megatron_core="0.16.1", megatron_bridge="0.3.1")))["ENV003"]
        == "info"
    )
    assert "ENV002" not in ids(env_findings(table("3.11.7", megatron_core="0.16.1")))
    assert "ENV002" not in ids(env_findings(table("3.12.0", megatron_core="0.18.0", megatron_bridge="0.6.2")))


def test_bridge_era_names() -> None:
    new = next(f for f in env_findings(table(megatron_bridge="0.6.2")) if f.id == "ENV004")
    assert "enable_offline_packing" in new.message
    old = next(f for f in env_findings(table(megatron_bridge="0.5.1")) if f.id == "ENV004")
    assert "packed_sequence_specs" in old.message and "enable_offline_packing" not in old.message


def test_no_gpu_note_only_when_torch_says_so() -> None:
    cpu = VersionTable("3.12.1", {**NONE_INSTALLED, "torch": "2.13.0+cpu"}, cuda_available=False)
    assert ids(env_findings(cpu)) == {"ENV005": "info"}
    gpu = VersionTable("3.12.1", {**NONE_INSTALLED, "torch": "2.13.0"}, True, "12.8", ("H200",))
    assert ids(env_findings(gpu)) == {}


def test_errors_sorted_first() -> None:
    found = env_findings(table("3.10.2", megatron_core="0.17.0", megatron_bridge="0.6.0"))
    assert [f.severity for f in found] == sorted((f.severity for f in found), key=_env.SEVERITIES.index)
    assert found[0].id == "ENV002"


def test_report_dict_structure() -> None:
    doc = env_report(table(megatron_core="0.16.1")).to_dict()
    assert list(doc["packages"]) == [name for name, _ in _env.REPORTED_PACKAGES]
    assert set(doc["cuda"]) == {"available", "version", "devices"}
    assert set(doc["findings"][0]) == set(Finding("X", "info", "").to_dict())  # the one finding shape
    assert isinstance(doc["findings"][0]["fix"], list)


def test_real_machine_versions_read_from_metadata() -> None:
    """The versions are the installed distributions' own (what the modules report), and an absent package
    is ``None``, not a guess."""
    import platform

    import numba
    import pyarrow

    real = _env.collect_versions()
    assert real.packages["numba"] == numba.__version__
    assert real.packages["pyarrow"] == pyarrow.__version__
    assert real.python == platform.python_version()
    missing = "bridgepack-no-such-distribution"
    assert _env._installed_version((missing,)) is None


def test_cli_json_and_exit_code(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(_env, "collect_versions", lambda: table("3.12.2", megatron_core="0.16.1"))
    assert main(["env", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 2 and doc["findings"][0]["id"] == "ENV001"
    monkeypatch.setattr(_env, "collect_versions", lambda: table("3.11.0", megatron_bridge="0.6.2"))
    assert main(["env"]) == 1
    assert "ENV002 error" in capsys.readouterr().out
