"""The known-defect atlas: every entry fires on its trigger inside its range and stays quiet on the twin
config, outside the range and for the other launcher; unknown versions give a conditional warning. Every
way a config can express a trigger counts (presets vs fields, Bridge keys vs Megatron-LM flags, model
names), and a setting that cannot hit an entry never fires it. All cases run in-process."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _support.packs import bridge_metadata, make_row, random_rows, write_metadata, write_packs
from bridgepack.cli import main
from bridgepack.doctor import (
    DEFECTS,
    ON_BOTH,
    ON_BRIDGE,
    ON_MLM,
    DoctorOptions,
    LoadedConfig,
    atlas_markdown,
    check,
    find_defects,
    known_versions,
    load_config,
    parse_stack,
    stack_summary,
    suggest_fixes,
)
from bridgepack.doctor._atlas import _message, _ruled_out_by_era, _why
from bridgepack.doctor._defect_survey import CITED, NO_RELEASE, SURVEY, survey_markdown
from bridgepack.doctor._versions import BRIDGE, CUDNN, DATACENTRE_GPUS, MCORE, TE, Affected, release
from bridgepack.env import installed_packages
from bridgepack.errors import UsageError
from bridgepack.translate import mlm_to_bridge, split_mlm_args

SEQ = [
    "dataset.seq_length=4096",
    "model.seq_length=4096",
    "train.micro_batch_size=1",
    "train.global_batch_size=8",
]
BASE = [
    *SEQ,
    "dataset.enable_offline_packing=true",
    "dataset.offline_packing_specs.packed_sequence_size=4096",
]
CP2 = ["model.context_parallel_size=2", "model.calculate_per_token_loss=true"]
CHAT = ["dataset.dataset_kwargs.chat=true"]
EOS_ID = 2
PAD4 = ["dataset.offline_packing_specs.pad_seq_to_mult=4"]
PP = "model.pipeline_model_parallel_size"
MOE = "model.num_moe_experts=8"
MTP = "model.mtp_num_layers=1"
IN_BATCH = [*SEQ, "dataset.enable_in_batch_packing=true", "train.micro_batch_size=2"]
VLM = [*IN_BATCH, "model.hf_model_id=Qwen/Qwen3-VL-8B"]
CP4 = ["model.context_parallel_size=4", "model.calculate_per_token_loss=true"]
A2A_P2P = "model.cp_comm_type=a2a+p2p"
HIER = "model.hierarchical_context_parallel_sizes"
MINISTRAL = [*SEQ, "model.hf_model_id=mistralai/Ministral-3-3B-Instruct-2512", *CP2]
MLA = "model.multi_latent_attention=true"
SINK = "model.softmax_type=learnable"
SWA = "model.window_size=[128,0]"
FP8_DELAYED = "mixed_precision=bf16_with_fp8_delayed_scaling_mixed"
FP8_DPA = "model.fp8_dot_product_attention=true"
A2A = "model.cp_comm_type=a2a"
TP = "model.tensor_model_parallel_size"
SP_ON = "model.sequence_parallel=true"
FP8_MODEL = ["model.fp8=hybrid", "model.fp8_recipe=delayed"]
GDN = "model.experimental_attention_variant=gated_delta_net"
HYBRIDEP = ["model.moe_token_dispatcher_type=flex", "model.moe_flex_dispatcher_backend=hybridep"]
MLM_SIZES = "--seq-length 4096 --global-batch-size 8"
TE_SINK_BACKEND = {TE: "2.13"}
BALANCE = "model.moe_router_load_balancing_type"
MIMO = "megatron.bridge.data.megatron_mimo.dataset.MegatronMIMODataset"
EPOCHS = "train.num_epochs=2"
DOC = Path(__file__).parents[2] / "docs" / "doctor.md"


@dataclass
class Case:
    id: str
    fail: list[str]
    ok: list[str]
    inside: str
    outside: str | None  # None: no release is outside (open at both ends)
    launcher: str | None = None
    #: The further versions and GPU the entry needs (``Defect.also``, ``Defect.gpus``), inside their range.
    also: dict[str, str] | None = None
    gpu: str | None = None
    #: Megatron-LM flags added to ``fail`` (and to ``ok`` when ``ok_mlm`` is None).
    mlm: str = ""
    ok_mlm: str | None = None


CASES = [
    Case("SP201", [*BASE, f"{PP}=4"], [*BASE, f"{PP}=2"], "0.4.2", "0.5.0"),
    Case("SP202", [*BASE, f"{PP}=4", "model.tensor_model_parallel_size=2"], [*BASE, f"{PP}=4"],
         "0.17.1", "0.18.0", launcher="mlm"),
    Case("SP203", [*BASE, *CP2, *PAD4], [*BASE, *PAD4], "0.5.0", "0.5.1"),
    Case("SP204", [*BASE, *CHAT, "dataset.dataset_kwargs.chat_loss_mode=full"],
         [*BASE, *CHAT, "dataset.dataset_kwargs.chat_loss_mode=assistant"], "0.6.2", None),
    Case("SP205", [*SEQ, *CHAT], SEQ, "0.3.1", "0.4.0"),
    Case("SP206", [*BASE, *CP2, "dataset.skip_getting_attention_mask_from_dataset=false"], [*BASE, *CP2],
         "0.5.0", "0.5.1"),
    Case("SP207", [*SEQ, "model.cuda_graph_impl=full_iteration", "mixed_precision=bf16_with_mxfp8_mixed"],
         [*SEQ, "model.cuda_graph_impl=transformer_engine", "mixed_precision=bf16_with_mxfp8_mixed"],
         "0.4.2", "0.5.0"),
    Case("SP208", [*BASE, *PAD4, MOE], [*BASE, MOE], "0.6.2", None),
    Case("SP209", [*BASE, *CP2, MTP], [*BASE, MTP], "0.19.2", "0.15.3"),
    Case("SP210", VLM, SEQ, "0.3.1", "0.4.0"),
    Case("SP211", [*BASE, MTP, "model.recompute_granularity=full"],
         [*BASE, MTP, "model.recompute_granularity=selective"], "0.17.1", "0.18.0"),
    Case("SP212", [*BASE, *CP2], [*BASE, *CP2, "model.cp_comm_type=a2a"], "2.17.1", "2.18.0"),
    Case("SP213", [*BASE, *CP2], [*BASE, *CP2, "model.cp_comm_type=a2a"], "2.18.0", "2.17.1"),
    Case("SP214", [*BASE, *CHAT, *PAD4], [*BASE, *CHAT], "0.5.1", "0.6.0"),
    Case("SP215", [*VLM, *CP2], VLM, "0.6.2", "0.3.1"),
    Case("SP216", [*SEQ, *CP2, A2A_P2P], [*SEQ, *CP2, A2A_P2P, f"{HIER}=[2,1]"], "0.3.1", "0.4.0"),
    Case("SP217", [*BASE, *CP2], BASE, "0.2.0", "0.3.0"),
    Case("SP218", BASE, [*BASE, "train.eval_iters=0"], "0.2.0", "0.3.0"),
    Case("SP219", [*SEQ, f"dataset._target_={MIMO}"], SEQ, "0.5.1", "0.6.0"),
    Case("SP220", [*SEQ, EPOCHS, "dataset.max_train_samples=1000"], [*SEQ, EPOCHS], "0.5.1", "0.6.0"),
    Case("SP221", [*IN_BATCH, "model.hf_model_id=nvidia/Nemotron-3-Nano-Omni"], VLM, "0.6.2", "0.4.2"),
    Case("SP222", [*VLM, *CP2, f"{TP}=4", SP_ON], [*VLM, *CP2, f"{TP}=2", SP_ON], "0.3.1", "0.4.0"),
    Case("SP223", [*MINISTRAL, f"{TP}=2", SP_ON], [*MINISTRAL, f"{TP}=2"], "0.3.1", "0.4.0"),
    Case("SP224", [*VLM, f"{PP}=2"], VLM, "0.3.1", "0.4.0"),
    Case("SP226", [*BASE, MLA], BASE, "0.17.1", "0.18.0"),
    Case("SP227", [*BASE, MLA], BASE, "0.19.2", "0.17.1"),
    Case("SP228", [*BASE, GDN], BASE, "0.17.1", "0.18.0"),
    Case("SP229", [*BASE, MOE, f"{BALANCE}=seq_aux_loss"], [*BASE, MOE, f"{BALANCE}=aux_loss"], "0.19.2",
         None),
    Case("SP230", [*BASE, *PAD4, MOE, "model.moe_expert_capacity_factor=1.0"], [*BASE, *PAD4, MOE], "0.19.2",
         None),
    Case("SP231", [*BASE, *CP2, MTP], [*BASE, MTP], "0.19.2", None),
    Case("SP232", [], [], "0.18.2", "0.19.0", launcher="mlm",
         mlm=f"--sft {MLM_SIZES} --micro-batch-size 2", ok_mlm=f"--sft {MLM_SIZES}"),
    Case("SP233", [*BASE, SINK], BASE, "2.12", "2.13"),
    Case("SP234", [*BASE, SINK], BASE, "9.17.1", "9.18.0", also=TE_SINK_BACKEND),
    Case("SP235", [*BASE, *CP4, A2A_P2P, f"{HIER}=[2,2]"], [*BASE, *CP4, A2A], "2.18", None),
    Case("SP236", [*BASE, *CP2, "model.cp_comm_type=all_gather"], [*BASE, *CP2], "2.17.1", "2.18"),
    Case("SP237", [*BASE, *CP2, SWA], [*BASE, *CP2], "2.10", "2.11"),
    Case("SP238", [*BASE, *CP2, SWA], [*BASE, *CP2, SWA, A2A], "2.18", "2.10"),
    Case("SP239", [*BASE, *CP2, *FP8_MODEL, FP8_DPA], [*BASE, *CP2, *FP8_MODEL], "2.12", None),
    Case("SP240", [*BASE, "model.kv_channels=512"], [*BASE, "model.kv_channels=128"], "2.18", None),
    Case("SP241", [*BASE, *CP2, MLA], [*BASE, *CP2, MLA, A2A], "2.18", None),
    Case("SP242", [*BASE, *CP2], BASE, "0.5.1", "0.6.0"),
    Case("SP243", [*BASE, *CP2], [*BASE, *CP2, A2A], "2.17.1", "2.18", also={CUDNN: "9.17.1"}, gpu="hopper"),
    Case("SP244", [*BASE, SINK, "model.kv_channels=192"], [*BASE, SINK, "model.kv_channels=128"], "9.25.1",
         "9.26.0", also=TE_SINK_BACKEND),
    Case("SP245", [*BASE, *CP2, *FP8_MODEL, FP8_DPA], [*BASE, *CP2, *FP8_MODEL], "2.18", None),
    Case("SP246", [*SEQ, GDN, *CP2], [*SEQ, GDN], "0.17.1", "0.18.0"),
    Case("SP247", [*SEQ, GDN, *CP2, "model.cp_comm_type=p2p"], [*SEQ, GDN, *CP2], "0.18.2", "0.19.0"),
    Case("SP248", [*BASE, MLA], BASE, "0.12.0", "0.13.0"),
    Case("SP249", [*VLM, "model.apply_rope_fusion=true"], VLM, "0.3.1", "0.4.0"),
    Case("SP250", [*BASE, "model.position_embedding_type=mrope"],
         [*BASE, "model.position_embedding_type=mrope", "model.apply_rope_fusion=true"], "0.14.0", "0.15.0"),
    Case("SP251", [*BASE, MOE, *HYBRIDEP],
         [*BASE, MOE, *HYBRIDEP, "model.moe_hybridep_pad_uneven_dispatch_inputs=true"], "0.19.2", None),
    Case("SP252", [], [], "0.19.2", "0.18.2", launcher="mlm",
         mlm=f"--dataloader-inter-document-masking --context-parallel-size 2 {MLM_SIZES}",
         ok_mlm=f"--dataloader-inter-document-masking --sft --context-parallel-size 2 {MLM_SIZES}"),
    Case("SP253", [*BASE, *CP2, f"{PP}=4"], [*BASE, *CP2], "0.5.0", "0.4.2"),
    Case("SP254", [*BASE, "model.hybrid_override_pattern=M*M*"], BASE, "0.15.3", "0.16.0"),
    Case("SP255", [*IN_BATCH, f"{PP}=4"], [*IN_BATCH, f"{PP}=4", "model.batch_p2p_comm=false"], "0.19.2",
         None),
    Case("SP256", [*SEQ, *CP2, SINK], [*SEQ, *CP2, SINK, A2A], "2.18", None),
    Case("SP257", [], [], "0.19.2", None, launcher="mlm", mlm=f"--sft --context-parallel-size 2 {MLM_SIZES}",
         ok_mlm=f"--sft --context-parallel-size 2 --calculate-per-token-loss {MLM_SIZES}"),
    Case("SP258", [*SEQ, *CP2, MTP], [*SEQ, MTP], "0.19.2", None),
    Case("SP259", BASE, SEQ, "2.17.1", "2.18", gpu="blackwell-rtx"),
]  # fmt: skip
BY_ID = {d.id: d for d in DEFECTS}
#: Entries in Megatron-LM's own training loop (``get_batch``), which a Bridge launch never runs, and SP257,
#: which Bridge's validation keeps fine-tuning away from (CP requires calculate_per_token_loss there).
MLM_LOOP = {"SP202", "SP232", "SP252", "SP257"}


def _loaded(overrides: list[str], mlm: str = "") -> LoadedConfig:
    """A config from overrides and Megatron-LM flags, loaded as ``bridgepack doctor`` loads them."""
    return load_config(overrides=overrides, mlm=mlm_to_bridge(split_mlm_args(mlm)) if mlm else None)


def _ids(overrides: list[str], mlm: str = "", **options: object) -> dict[str, str]:
    """Finding id -> severity of the atlas findings."""
    report = check(_loaded(overrides, mlm), DoctorOptions(**options))  # type: ignore[arg-type]
    return {f.id: f.severity for f in report.findings if f.id in BY_ID}


def test_every_defect_has_a_case_and_all_are_sourced() -> None:
    assert [c.id for c in CASES] == [d.id for d in DEFECTS]
    assert len(DEFECTS) >= 40
    for d in DEFECTS:
        assert re.search(r"#\d+", d.source) and d.established and d.text["en"][0] != d.text["zh"][0]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_trigger_version_and_twin(case: Case) -> None:
    """Inside its range the entry fires on ``fail`` (an error for silent wrong training when every version it
    needs is known), never on the twin ``ok``, never outside its range; with nothing known, a warning."""
    defect = BY_ID[case.id]
    needs = {**(case.also or {}), defect.component: case.inside}
    ok_mlm = case.mlm if case.ok_mlm is None else case.ok_mlm
    assert defect.affected.covers(case.inside)
    want = "error" if defect.effect == "silent" else "warning"
    known = {"launcher": case.launcher, "gpu": case.gpu}
    assert _ids(case.fail, case.mlm, stack=needs, **known).get(case.id) == want
    assert case.id not in _ids(case.ok, ok_mlm, stack=needs, **known)
    if case.outside is not None:
        assert not defect.affected.covers(case.outside)
        outside = {**needs, defect.component: case.outside}
        assert case.id not in _ids(case.fail, case.mlm, stack=outside, **known)
    # No version known: a conditional warning, whatever the effect -- unless the config's own key names rule
    # the defect out (a v0.6-era config never runs on a Bridge release fixed before 0.6.0).
    # A workstation-only entry needs its GPU named (an unknown GPU is taken for a data-centre part).
    era = _loaded(case.fail, case.mlm).view.era
    want_unknown = None if _ruled_out_by_era(defect, era) else "warning"
    gpu = case.gpu if defect.gpus and not defect.gpus & DATACENTRE_GPUS else None
    assert _ids(case.fail, case.mlm, launcher=case.launcher, gpu=gpu).get(case.id) == want_unknown


def test_unknown_version_says_which_release_fixes_it() -> None:
    assert _message(BY_ID["SP201"], None, "en").endswith("if your megatron-bridge is older than 0.5.0")
    assert "0.5.0" in _why(BY_ID["SP201"], "en") and BY_ID["SP201"].workaround == (f"{PP}=2",)
    (g,) = [f for f in check(load_config(overrides=CASES[3].fail)).findings if f.id == "SP204"]
    assert g.message.endswith("no megatron-bridge release is known to fix it")


def test_a_v06_config_rules_out_bridge_defects_fixed_before_0_6() -> None:
    """SP201 (fixed in 0.5.0) cannot hit a config written with 0.6's key names, whatever is installed; the
    same config on a named 0.4.2 is still an error."""
    loaded = load_config(overrides=CASES[0].fail)
    assert loaded.view.era == "v0.6"
    assert "SP201" not in _ids(CASES[0].fail)
    assert _ids(CASES[0].fail, stack={BRIDGE: "0.4.2"}).get("SP201") == "error"
    assert not _ruled_out_by_era(BY_ID["SP201"], "neutral") and not _ruled_out_by_era(BY_ID["SP204"], "v0.6")


def test_launcher_selects_the_defects_of_the_code_that_runs() -> None:
    pp4_tp2 = CASES[1].fail
    assert "SP202" not in _ids(pp4_tp2, launcher="bridge", stack={MCORE: "0.17.1"})
    on_mlm = _ids(pp4_tp2, launcher="mlm", stack={BRIDGE: "0.4.2", MCORE: "0.17.1"})
    assert "SP202" in on_mlm and "SP201" not in on_mlm  # Bridge's step is not in a Megatron-LM launch
    assert _ids(CASES[0].fail, launcher="bridge", stack={BRIDGE: "0.4.2"}).get("SP201") == "error"
    # One field says it for every entry: Bridge's code runs only under Bridge, Megatron-LM's training loop
    # (SP202) only under Megatron-LM, Megatron-Core and Transformer Engine under both.
    for d in DEFECTS:
        want = ON_BRIDGE if d.component == BRIDGE else ON_MLM if d.id in MLM_LOOP else ON_BOTH
        assert d.launchers == want, d.id
    with pytest.raises(UsageError, match=r"launcher must be 'bridge', 'mlm' or None, got 'hf'"):
        DoctorOptions(launcher="hf")


def test_allow_and_fix_leave_defects_to_the_user() -> None:
    loaded = load_config(overrides=CASES[0].fail)
    report = check(loaded, DoctorOptions(stack={BRIDGE: "0.4.2"}, allow=["SP201"]))
    assert not report.has_error and [f.allowed for f in report.findings if f.id == "SP201"] == [True]
    assert check(loaded, DoctorOptions(stack={BRIDGE: "0.4.2"})).has_error
    assert suggest_fixes(loaded, DoctorOptions(stack={BRIDGE: "0.4.2"})) == []


def test_messages_in_chinese() -> None:
    (f,) = [
        f
        for f in check(
            load_config(overrides=CASES[0].fail), DoctorOptions(stack={BRIDGE: "0.4.2"}, lang="zh")
        ).findings
        if f.id == "SP201"
    ]
    assert (
        f.message.endswith("megatron-bridge 0.4.2 受影响（< 0.5.0）")
        and "升级 megatron-bridge 至 0.5.0" in f.why
    )


@pytest.mark.parametrize(
    ("affected", "inside", "outside"),
    [
        (Affected("0.3.0", "0.5.1"), ["0.3.0", "0.5.0", "0.5.0rc2", "0.4.2+cu12"], ["0.2.9", "0.5.1", "1.0"]),
        (Affected(None, "0.18"), ["0.1.0", "0.17.99"], ["0.18.0", "0.18.0rc1"]),
        (Affected("2.18", None), ["2.18.0", "2.20.2", "3"], ["2.17.1"]),
    ],
)
def test_ranges_are_half_open(affected: Affected, inside: list[str], outside: list[str]) -> None:
    assert all(affected.covers(v) for v in inside)
    assert not any(affected.covers(v) for v in outside)


def test_release_and_stack_parsing() -> None:
    assert release("2.18.0") == release("2.18") == (2, 18) and release("v0.16.1rc2+cu12") == (0, 16, 1)
    assert release("main") is None
    stack = ["megatron_bridge==0.6.2, megatron-core==0.19.2", "transformer-engine==2.18.0+cu12"]
    assert parse_stack(stack) == {
        BRIDGE: "0.6.2",
        MCORE: "0.19.2",
        TE: "2.18.0+cu12",
    }
    for bad in ("torch==2.5", "megatron-bridge", "megatron-bridge==next", "transformer-engine==2.x"):
        with pytest.raises(UsageError, match=r"^stack "):
            parse_stack([bad])


def test_docs_list_the_atlas() -> None:
    assert atlas_markdown() in DOC.read_text()


# ---------------------------------------------------------------- packed data decides SP204


def _chat_packs(tmp_path: Path, eos_inside: bool) -> Path:
    """Two packs; with ``eos_inside`` one conversation has EOS (2) between trained turns."""
    turn = [11, 12, 2, 13, 14, 2] if eos_inside else [11, 12, 5, 13, 14, 2]
    rows = [
        make_row([turn, [21, 22, 2]], [[0, 1, 1, 1, 1, 0], [1, 1, 0]]),
        make_row([[31, 32, 33, 2]]),
    ]
    path = write_packs(tmp_path / "training_64.idx.parquet", rows)
    write_metadata(
        tmp_path / "64_metadata.jsonl", [{**bridge_metadata(rows, 64), "bridgepack": {"eos_id": 2}}]
    )
    return path


@pytest.mark.parametrize("eos_inside", [True, False])
def test_eos_inside_trained_spans_is_read_from_the_packs(tmp_path: Path, eos_inside: bool) -> None:
    packed = _chat_packs(tmp_path, eos_inside)
    overrides = [
        *BASE,
        *CHAT,
        "dataset.offline_packing_specs.packed_sequence_size=64",
        "dataset.seq_length=64",
    ]
    overrides += ["model.seq_length=64"]
    report = check(
        load_config(overrides=overrides), DoctorOptions(packed=str(packed), stack={BRIDGE: "0.6.2"})
    )
    found = [f for f in report.findings if f.id == "SP204"]
    if eos_inside:
        (f,) = found
        assert f.severity == "error" and f.message.endswith(f"[1 x EOS id 2; {packed} row 0, token 2]")
    else:
        assert found == []  # assistant-mode chat whose trained spans hold no EOS: not affected


def test_cli_stack_json_and_allow(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["doctor", "--pp", "4", "--pack-size", "4096", "--seq-length", "4096", "--mbs", "1", "--gbs", "8"]
    assert main([*argv, "--stack", "megatron-bridge==0.4.2", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 2 and [f["id"] for f in doc["findings"]] == ["SP201"]
    assert doc["findings"][0]["upstream"] == "NVIDIA-NeMo/Megatron-Bridge#2952 (fix: PR #3926)"
    assert main([*argv, "--stack", "megatron-bridge==0.5.0"]) == 0
    assert main([*argv, "--stack", "megatron-bridge==0.4.2", "--allow", "SP201"]) == 0
    assert main([*argv, "--stack", "megatron-bridge=0.4.2"]) == 2
    capsys.readouterr()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), group=st.sampled_from([1, 3, 500]))
def test_eos_scan_matches_a_per_sequence_loop(
    tmp_path_factory: pytest.TempPathFactory, seed: int, group: int
) -> None:
    """The vectorised scan (row groups, list offsets, seq_start_id) counts what a plain loop over every
    sequence counts: inputs equal to EOS with their loss on, the sequence's last token excluded; SP204's
    message gives that count and the first such token."""
    rng = np.random.default_rng(seed)
    rows = random_rows(rng, 12, 32)
    for row in rows:  # put EOS inside some sequences; loss anywhere, last tokens included
        ids = row["input_ids"]
        row["loss_mask"] = rng.integers(0, 2, size=len(ids)).tolist()
        for j in rng.choice(len(ids), size=min(3, len(ids)), replace=False):
            ids[int(j)] = EOS_ID
    directory = tmp_path_factory.mktemp("scan")
    path = write_packs(directory / "training_32.idx.parquet", rows, row_group_size=group)
    write_metadata(
        directory / "32_metadata.jsonl", [{**bridge_metadata(rows, 32), "bridgepack": {"eos_id": EOS_ID}}]
    )
    hits = []
    for r, row in enumerate(rows):
        ends = [*row["seq_start_id"][1:], len(row["input_ids"])]
        for start, end in zip(row["seq_start_id"], ends, strict=True):
            hits += [
                (r, j)
                for j in range(start, end - 1)
                if row["input_ids"][j] == EOS_ID and row["loss_mask"][j] == 1
            ]
    overrides = [*BASE, *CHAT, "dataset.offline_packing_specs.packed_sequence_size=32"]
    report = check(load_config(overrides=overrides), DoctorOptions(packed=str(path)))
    found = [f.message for f in report.findings if f.id == "SP204"]
    if hits:
        (r, j) = min(hits)
        assert len(found) == 1 and found[0].endswith(
            f"[{len(hits)} x EOS id {EOS_ID}; {path} row {r}, token {j}]"
        )
    else:
        assert found == []  # chat data but no EOS inside a trained span: the packs decide, not affected


def test_cli_launcher_from_the_inputs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Megatron-LM flags alone: Megatron-LM's get_batch defect, not Bridge's; a Bridge YAML: the reverse."""
    stack = ["--stack", "megatron-core==0.17.1,megatron-bridge==0.4.2", "--format", "json"]
    sizes = ["--pack-size", "4096", "--seq-length", "4096", "--mbs", "1", "--gbs", "8"]
    mlm = ["--mlm-args", "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4"]
    main(["doctor", *mlm, *sizes, *stack])
    assert [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["SP202"]
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("model:\n  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 4\n")
    main(["doctor", str(cfg), *sizes, *stack])
    assert [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["SP201"]


def test_an_entry_is_found_by_its_upstream_number() -> None:
    """A reader with a tracker thread in hand finds the entry (or learns there is none)."""
    assert [d.id for d in find_defects("#2952")] == ["SP201"]
    assert [d.id for d in find_defects("NVIDIA/TransformerEngine#3487")] == ["SP213"]
    assert [d.id for d in find_defects("PR #4489")] == ["SP203"]
    assert find_defects("#29") == [] and find_defects("no number") == []


def test_a_further_release_the_defect_needs_is_read_or_named() -> None:
    """SP233/SP234 (attention sinks + THD): Transformer Engine before 2.13 has no backend; from 2.13 cuDNN
    decides (9.18). The cuDNN version comes from the installed stack or ``--stack``; unknown, it is named."""
    sink = [*BASE, SINK]
    assert set(_ids(sink, stack={TE: "2.12", CUDNN: "9.17.1"})) & {"SP233", "SP234"} == {"SP233"}
    assert set(_ids(sink, stack={TE: "2.13", CUDNN: "9.17.1"})) & {"SP233", "SP234"} == {"SP234"}
    assert not set(_ids(sink, stack={TE: "2.13", CUDNN: "9.18.0"})) & {"SP233", "SP234"}
    report = check(load_config(overrides=sink), DoctorOptions(stack={CUDNN: "9.17.1"}))
    (f,) = [f for f in report.findings if f.id == "SP234"]
    assert f.severity == "warning" and f.message.endswith(
        "cudnn 9.17.1 is affected (< 9.18); only with transformer-engine >= 2.13, no fixed release "
        "(your transformer-engine version is unknown)"
    )
    assert parse_stack(["cudnn==9.17.1"]) == {CUDNN: "9.17.1"}
    installed = {"cudnn": "9.18.0.77", "torch": "2.9.0", "megatron-core": None}
    assert known_versions(installed) == {CUDNN: "9.18.0.77"}
    assert "cudnn" in installed_packages()  # bridgepack env reports it (None when not installed)


def test_docs_carry_the_survey_generated_from_the_code() -> None:
    body = DOC.read_text().split("<!-- survey table: start -->\n")[1].split("<!-- survey table: end -->")[0]
    assert body == survey_markdown()


def test_every_entry_comes_from_the_survey_and_cites_it() -> None:
    """The survey lists every atlas entry; a cited row's entries name its issue or PR (so the doctor's
    finding cites the defect found); a row with no release is cited by no entry; the doctor cites at least
    95% of the config-checkable rows, of at least 40 surveyed."""
    cited = [row for row in SURVEY if row.status == CITED]
    assert {i for row in cited for i in row.cited} == set(BY_ID)
    for row in cited:
        assert row.cited and all(d in find_defects(f"#{row.ref.number}") for d in row.entries()), row.ref
    for row in SURVEY:
        if row.status == NO_RELEASE:
            assert find_defects(f"#{row.ref.number}") == [], row.ref
        else:
            assert row.status == CITED or row.why, row.ref
    checkable = [row for row in SURVEY if row.status == CITED]
    assert len(SURVEY) >= 40 and sum(1 for r in checkable if r.cited) >= 0.95 * len(checkable)


#: The defects issue #41 named: each is cited by the doctor, or shown to be in no release (the wheel test).
ISSUE_41 = (
    ("NVIDIA/TransformerEngine", 3249),
    ("NVIDIA/TransformerEngine", 923),
    ("NVIDIA/Megatron-LM", 3883),
    ("NVIDIA/Megatron-LM", 1398),
    ("NVIDIA-NeMo/Megatron-Bridge", 1776),
    ("NVIDIA-NeMo/Megatron-Bridge", 2246),
    ("NVIDIA/Megatron-LM", 5243),
    ("NVIDIA/Megatron-LM", 5008),
    ("NVIDIA/Megatron-LM", 6912),
    ("NVIDIA-NeMo/Megatron-Bridge", 4228),
    ("NVIDIA/Megatron-LM", 2913),
    ("NVIDIA/Megatron-LM", 5454),
    ("NVIDIA/Megatron-LM", 5696),
    ("NVIDIA/Megatron-LM", 5100),
)


def test_the_defects_issue_41_named_are_each_cited_or_in_no_release() -> None:
    rows = {(row.ref.repo, row.ref.number): row for row in SURVEY}
    statuses = {ref: rows[ref].status for ref in ISSUE_41}
    no_release = {ref for ref, status in statuses.items() if status == NO_RELEASE}
    assert no_release == {("NVIDIA-NeMo/Megatron-Bridge", 2246), ("NVIDIA/Megatron-LM", 5696)}
    assert all(status == CITED for ref, status in statuses.items() if ref not in no_release)


# ---------------------------------------------------------------- findings only where they can apply


#: Configs that walk into no entry: unpacked, CP 1, no MoE / MTP / FP8 / sinks, on any launcher.
QUIET = [
    (SEQ, ""),
    ([*SEQ, "model.tensor_model_parallel_size=4", SP_ON, f"{PP}=4"], ""),
    ([*SEQ, *CP2], ""),
    ([], f"{MLM_SIZES} --context-parallel-size 2 --calculate-per-token-loss"),
]


@pytest.mark.parametrize(("overrides", "mlm"), QUIET)
@pytest.mark.parametrize("launcher", [None, "bridge", "mlm"])
def test_quiet_on_configs_no_entry_can_hit(overrides: list[str], mlm: str, launcher: str | None) -> None:
    for stack in ({}, {BRIDGE: "0.3.0", MCORE: "0.16.1", TE: "2.10", CUDNN: "9.10"}):
        assert _ids(overrides, mlm, stack=stack, launcher=launcher) == {}


def test_bridge_in_batch_packing_given_as_flags_has_a_clean_exit() -> None:
    """``--in-batch-packing --mbs 4``: Megatron-LM's micro-batch defect (SP232) never fires on Bridge's
    in-batch packing, so the rule's MBS > 1 (SP006) and the atlas agree; Megatron-LM's ``--sft`` with MBS 2
    does fire it."""
    options = {"in_batch_packing": True, "mbs": 4, "gbs": 8, "seq_length": 4096}
    for stack in ({}, {MCORE: "0.16.1"}):
        report = check(load_config(options=options), DoctorOptions(stack=stack))
        assert not report.has_error and "SP232" not in [f.id for f in report.findings]
    one = check(load_config(options={**options, "mbs": 1}), DoctorOptions(stack={MCORE: "0.16.1"}))
    assert [f.id for f in one.findings if f.severity == "error"] == ["SP006"]
    mlm = f"--sft {MLM_SIZES} --micro-batch-size 2"
    assert _ids([], mlm, stack={MCORE: "0.18.2"}, launcher="mlm") == {"SP232": "error"}


def test_sp243_needs_cudnn_before_9_18_on_hopper() -> None:
    """TE#2186: cuDNN's backward on Hopper, fixed in cuDNN 9.18 (or avoided by TE 2.18); Blackwell is not
    affected. Unknown cuDNN or GPU: a warning that names them."""
    cfg, te = [*BASE, *CP2], {TE: "2.17.1"}
    assert _ids(cfg, stack={**te, CUDNN: "9.17.1"}, gpu="hopper")["SP243"] == "error"
    assert "SP243" not in _ids(cfg, stack={**te, CUDNN: "9.18.0"}, gpu="hopper")
    assert "SP243" not in _ids(cfg, stack={**te, CUDNN: "9.17.1"}, gpu="blackwell")
    report = check(load_config(overrides=cfg), DoctorOptions(stack=te))
    (f,) = [f for f in report.findings if f.id == "SP243"]
    assert f.severity == "warning" and f.message.endswith(
        "transformer-engine 2.17.1 is affected (< 2.18); only with cudnn < 9.18 (your cudnn version is "
        "unknown); only on Hopper (sm_90) GPUs (your GPU architecture is unknown: --gpu)"
    )
    with pytest.raises(UsageError, match=r"^gpu 'h100': expected one of ampere, ada, hopper"):
        DoctorOptions(gpu="h100")


def test_a_defect_no_release_carries_is_gone() -> None:
    """Bridge PR #2039's slowdown (SP225): its regression (#1867) and fix are both first in 0.3.0."""
    assert "SP225" not in BY_ID and find_defects("#2039") == []
    assert _ids([*BASE, "train.eval_iters=0"], stack={BRIDGE: "0.2.2"}) == {}


#: Every way a config can turn a trigger on (Bridge keys, presets, mappings, Megatron-LM flags, model names)
#: and settings that look close but cannot hit it.
EXPRESSIONS = [
    # FP8 attention on padded packs (SP239): fields, a mixed-precision mapping, Megatron-LM flags.
    ("SP239", [*BASE, *CP2, *FP8_MODEL, FP8_DPA], "", True),
    ("SP239", [*BASE, *CP2, "+mixed_precision.fp8=hybrid", "+mixed_precision.fp8_recipe=blockwise",
               "+mixed_precision.fp8_dot_product_attention=true"], "", True),
    ("SP239", [*BASE, *CP2], "--fp8-format hybrid --fp8-dot-product-attention", True),
    ("SP239", [*BASE, *CP2], "--bf16 --fp8-format hybrid --fp8-dot-product-attention", True),
    ("SP239", [*BASE, *CP2], "--bf16 --fp8-format hybrid", False),
    # A preset overwrites the model's FP8 fields (Bridge's MixedPrecisionConfig.setup): no FP8 attention.
    ("SP239", [*BASE, *CP2, "mixed_precision=bf16_with_fp8_delayed_scaling_mixed", FP8_DPA], "", False),
    ("SP239", [*BASE, *CP2, "mixed_precision=bf16_mixed", *FP8_MODEL, FP8_DPA], "", False),
    ("SP239", [*BASE, *CP2, "model.fp8=hybrid", "model.fp8_recipe=tensorwise", FP8_DPA], "", False),
    # MXFP8 with a full-iteration graph (SP207): the preset gathers parameters in FP8 itself.
    ("SP207", [*SEQ, "model.cuda_graph_impl=full_iteration", "mixed_precision=bf16_with_mxfp8_mixed"], "",
     True),
    ("SP207", [*SEQ, "model.cuda_graph_impl=full_iteration", "model.fp8=e4m3", "model.fp8_recipe=mxfp8",
               "ddp.fp8_param_gather=true"], "", True),
    ("SP207", [*SEQ, "model.cuda_graph_impl=full_iteration",
               "mixed_precision=bf16_with_fp8_subchannel_scaling_mixed"], "", False),
    # Packing given as Megatron-LM flags reaches Megatron-Core and Transformer Engine entries.
    ("SP212", [], f"--sft --context-parallel-size 2 {MLM_SIZES}", True),
    ("SP212", [], f"--dataloader-inter-document-masking --context-parallel-size 2 {MLM_SIZES}", True),
    ("SP212", [], f"--context-parallel-size 2 {MLM_SIZES}", False),
    # Attention sinks as a model family (GPT-OSS), a field, a flag; a vanilla softmax does not count.
    ("SP233", [*BASE, "model.hf_model_id=openai/gpt-oss-20b"], "", True),
    ("SP233", BASE, "--softmax-type off-by-one", True),
    ("SP233", [*BASE, "model.hf_model_id=openai/gpt-oss-20b", "model.softmax_type=vanilla"], "", False),
    # MLA as a field, a flag or a model family; GDN as a field, a flag or a family.
    ("SP226", BASE, "--multi-latent-attention", True),
    ("SP226", [*BASE, "model.hf_model_id=deepseek-ai/DeepSeek-V3"], "", True),
    ("SP228", BASE, "--experimental-attention-variant gated_delta_net", True),
    ("SP228", [*BASE, "model.hf_model_id=Qwen/Qwen3-Next-80B-A3B-Instruct"], "", True),
    # Mamba hybrids as a layer pattern (field or flag) or a family.
    ("SP254", BASE, "--hybrid-override-pattern M*M*", True),
    ("SP254", [*BASE, "model.hf_model_id=nvidia/NVIDIA-Nemotron-H-8B-Base-8K"], "", True),
    # HybridEP as flags; DeepEP (the flex default) is not HybridEP; fixed-width packs are even.
    ("SP251", [*BASE, MOE], "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep", True),
    ("SP251", [*BASE, MOE, "model.moe_token_dispatcher_type=flex"], "", False),
    ("SP251", [*BASE, MOE, *HYBRIDEP, "dataset.dataset_kwargs.pad_to_max_length=true"], "", False),
    # MRoPE from a Qwen-VL family with RoPE unfused; Megatron-LM fuses RoPE unless --no-rope-fusion.
    ("SP250", [*BASE, "model.hf_model_id=Qwen/Qwen2.5-VL-7B-Instruct"], "", True),
]  # fmt: skip
_VERSION_INSIDE = {c.id: c.inside for c in CASES}


@pytest.mark.parametrize(("defect_id", "overrides", "mlm", "fires"), EXPRESSIONS)
def test_every_way_a_config_expresses_a_trigger_counts(
    defect_id: str, overrides: list[str], mlm: str, fires: bool
) -> None:
    defect = BY_ID[defect_id]
    stack = {defect.component: _VERSION_INSIDE[defect_id], **{c: a.first or "99" for c, a in defect.also}}
    launcher = "mlm" if mlm and not overrides else None
    assert (defect_id in _ids(overrides, mlm, stack=stack, launcher=launcher)) == fires


def test_megatron_lm_fuses_rope_by_default() -> None:
    """SP250 reads RoPE fusion as the launcher resolves it: Megatron-LM fuses unless ``--no-rope-fusion``."""
    mlm = f"--sft --position-embedding-type mrope {MLM_SIZES}"
    assert "SP250" not in _ids([], mlm, stack={MCORE: "0.14.0"}, launcher="mlm")
    assert "SP250" in _ids([], f"{mlm} --no-rope-fusion", stack={MCORE: "0.14.0"}, launcher="mlm")


def test_reports_name_the_versions_they_assumed() -> None:
    """Given (``--stack``) wins over installed; the rest is unknown; the GPU likewise (``--gpu``)."""
    report = check(
        load_config(overrides=SEQ),
        DoctorOptions(stack={BRIDGE: "0.6.2"}, installed={BRIDGE: "0.5.0", MCORE: "0.16.1"}, gpu="Hopper"),
    )
    assert [row.to_dict() for row in report.stack] == [
        {"component": BRIDGE, "version": "0.6.2", "source": "--stack"},
        {"component": MCORE, "version": "0.16.1", "source": "installed"},
        {"component": TE, "version": None, "source": "unknown"},
        {"component": CUDNN, "version": None, "source": "unknown"},
        {"component": "gpu", "version": "hopper", "source": "--gpu"},
    ]
    assert report.to_dict()["stack"][1] == {"component": MCORE, "version": "0.16.1", "source": "installed"}
    assert stack_summary(report.stack) == (
        "megatron-bridge 0.6.2 (--stack), megatron-core 0.16.1 (installed), transformer-engine unknown, "
        "cudnn unknown, gpu hopper (--gpu)"
    )
    # An installed version decides like a given one: SP232 on the installed megatron-core.
    mlm = f"--sft {MLM_SIZES} --micro-batch-size 2"
    on_installed = check(_loaded([], mlm), DoctorOptions(installed={MCORE: "0.17.1"}, launcher="mlm"))
    assert [(f.id, f.severity) for f in on_installed.findings] == [("SP232", "error")]


def test_cli_reports_the_stack_in_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "doctor",
        "--cp",
        "2",
        "--seq-length",
        "512",
        "--stack",
        "megatron-core==0.19.2",
        "--gpu",
        "hopper",
    ]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("stack: ") and "megatron-core 0.19.2 (--stack)" in lines[1]
    assert lines[1].endswith("gpu hopper (--gpu)")
    assert main([*argv, "--format", "json"]) == 0
    rows = {row["component"]: row for row in json.loads(capsys.readouterr().out)["stack"]}
    assert rows[MCORE] == {"component": MCORE, "version": "0.19.2", "source": "--stack"}
    assert main([*argv[:-1], "a100"]) == 2
    assert capsys.readouterr().err.startswith("error: --gpu 'a100': expected one of ")


def test_cli_takes_cudnn_in_the_stack(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``--stack cudnn==...`` decides SP234 from the command line, like the other components."""
    cfg = tmp_path / "sink.yaml"
    cfg.write_text(
        "model:\n  softmax_type: learnable\n"
        "dataset:\n  enable_offline_packing: true\n  offline_packing_specs:\n    packed_sequence_size: 4096\n"
    )
    sizes = ["--seq-length", "4096", "--mbs", "1", "--gbs", "8", "--format", "json"]
    main(["doctor", str(cfg), *sizes, "--stack", "transformer-engine==2.13,cudnn==9.17.1"])
    ids = [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert "SP234" in ids and "SP233" not in ids
    main(["doctor", str(cfg), *sizes, "--stack", "transformer-engine==2.13,cudnn==9.18.0"])
    assert "SP234" not in [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert main(["doctor", str(cfg), *sizes, "--stack", "cudnn=9.18"]) == 2
    capsys.readouterr()
