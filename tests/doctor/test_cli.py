"""``bridgepack doctor`` and ``bridgepack translate`` end to end: exit codes, JSON schema, --fix,
languages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridgepack.cli import main

FINDING_KEYS = {"id", "severity", "fields", "message", "why", "fix", "upstream", "allowed", "location"}


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict]:
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def test_json_schema_is_stable(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(capsys, ["doctor", "--cp", "2", "--seq-length", "510", "--format", "json"])
    assert code == 1
    assert set(doc) == {"schema_version", "config_era", "findings", "stack"}
    assert doc["schema_version"] == 2 and doc["config_era"] == "neutral"
    assert [set(f) for f in doc["findings"]] == [FINDING_KEYS]
    assert doc["findings"][0]["id"] == "SP011" and doc["findings"][0]["severity"] == "error"


def test_exit_codes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["doctor", "--cp", "2", "--seq-length", "512"]) == 0
    assert main(["doctor", "--cp", "2", "--seq-length", "510"]) == 1
    assert main(["doctor", "--cp", "2", "--seq-length", "510", "--allow", "SP011"]) == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [\n")
    assert main(["doctor", str(bad)]) == 2
    assert main(["doctor", str(tmp_path / "missing.yaml")]) == 2
    assert main(["doctor", "--allow", "SP999"]) == 2
    capsys.readouterr()


def test_config_and_overrides(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("model:\n  seq_length: 510\n  context_parallel_size: 2\ndataset:\n  seq_length: 510\n")
    assert main(["doctor", str(cfg)]) == 1
    assert main(["doctor", str(cfg), "model.seq_length=512", "dataset.seq_length=512"]) == 0
    capsys.readouterr()


def test_fix_prints_corrected_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["doctor", "--pack-size", "4096", "--seq-length", "4096", "--mbs", "2", "--gbs", "64", "--fix"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    tail = out.split("corrected overrides:", 1)[1].split()
    assert tail == [
        "train.micro_batch_size=1",
        "train.global_batch_size=32",
        "dataset.offline_packing_specs.packed_sequence_size=8192",
        "dataset.seq_length=8192",
        "model.seq_length=8192",
    ]


def test_chinese_messages(capsys: pytest.CaptureFixture[str]) -> None:
    _code, doc = _json(
        capsys, ["doctor", "--cp", "2", "--seq-length", "510", "--format", "json", "--lang", "zh"]
    )
    assert "整除" in doc["findings"][0]["message"]


def test_locale_picks_chinese(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LC_ALL", "zh_CN.UTF-8")
    _code, doc = _json(capsys, ["doctor", "--cp", "2", "--seq-length", "510", "--format", "json"])
    assert "整除" in doc["findings"][0]["message"]


@pytest.mark.shared
def test_every_model_config_gets_a_deterministic_report(
    capsys: pytest.CaptureFixture[str], shared_dir: Path
) -> None:
    for path in sorted((shared_dir / "data" / "mlm-functional-cases").glob("*/model_config.yaml")):
        argv = [
            "doctor",
            "--model-config",
            str(path),
            "--world-size",
            "16",
            "--format",
            "json",
            "--lang",
            "en",
        ]
        first = _json(capsys, argv)
        assert first == _json(capsys, argv)
        assert first[1]["config_era"] == "neutral"
        assert first[0] == (1 if any(f["severity"] == "error" for f in first[1]["findings"]) else 0)


def test_mlm_args_option(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(
        capsys, ["doctor", "--mlm-args", "--seq-length 510 --context-parallel-size 2", "--format", "json"]
    )
    assert code == 1 and [f["id"] for f in doc["findings"]] == ["SP011"]


def test_translate_mlm_to_bridge(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["translate", "mlm-to-bridge", "--", "--seq-length", "4096", "--swiglu", "--use-mcore-models"])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == [
        "dataset.seq_length=4096",
        "model.seq_length=4096",
        "model.gated_linear_unit=true",
        "model.activation_func=silu",
    ]
    assert lines[4].startswith("# untranslated: --use-mcore-models")
    assert main(["translate", "mlm-to-bridge", "--strict", "--", "--use-mcore-models"]) == 1
    assert main(["translate", "mlm-to-bridge", "--strict", "--", "--bf16"]) == 0
    capsys.readouterr()


@pytest.mark.shared
def test_translate_model_config(capsys: pytest.CaptureFixture[str], shared_dir: Path) -> None:
    path = (
        shared_dir / "data/mlm-functional-cases/gpt3_mcore_te_tp2_pp1_resume_torch_dist_cp2_nondeterministic"
    )
    assert main(["translate", "mlm-to-bridge", "--model-config", str(path / "model_config.yaml")]) == 0
    out = capsys.readouterr().out
    assert "model.context_parallel_size=2\n" in out and "# untranslated: --use-mcore-models" in out


def test_translate_bridge_to_mlm(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["translate", "bridge-to-mlm", "model.seq_length=4096", "mixed_precision=bf16_mixed"]) == 0
    assert capsys.readouterr().out.splitlines() == ["--bf16 --seq-length 4096"]
    cfg = tmp_path / "c.yaml"
    cfg.write_text("_target_: x\nmodel:\n  _target_: y\n  num_layers: 2\nlogger:\n  foo: 1\n")
    assert main(["translate", "bridge-to-mlm", "--config", str(cfg), "--strict"]) == 1
    assert capsys.readouterr().out.splitlines() == ["--num-layers 2", "# untranslated: logger.foo=1"]


def test_translate_json_both_ways(capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--seq-length", "4096", "--bf16", "--use-mcore-models"]
    assert main(["translate", "mlm-to-bridge", "--format", "json", "--", *flags]) == 0
    forward = json.loads(capsys.readouterr().out)
    assert forward["schema_version"] == 2
    assert forward["overrides"] == [
        "dataset.seq_length=4096",
        "model.seq_length=4096",
        "mixed_precision=bf16_mixed",
    ]
    assert [u["flag"] for u in forward["untranslated"]] == ["--use-mcore-models"]
    assert main(["translate", "bridge-to-mlm", "--format", "json", *forward["overrides"]]) == 0
    back = json.loads(capsys.readouterr().out)
    assert back["flags"] == ["--bf16", "--seq-length", "4096"] and back["untranslated"] == []


@pytest.mark.shared
def test_real_cp2_case_as_fine_tuning(capsys: pytest.CaptureFixture[str], shared_dir: Path) -> None:
    """The CP=2 functional case is a valid pretraining run; fine-tuning it needs per-token loss (SP012),
    and 6 ranks cannot hold TP 2 x CP 2 (SP018)."""
    path = (
        shared_dir / "data/mlm-functional-cases/gpt3_mcore_te_tp2_pp1_resume_torch_dist_cp2_nondeterministic"
    )
    argv = ["doctor", "--model-config", str(path / "model_config.yaml"), "--format", "json", "--lang", "en"]
    code, doc = _json(capsys, [*argv, "--dataset-kind", "sft", "--world-size", "6"])
    assert code == 1
    assert [f["id"] for f in doc["findings"]] == ["SP012", "SP018"]


def test_overrides_without_a_config_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "model.context_parallel_size=2", "model.seq_length=510"]) == 1
    assert main(["doctor", "model.context_parallel_size=2", "model.seq_length=512"]) == 0
    assert main(["doctor", "--cp", "2", "--lang", "fr"]) == 2
    assert main(["translate", "mlm-to-bridge"]) == 2
    capsys.readouterr()


def test_translated_values_survive_shell_and_hydra_quoting(capsys: pytest.CaptureFixture[str]) -> None:
    import shlex

    from bridgepack.doctor import parse_override

    assert main(["translate", "mlm-to-bridge", "--", "--split", "949,50,1", "--data-path", "1.0 /a b"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["\"dataset.split='949,50,1'\"", "\"dataset.data_path='1.0 /a b'\""]
    assert [parse_override(shlex.split(line)[0]) for line in lines] == [
        ("dataset.split", "949,50,1"),
        ("dataset.data_path", "1.0 /a b"),
    ]


@pytest.mark.shared
def test_mlm_args_override_the_model_config(capsys: pytest.CaptureFixture[str], shared_dir: Path) -> None:
    path = (
        shared_dir / "data/mlm-functional-cases/gpt3_mcore_te_tp2_pp1_resume_torch_dist_cp2_nondeterministic"
    )
    argv = ["doctor", "--model-config", str(path / "model_config.yaml"), "--format", "json", "--lang", "en"]
    code, doc = _json(capsys, [*argv, "--mlm-args", "--seq-length 1022"])
    assert code == 1 and [f["id"] for f in doc["findings"]] == ["SP011"]


def test_env_option_adds_installed_stack_findings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import bridgepack.cli.doctor as doctor_cli
    from bridgepack.env import VersionTable, env_findings

    old_stack = VersionTable(python="3.11.7", packages={"megatron-core": "0.16.1", "megatron-bridge": None})
    monkeypatch.setattr(doctor_cli, "env_findings", lambda: env_findings(old_stack))
    assert main(["doctor", "--cp", "1", "--env", "--allow", "ENV001", "--format", "json"]) == 0
    findings = {f["id"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert findings["ENV001"]["allowed"] is True
    assert findings["ENV001"]["upstream"] == "installed versions (bridgepack env)"
    assert not [i for i in findings if i.startswith("SP0")]


def test_json_carries_the_librarys_schema_version(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI emits the version the library's report states, not a default of its own."""
    from bridgepack.doctor import Report

    monkeypatch.setattr(Report, "SCHEMA_VERSION", 7)
    _, doc = _json(capsys, ["doctor", "--cp", "2", "--seq-length", "512", "--format", "json"])
    assert doc["schema_version"] == 7


@pytest.mark.parametrize(
    ("section", "suggested"),
    [
        ("model_config", "model"),
        ("train_config", "train"),
        ("optimizer_cfg", "optimizer"),
        ("modle", "model"),
    ],
)
def test_unknown_section_suggests_the_real_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, section: str, suggested: str
) -> None:
    config = tmp_path / "old.yaml"
    config.write_text(f"{section}:\n  micro_batch_size: 1\n")
    _, doc = _json(capsys, ["doctor", str(config), "--format", "json"])
    (finding,) = [f for f in doc["findings"] if f["id"] == "SP100"]
    assert finding["message"] == f"unknown config section '{section}' (did you mean '{suggested}'?)"
    assert finding["location"] == {"file": str(config), "line": 1, "col": 1}
    assert finding["upstream"] == "skipped at merge (YAML), refused as an override"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_unknown_section_without_a_close_name_suggests_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lang: str
) -> None:
    config = tmp_path / "odd.yaml"
    config.write_text("zzz_settings:\n  a: 1\n")
    _, doc = _json(capsys, ["doctor", str(config), "--format", "json", "--lang", lang])
    (finding,) = [f for f in doc["findings"] if f["id"] == "SP100"]
    assert "zzz_settings" in finding["message"]
    assert not any(hint in finding["message"] for hint in ("'-'", "mean", "是否"))


def test_a_config_container_wrapper_is_read_as_the_config_inside(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Bridge's performance scripts write the whole config under one ``ConfigContainer:`` key."""
    inner = "model:\n  context_parallel_size: 2\n  seq_length: 510\ndataset:\n  seq_length: 510\n"
    wrapped = tmp_path / "wrapped.yaml"
    wrapped.write_text("ConfigContainer:\n" + "".join(f"  {line}\n" for line in inner.splitlines()))
    plain = tmp_path / "plain.yaml"
    plain.write_text(inner)
    code_wrapped, doc_wrapped = _json(capsys, ["doctor", str(wrapped), "--format", "json"])
    code_plain, doc_plain = _json(capsys, ["doctor", str(plain), "--format", "json"])
    assert code_wrapped == code_plain == 1
    assert [f["id"] for f in doc_wrapped["findings"]] == [f["id"] for f in doc_plain["findings"]] == ["SP011"]


# ---------------------------------------------------------------- rule lookup, linter conventions (#40)


def test_list_rules_and_explain_read_the_one_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    from bridgepack.doctor import CATALOG

    _, doc = _json(capsys, ["doctor", "--list-rules", "--format", "json", "--lang", "zh"])
    assert doc["schema_version"] == 1 and doc["lang"] == "zh"
    assert [r["id"] for r in doc["rules"]] == [e.id for e in CATALOG]
    assert [r["title"] for r in doc["rules"]] == [e.title("zh") for e in CATALOG]
    _, doc = _json(capsys, ["doctor", "--explain", "SP201", "--format", "json"])
    (entry,) = doc["rules"]
    assert entry["kind"] == "defect" and entry["versions"] == "megatron-bridge < 0.5.0"
    assert entry["links"] == [
        "https://github.com/NVIDIA-NeMo/Megatron-Bridge/issues/2952",
        "https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/3926",
    ]
    assert main(["doctor", "--explain", "SP011", "--lang", "zh"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "SP011 error: seq_length ⟨seq⟩ 不能被 2*CP = ⟨mult⟩ 整除（context_parallel_size ⟨cp⟩）"
    assert "example: bridgepack doctor model.context_parallel_size=2 model.seq_length=510" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["--explain", "SP999"],
        ["--explain", "SP005", "--list-rules"],
        ["--list-rules", "cfg.yaml"],
        ["--list-rules", "--format", "github"],
    ],
)
def test_catalog_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(["doctor", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")


def test_github_annotations_point_at_the_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("model:\n  seq_length: 510\n  context_parallel_size: 2\n  context_paralel_size: 2\n")
    assert main(["doctor", str(cfg), "--format", "github", "--allow", "SP101"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"::error file={cfg},line=2,col=3,title=SP011::seq_length 510 is not divisible by 2*CP = 4 "
        "(context_parallel_size 2)%0Afix: model.seq_length=512%0Afix: dataset.seq_length=512",
        f"::notice file={cfg},line=4,col=3,title=SP101::unknown field 'model.context_paralel_size' "
        "(did you mean 'model.context_parallel_size'?) (allowed)",
    ]
    assert main(["doctor", "--cp", "2", "--seq-length", "510", "--format", "github"]) == 1
    assert capsys.readouterr().out.startswith("::error title=SP011::seq_length 510")


def test_github_escapes_what_would_end_a_property_or_a_line() -> None:
    from bridgepack.cli._doctor_view import github_annotation
    from bridgepack.findings import Finding, Location

    finding = Finding("SP101", "warning", "100% a, b\nc", location=Location("a,b:c.yaml", 3, 1))
    assert (
        github_annotation(finding)
        == "::warning file=a%2Cb%3Ac.yaml,line=3,col=1,title=SP101::100%25 a, b%0Ac"
    )


def test_several_configs_are_checked_one_by_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("model:\n  seq_length: 512\n  context_parallel_size: 2\n")
    bad.write_text("model:\n  seq_length: 510\n  context_parallel_size: 2\n")
    assert main(["doctor", str(good), str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [f"config: {good}", "config era: neutral"] and out[2].startswith("stack: ")
    assert out[3] == "no findings: every rule passes"
    assert f"config: {bad}" in out and any(line.startswith(f"{bad}:2:3: SP011 error") for line in out)
    assert main(["doctor", str(good), str(good), "model.seq_length=510"]) == 1  # the overrides apply to each
    assert main(["doctor", str(good), str(bad), "--format", "json"]) == 2
    assert main(["doctor", "model.seq_length=512", str(good)]) == 2  # files come first
    capsys.readouterr()


def test_a_terminal_gets_the_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import bridgepack.cli._doctor_view as view

    monkeypatch.setattr(view, "stdout_is_terminal", lambda: True)
    assert main(["doctor", "--cp", "2", "--seq-length", "510"]) == 1
    out = capsys.readouterr().out
    assert "┃ id" in out and "model.seq_length=512" in out
