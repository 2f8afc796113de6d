"""The known-defect atlas: every entry fires on its trigger inside its range and stays quiet on the twin
config, outside the range and for the other launcher; unknown versions give a conditional warning."""

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
from seqpack.cli import main
from seqpack.doctor import (
    DEFECTS,
    ON_BOTH,
    ON_BRIDGE,
    ON_MLM,
    DoctorOptions,
    atlas_markdown,
    check,
    find_defects,
    known_versions,
    load_config,
    parse_stack,
    suggest_fixes,
)
from seqpack.doctor._atlas import _message, _ruled_out_by_era, _why
from seqpack.doctor._defect_model import EFFECTS
from seqpack.doctor._versions import BRIDGE, CUDNN, MCORE, TE, Affected, release
from seqpack.env import installed_packages
from seqpack.errors import UsageError

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
BALANCE = "model.moe_router_load_balancing_type"
MIMO = "megatron.bridge.data.megatron_mimo.dataset.MegatronMIMODataset"
EPOCHS = "train.num_epochs=2"


@dataclass
class Case:
    id: str
    fail: list[str]
    ok: list[str]
    inside: str
    outside: str | None  # None: no release is outside (open at both ends)
    launcher: str | None = None


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
    Case("SP207", [*SEQ, "model.cuda_graph_impl=full_iteration", "mixed_precision=bf16_with_mxfp8_mixed",
                   "ddp.fp8_param_gather=true"],
         [*SEQ, "model.cuda_graph_impl=transformer_engine", "mixed_precision=bf16_with_mxfp8_mixed",
          "ddp.fp8_param_gather=true"], "0.4.2", "0.5.0"),
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
    Case("SP225", BASE, [*BASE, *PAD4], "0.2.0", "0.3.0"),
    Case("SP226", [*BASE, MLA], BASE, "0.17.1", "0.18.0"),
    Case("SP227", [*BASE, MLA], BASE, "0.19.2", "0.17.1"),
    Case("SP228", [*BASE, "model.experimental_attention_variant=gated_delta_net"], BASE, "0.17.1", "0.18.0"),
    Case("SP229", [*BASE, MOE, f"{BALANCE}=seq_aux_loss"], [*BASE, MOE, f"{BALANCE}=aux_loss"], "0.19.2",
         None),
    Case("SP230", [*BASE, *PAD4, MOE, "model.moe_expert_capacity_factor=1.0"], [*BASE, *PAD4, MOE], "0.19.2",
         None),
    Case("SP231", [*BASE, *CP2, MTP], [*BASE, MTP], "0.19.2", None),
    Case("SP232", [*BASE, "train.micro_batch_size=2"], BASE, "0.18.2", "0.19.0", launcher="mlm"),
    Case("SP233", [*BASE, SINK], BASE, "2.12", "2.13"),
    Case("SP234", [*BASE, SINK], BASE, "9.17.1", "9.18.0"),
    Case("SP235", [*BASE, *CP4, A2A_P2P, f"{HIER}=[2,2]"], [*BASE, *CP4, A2A], "2.18", None),
    Case("SP236", [*BASE, *CP2, "model.cp_comm_type=all_gather"], [*BASE, *CP2], "2.17.1", "2.18"),
    Case("SP237", [*BASE, *CP2, SWA], [*BASE, *CP2], "2.10", "2.11"),
    Case("SP238", [*BASE, *CP2, SWA], [*BASE, *CP2, SWA, A2A], "2.18", "2.10"),
    Case("SP239", [*BASE, *CP2, FP8_DELAYED, FP8_DPA], [*BASE, *CP2, FP8_DELAYED], "2.12", None),
    Case("SP240", [*BASE, "model.kv_channels=512"], [*BASE, "model.kv_channels=128"], "2.18", None),
    Case("SP241", [*BASE, *CP2, MLA], [*BASE, *CP2, MLA, A2A], "2.18", None),
    Case("SP242", [*BASE, *CP2], BASE, "0.5.1", "0.6.0"),
    Case("SP243", [*BASE, *CP2], [*BASE, *CP2, A2A], "2.17.1", "2.18"),
]  # fmt: skip
BY_ID = {d.id: d for d in DEFECTS}
#: Entries in Megatron-LM's own training loop (``get_batch``), which a Bridge launch never runs.
MLM_LOOP = {"SP202", "SP232"}


def _ids(overrides: list[str], **options: object) -> dict[str, str]:
    """Finding id -> severity of the atlas findings."""
    report = check(load_config(overrides=overrides), DoctorOptions(**options))  # type: ignore[arg-type]
    return {f.id: f.severity for f in report.findings if f.id in BY_ID}


def test_every_defect_has_a_case_and_all_are_sourced() -> None:
    assert [c.id for c in CASES] == [d.id for d in DEFECTS]
    assert len(DEFECTS) >= 40
    for d in DEFECTS:
        assert re.search(r"#\d+", d.source) and d.established and d.text["en"][0] != d.text["zh"][0]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_trigger_version_and_twin(case: Case) -> None:
    defect = BY_ID[case.id]
    inside = {defect.component: case.inside}
    assert defect.affected.covers(case.inside)
    want = "error" if defect.effect == "silent" else "warning"
    assert _ids(case.fail, stack=inside, launcher=case.launcher).get(case.id) == want
    assert case.id not in _ids(case.ok, stack=inside, launcher=case.launcher)
    if case.outside is not None:
        assert not defect.affected.covers(case.outside)
        assert case.id not in _ids(case.fail, stack={defect.component: case.outside}, launcher=case.launcher)
    # No version known: a conditional warning, whatever the effect -- unless the config's own key names rule
    # the defect out (a v0.6-era config never runs on a Bridge release fixed before 0.6.0).
    era = load_config(overrides=case.fail).view.era
    want_unknown = None if _ruled_out_by_era(defect, era) else "warning"
    assert _ids(case.fail, launcher=case.launcher).get(case.id) == want_unknown


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
    doc = (Path(__file__).parents[2] / "docs" / "doctor.md").read_text()
    assert atlas_markdown() in doc


# ---------------------------------------------------------------- packed data decides SP204


def _chat_packs(tmp_path: Path, eos_inside: bool) -> Path:
    """Two packs; with ``eos_inside`` one conversation has EOS (2) between trained turns."""
    turn = [11, 12, 2, 13, 14, 2] if eos_inside else [11, 12, 5, 13, 14, 2]
    rows = [
        make_row([turn, [21, 22, 2]], [[0, 1, 1, 1, 1, 0], [1, 1, 0]]),
        make_row([[31, 32, 33, 2]]),
    ]
    path = write_packs(tmp_path / "training_64.idx.parquet", rows)
    write_metadata(tmp_path / "64_metadata.jsonl", [{**bridge_metadata(rows, 64), "seqpack": {"eos_id": 2}}])
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
        directory / "32_metadata.jsonl", [{**bridge_metadata(rows, 32), "seqpack": {"eos_id": EOS_ID}}]
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
    assert "cudnn" in installed_packages()  # seqpack env reports it (None when not installed)


def _doc_table(doc: str, name: str) -> list[list[str]]:
    """The body rows of the Markdown table between ``<!-- {name}: start -->`` and ``... end -->``."""
    body = doc.split(f"<!-- {name}: start -->")[1].split(f"<!-- {name}: end -->")[0]
    rows = [line for line in body.strip().splitlines() if line.startswith("|")][2:]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def test_docs_survey_and_recall_table_match_the_atlas() -> None:
    """The survey table lists every entry once, with its effect and its upstream number; the recall table's
    counts are those of the survey tables; every silent-wrong-training defect found is in the atlas."""
    doc = (Path(__file__).parents[2] / "docs" / "doctor.md").read_text()
    survey = _doc_table(doc, "survey table")
    assert sorted(row[3] for row in survey) == sorted(d.id for d in DEFECTS)
    for upstream, component, effect, defect_id in survey:
        d = BY_ID[defect_id]
        assert (component, effect) == (d.component, EFFECTS[d.effect]["en"]), defect_id
        number = re.search(r"#(\d+)", upstream)
        assert number is not None and d in find_defects(number.group(0)), defect_id
    not_checkable = _doc_table(doc, "not checkable")
    assert all(len(row) == 4 and row[3] for row in not_checkable)
    recall = {row[0]: row[1:] for row in _doc_table(doc, "recall table")}
    names = {EFFECTS[e]["en"] for e in EFFECTS}
    for effect in names | {"all"}:
        surveyed = [row for row in survey if effect in (row[2], "all")]
        found_other = [row for row in not_checkable if effect in (row[2], "all")]
        in_atlas = [row for row in surveyed if row[3] in BY_ID]
        if not surveyed and not found_other:
            assert effect not in recall
            continue
        share = f"{round(100 * len(in_atlas) / len(surveyed))}%" if surveyed else "0%"
        assert recall[effect] == [str(len(surveyed)), str(len(in_atlas)), share, str(len(found_other))], (
            effect
        )
    surveyed_all, in_atlas_all = int(recall["all"][0]), int(recall["all"][1])
    assert surveyed_all >= 40 and in_atlas_all >= 0.9 * surveyed_all
    silent = recall[EFFECTS["silent"]["en"]]
    assert silent[0] == silent[1]  # every silent-wrong-training defect found is in the atlas


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
