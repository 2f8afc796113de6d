"""The config part of bridgepack verify --bridge: doctor's rule cases against Bridge 0.6.2's
ConfigContainer.validate (its real classes, from the 0.6.2 wheel with the Megatron-Core 0.19.2 wheel, run in a
child interpreter)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from _support import doc_pages, fenced_blocks, peers
from bridgepack.doctor import RULES
from bridgepack.verify import _bridge_config as bc
from bridgepack.verify._bridge_config import CASES, BridgeConfigSource, RuleCase

#: Cases Bridge 0.6.2 cannot build here: no dataset class has both packing switches (SP001); Bridge's LoRA
#: imports Transformer Engine (SP031), so PEFT builds only where it is installed.
UNBUILT = ["SP001"] + (["SP031"] if importlib.util.find_spec("transformer_engine") is None else [])


#: docs/verify.md's runs with both wheels (text, then `--format json`), word for word (the docs test only
#: parses them).
PAGE_COMMANDS = doc_pages.pinned_by(__file__)
JSON_COMMAND = next(cmd for cmd in PAGE_COMMANDS if "json" in cmd.words())
#: The wheels the page's `pip download` leaves in the folder the commands run in.
WHEELS = (("megatron-bridge", peers.BRIDGE_VERSION), ("megatron-core", peers.MCORE_VERSION))

Run = tuple[int, str, str]


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """The page's commands in a folder holding the two wheels, as its `pip download` leaves them: the exit
    code, standard output and standard error of each, run in this process. Each command runs whole (its own
    unpacked wheels, its packing part), but Bridge's verdicts on the case table, the same for the same
    wheels, come from one child interpreter (~10 s), asked on the first run."""
    work = tmp_path_factory.mktemp("verify-page")
    for project, version in WHEELS:
        wheel = peers.wheel_file(project, version)
        (work / wheel.name).symlink_to(wheel)
    verdicts: dict[tuple[str, str], dict[str, Any]] = {}
    ask_bridge = bc.bridge_verdicts

    def once_per_wheels(cases: Any, source: BridgeConfigSource, where: Path) -> dict[str, Any]:
        key = (source.origin, json.dumps([case.configs() for case in cases]))
        if key not in verdicts:
            verdicts[key] = ask_bridge(cases, source, where)
        return verdicts[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        patch.setattr(bc, "bridge_verdicts", once_per_wheels)
        runs = {cmd.where: doc_pages.run_captured(cmd) for cmd in PAGE_COMMANDS}
    assert len(verdicts) == 1, "the page's commands asked Bridge about different wheels or cases"
    return runs


@pytest.fixture(scope="module")
def config_part(page_runs: dict[str, Run]) -> dict[str, Any]:
    """The config part of the page's JSON run: Bridge 0.6.2's verdict on every config of the case table."""
    parts = {p["part"]: p for p in json.loads(page_runs[JSON_COMMAND.where][1])["parts"]}
    return dict(parts["config"])


def bridge_results(config: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Bridge's outcome per config key (``SP011:bad``), read back from the part's per-case report."""
    return {
        f"{row['rule']}:{variant}": {
            "outcome": seen["bridge"],
            "stage": seen["bridge_stage"],
            "error": seen["bridge_error"],
        }
        for row in config["details"]["cases"]
        for variant, seen in row["configs"].items()
    }


@pytest.fixture(scope="module")
def doctor() -> dict[str, bool]:
    return bc.doctor_verdicts(CASES)


def test_case_table_names_each_error_rule_once_and_doctor_sees_each_twin() -> None:
    errors = {r.id for r in RULES if r.severity == "error"}
    rules = [case.rule for case in CASES]
    assert len(rules) == len(set(rules)) and set(rules) <= errors
    verdicts = bc.doctor_verdicts(CASES)
    assert [k for k, fired in verdicts.items() if fired != k.endswith(":bad")] == []


@pytest.mark.network
def test_doctor_and_bridge_062_agree_on_every_case_bridge_can_build(
    config_part: dict[str, Any], doctor: dict[str, bool]
) -> None:
    details = config_part["details"]
    assert (details["bridge_version"], details["megatron_core_version"]) == ("0.6.2", "0.19.2")
    comparison = bc.compare(CASES, doctor, bridge_results(config_part))
    assert comparison == {"cases": details["cases"], "counts": details["counts"]}
    assert bc.config_status(comparison) == ("passed", "") and config_part["status"] == "passed"
    rows = {row["rule"]: row for row in comparison["cases"]}
    assert [r for r, row in rows.items() if row["verdict"] != "agree"] == UNBUILT
    assert rows["SP001"]["configs"]["bad"]["bridge"] == "unbuilt"
    assert "enable_offline_packing" in rows["SP001"]["configs"]["bad"]["bridge_error"]
    both_fire = rows["SP011"]["configs"]["bad"]
    assert (both_fire["doctor"], both_fire["bridge"]) == ("error", "rejected")
    assert "2 * context parallel size" in both_fire["bridge_error"]
    neither = rows["SP011"]["configs"]["good"]
    assert (neither["doctor"], neither["bridge"], neither["bridge_error"]) == ("silent", "accepted", "")
    # rejected while building (PackedSequenceSpecs.__post_init__) counts as a refusal too
    assert rows["SP021"]["configs"]["bad"]["bridge_stage"] == "build"


@pytest.mark.network
@pytest.mark.parametrize(("key", "verdict"), [("SP011:good", "doctor-only"), ("SP005:bad", "bridge-only")])
def test_a_flipped_doctor_verdict_fails_the_part(
    config_part: dict[str, Any], doctor: dict[str, bool], key: str, verdict: str
) -> None:
    flipped = {**doctor, key: not doctor[key]}
    comparison = bc.compare(CASES, flipped, bridge_results(config_part))
    assert bc.config_status(comparison)[0] == "failed"
    bad = [
        (row["rule"], row["verdict"])
        for row in comparison["cases"]
        if row["verdict"] not in ("agree", "unbuilt")
    ]
    assert bad == [(key.split(":")[0], verdict)]


def _outcome(outcome: str) -> dict[str, str]:
    return {
        "outcome": outcome,
        "stage": "build",
        "error": "TypeError: no such field" if outcome == "unbuilt" else "",
    }


def test_cases_bridge_cannot_build_are_listed_and_never_pass_alone() -> None:
    case = RuleCase("SP005", ("train.micro_batch_size=2",))
    doctor = {"SP005:bad": True, "SP005:good": False}
    unbuilt = bc.compare(
        [case], doctor, {"SP005:bad": _outcome("unbuilt"), "SP005:good": _outcome("accepted")}
    )
    assert unbuilt["counts"] == {"agree": 0, "doctor-only": 0, "bridge-only": 0, "unbuilt": 1}
    assert unbuilt["cases"][0]["configs"]["bad"]["bridge_error"] == "TypeError: no such field"
    assert bc.config_status(unbuilt)[0] == "skipped"
    # a disagreement on the other config still fails the part
    wrong = bc.compare([case], doctor, {"SP005:bad": _outcome("accepted"), "SP005:good": _outcome("unbuilt")})
    assert wrong["cases"][0]["verdict"] == "doctor-only" and bc.config_status(wrong)[0] == "failed"


def test_config_part_is_skipped_with_the_reason_when_bridge_is_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert bc.config_source(None, None, tmp_path, False, "megatron-bridge is not installed") == (
        None,
        "megatron-bridge is not installed",
    )
    monkeypatch.setattr(bc, "_installed_mcore_training", lambda: None)
    for importable in (False, True):  # a given wheel is what is verified, installed Bridge or not
        source, reason = bc.config_source("bridge.whl", None, tmp_path, importable, "not installed")
        assert source is None and "--megatron-core-wheel" in reason
    installed, _ = bc.config_source(None, None, tmp_path, True, "")
    assert installed == BridgeConfigSource("installed megatron-bridge")


def test_a_bridge_that_does_not_load_skips_the_part(tmp_path: Path) -> None:
    empty = tmp_path / "not-bridge"
    (empty / "megatron" / "bridge").mkdir(parents=True)
    status, reason, _ = bc.run_config_part(BridgeConfigSource("empty dir", empty), tmp_path, CASES[:1])
    assert status == "skipped" and "did not load (empty dir)" in reason and "ModuleNotFoundError" in reason


@pytest.mark.network
@pytest.mark.parametrize("cmd", PAGE_COMMANDS, ids=doc_pages.command_id)
def test_the_pages_runs_show_what_it_says(cmd: fenced_blocks.Command, page_runs: dict[str, Run]) -> None:
    code, out, err = page_runs[cmd.where]
    assert doc_pages.broken_promises(cmd, code, out + err) == []


@pytest.mark.network
def test_verify_runs_the_config_part_from_the_two_wheels(config_part: dict[str, Any]) -> None:
    """The config part passed on every case Bridge can build, from the two wheels."""
    assert config_part["status"] == "passed", config_part
    assert config_part["details"]["counts"]["agree"] == len(CASES) - len(UNBUILT)
    assert "megatron.bridge: package without its __init__" in config_part["details"]["stand_ins"]
    assert f"megatron-core {peers.MCORE_VERSION} from wheel" in config_part["details"]["origin"]
