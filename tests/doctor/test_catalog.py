"""The rule catalog: a rule carries its messages, fix and group where it is defined, registration refuses
what is wrong with it, every example fires its rule, every fix quiets its rule (#42 item 2, #39 item 4)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _support import doctor_tables
from bridgepack.doctor import (
    CATALOG,
    DEFECTS,
    RULES,
    DoctorOptions,
    Example,
    LoadedConfig,
    apply_overrides,
    catalog_entry,
    check,
    load_config,
    rules_markdown,
    suggest_fixes,
)
from bridgepack.doctor._catalog import defect_links, shown_template
from bridgepack.doctor._findings import ERROR, RAISES, Hit
from bridgepack.doctor._registry import RuleDefinitionError, make_rule, returned_params, rule
from bridgepack.errors import UsageError
from doctor.test_packed import write_packs

DOCS = Path(__file__).parents[2] / "docs" / "doctor.md"
SPECS = "dataset.offline_packing_specs"
#: The atlas's releases are named so that its findings do not change between machines.
STACK = {"megatron-bridge": "0.6.2", "megatron-core": "0.19.2", "transformer-engine": "2.18"}
#: Rules that only files can make fire (packed data, a YAML written twice): their cases are in
#: test_packed.py and test_load.py; one with a fix also needs a case in DATA_CASES below.
NEEDS_FILES = {"SP010", "SP032", "SP040", "SP041", "SP042", "SP043", "SP044", "SP107"}


# ---------------------------------------------------------------- registration refuses a wrong rule


def _check(ctx: Any) -> Hit | None:
    if ctx.view.model.context_parallel_size > 1:
        return Hit({"cp": ctx.view.model.context_parallel_size})
    return None


GOOD: dict[str, Any] = {
    "group": "parallel",
    "text": {"en": ("CP is {cp}", "Because."), "zh": ("CP 为 {cp}", "因为。")},
}


def _make(**changes: Any) -> Any:
    args = {"rule_id": "SP011", "fields": ("model.context_parallel_size",), "fix": (), **GOOD, **changes}
    return make_rule(args.pop("rule_id"), ERROR, args.pop("fields"), RAISES, _check, **args)


def test_a_well_formed_rule_registers() -> None:
    made = _make()
    assert made.message("zh") == "CP 为 {cp}" and made.group == "parallel"


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"text": {"en": ("CP is {cp}", "Because.")}}, r"missing: \['zh'\]"),
        ({"text": {**GOOD["text"], "fr": ("x", "y")}}, r"unknown: \['fr'\]"),
        ({"text": {"en": ("", "Because."), "zh": ("CP 为 {cp}", "因为。")}}, "two non-empty strings"),
        ({"text": {"en": ("CP is {cp}\nsecond line", "Because."), "zh": GOOD["text"]["zh"]}}, "one line"),
        ({"text": {"en": ("CP is {cp} of {tp}", "x"), "zh": ("{cp} {tp}", "y")}}, r"names \['tp'\], which"),
        ({"text": {"en": ("CP is {cp}", "x"), "zh": ("CP", "y")}}, "name different parameters"),
        ({"fields": ("model.context_paralel_size",)}, "'context_paralel_size' is not a known field of model"),
        ({"fields": ("modle.seq_length",)}, "'modle' is not a ConfigContainer section"),
        ({"fix": ("world_size",)}, "fix key 'world_size'"),
        ({"fix": ("train.micro_batchsize",)}, "not a known field of train"),
        ({"rule_id": "SP101"}, "outside its group 'parallel' \\(SP011-SP025\\)"),
        ({"group": "misc"}, "group 'misc' is not one of"),
        ({"example": Example(("model.seq_length",))}, "example: override"),
    ],
)
def test_registration_refuses_a_wrong_rule(changes: dict[str, Any], says: str) -> None:
    with pytest.raises(RuleDefinitionError, match=says) as err:
        _make(**changes)
    assert str(err.value).startswith("SP")  # names the rule


def test_an_id_is_registered_once() -> None:
    with pytest.raises(RuleDefinitionError, match="SP011: the id is taken twice"):
        rule("SP011", ERROR, ("model.seq_length",), RAISES, group="parallel", **GOOD["text"])(_check)


def test_returned_params_are_read_from_the_checks_own_hits() -> None:
    def literal(ctx: Any) -> Hit | None:
        return Hit({"a": 1, "b": 2}) if ctx else Hit(fix=[])

    def computed(ctx: Any) -> Hit:
        params = {"a": 1}
        return Hit(params)

    def elsewhere(ctx: Any) -> list[Hit]:
        return list(ctx)

    assert returned_params(literal) == {"a", "b"}
    assert returned_params(computed) is None and returned_params(elsewhere) is None


def test_field_names_of_every_rule_and_fix_are_checked_at_import() -> None:
    """The real table went through registration: the fields it names include the nested and free ones."""
    fields = {f for r in RULES for f in (*r.fields, *r.fix)}
    assert {f"{SPECS}.max_single_sequence_length", "dataset.dataset_kwargs.pad_to_max_length"} <= fields


# ---------------------------------------------------------------- one catalog for rules and the atlas


def test_the_catalog_holds_every_rule_and_every_defect_once() -> None:
    ids = [e.id for e in CATALOG]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    assert set(ids) == {r.id for r in RULES} | {d.id for d in DEFECTS}
    for entry in CATALOG:
        for lang in ("en", "zh"):
            assert entry.title(lang) and "\n" not in entry.title(lang) and entry.why(lang)


def test_a_rule_title_shows_its_parameters() -> None:
    assert shown_template("seq_length {seq} by 2*CP = {mult} ({{N}}_metadata.jsonl)") == (
        "seq_length ⟨seq⟩ by 2*CP = ⟨mult⟩ ({N}_metadata.jsonl)"
    )
    title = "seq_length ⟨seq⟩ is not divisible by 2*CP = ⟨mult⟩ (context_parallel_size ⟨cp⟩)"
    assert catalog_entry("sp011").title() == title


def test_defect_links_cover_every_cited_number() -> None:
    assert defect_links("NVIDIA-NeMo/Megatron-Bridge#2952 (fix: PR #3926)") == (
        "https://github.com/NVIDIA-NeMo/Megatron-Bridge/issues/2952",
        "https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/3926",
    )
    assert defect_links("NVIDIA/TransformerEngine#2483 (Megatron-LM #2566; fix: PR #2568)") == (
        "https://github.com/NVIDIA/TransformerEngine/issues/2483",
        "https://github.com/NVIDIA/Megatron-LM/issues/2566",
        "https://github.com/NVIDIA/TransformerEngine/pull/2568",
    )
    for d in DEFECTS:
        assert len(catalog_entry(d.id).links) == len(set(re.findall(r"#(\d+)", d.source))), d.id


def test_an_unknown_id_is_a_one_line_usage_error() -> None:
    ids = r"\(ids: SP001\.\.SP107, SP201\.\.SP2\d\d\)$"
    with pytest.raises(UsageError, match=r"^rule_id 'SP999': no such rule " + ids):
        catalog_entry("SP999")


def test_the_docs_rule_table_is_generated_from_the_rules() -> None:
    table = doctor_tables.shown(DOCS.read_text(encoding="utf-8"), "rules")
    assert table == rules_markdown(), "run `python tests/_support/doctor_tables.py` to regenerate it"


# ---------------------------------------------------------------- examples fire, fixes quiet (#39 item 4)


def _load(example: Example) -> tuple[LoadedConfig, DoctorOptions]:
    options = example.options()
    kind = options.pop("dataset_kind", None)
    loaded = load_config(overrides=list(example.overrides), dataset_kind=kind)
    return loaded, DoctorOptions(**options, stack=STACK)


def _sp040_case(tmp: Path) -> tuple[LoadedConfig, DoctorOptions]:
    packed = write_packs(tmp / "p", [[9, 5]], 32)
    overrides = [
        "dataset.enable_offline_packing=true",
        f"{SPECS}.packed_sequence_size=16",
        f"{SPECS}.packed_metadata_path={packed}/32_metadata.jsonl",
    ]
    options = DoctorOptions(packed=str(packed / "training_32.idx.parquet"), stack=STACK)
    return load_config(overrides=overrides), options


#: A case for each rule with a fix that only files can make fire.
DATA_CASES: dict[str, Callable[[Path], tuple[LoadedConfig, DoctorOptions]]] = {"SP040": _sp040_case}


def test_every_rule_fires_on_an_example_or_needs_files() -> None:
    without = {r.id for r in RULES if r.example is None}
    assert without == NEEDS_FILES, "give the rule an example (or list it here with a case in its test)"


@pytest.mark.parametrize("rule_id", [r.id for r in RULES if r.example is not None])
def test_the_example_fires_its_rule_and_the_explained_command_is_it(rule_id: str) -> None:
    (found,) = [r for r in RULES if r.id == rule_id]
    assert found.example is not None
    loaded, options = _load(found.example)
    assert rule_id in [f.id for f in check(loaded, options).findings]
    assert catalog_entry(rule_id).example == found.example.command()


FIXABLE = [e.id for e in CATALOG if e.kind == "rule" and e.fix]


@pytest.mark.parametrize("rule_id", FIXABLE)
def test_every_fix_quiets_its_rule_without_a_new_error(rule_id: str, tmp_path: Path) -> None:
    """Generated over the catalog: a new rule with a fix is covered as soon as it is registered."""
    (found,) = [r for r in RULES if r.id == rule_id]
    if found.example is not None:
        loaded, options = _load(found.example)
    else:
        assert rule_id in DATA_CASES, f"{rule_id} has a fix but neither an example nor a data case"
        loaded, options = DATA_CASES[rule_id](tmp_path)
    before = check(loaded, options).findings
    hits = [f for f in before if f.id == rule_id]
    assert hits
    fix = [item for f in hits for item in f.fix]
    undeclared = {item.partition("=")[0] for item in fix} - set(found.fix)
    assert not undeclared, f"the fix sets keys the rule does not declare: {undeclared}"
    unchanged = [item for item in fix if apply_overrides(loaded, [item]).raw == loaded.raw]
    assert not unchanged, f"fix lines that change nothing: {unchanged}"
    after = check(apply_overrides(loaded, fix), options).findings
    assert rule_id not in [f.id for f in after]
    errors_before = {f.id for f in before if f.severity == ERROR}
    assert [f.id for f in after if f.severity == ERROR and f.id not in errors_before] == []


@given(
    mbs=st.integers(2, 8),
    pack=st.sampled_from([1024, 2048, 4096]),
    seq=st.sampled_from([None, 1024, 2048, 4096, 8192, 16384]),
    gbs=st.sampled_from([None, 16, 64]),
)
def test_a_fix_line_changes_the_config(mbs: int, pack: int, seq: int | None, gbs: int | None) -> None:
    """SP005 sets ``seq_length`` to the new pack size, which the config often says already: every ``fix:``
    line and every corrected override changes the config as given, and the fix still quiets the rule."""
    overrides = [
        "dataset.enable_offline_packing=true",
        f"{SPECS}.packed_sequence_size={pack}",
        f"train.micro_batch_size={mbs}",
    ]
    overrides += [f"dataset.seq_length={seq}", f"model.seq_length={seq}"] if seq is not None else []
    overrides += [f"train.global_batch_size={gbs}"] if gbs is not None else []
    loaded = load_config(overrides=overrides)
    (finding,) = [f for f in check(loaded).findings if f.id == "SP005"]
    assert finding.fix[0] == "train.micro_batch_size=1"
    for item in [*finding.fix, *suggest_fixes(loaded)]:
        assert apply_overrides(loaded, [item]).raw != loaded.raw, item
    assert "SP005" not in [f.id for f in check(apply_overrides(loaded, finding.fix)).findings]
    if seq == pack * mbs:
        assert not any(item.partition("=")[0].endswith(".seq_length") for item in finding.fix)


def _in_batch(mbs: int, gbs: int | None) -> list[str]:
    out = ["dataset.enable_in_batch_packing=true", f"train.micro_batch_size={mbs}"]
    return out + ([f"train.global_batch_size={gbs}"] if gbs is not None else [])


@pytest.mark.parametrize(
    ("gbs", "dp", "fix"),
    [
        (32, 8, ["train.micro_batch_size=2"]),  # 4 samples per rank: MBS 2
        (12, 4, ["train.micro_batch_size=3"]),  # 3 per rank: MBS 3 keeps GBS 12
        (8, 8, ["train.micro_batch_size=2", "train.global_batch_size=16"]),  # 1 per rank: GBS up to 2 x DP
        (10, 4, ["train.micro_batch_size=2", "train.global_batch_size=16"]),  # not a multiple of DP
        (None, 2, ["train.micro_batch_size=2"]),
    ],
)
def test_in_batch_fix_raises_mbs_and_keeps_packing(gbs: int | None, dp: int, fix: list[str]) -> None:
    report = check(load_config(overrides=_in_batch(1, gbs)), DoctorOptions(dp=dp))
    (finding,) = [f for f in report.findings if f.id == "SP006"]
    assert finding.fix == fix


@given(gbs=st.integers(1, 512), dp=st.sampled_from([1, 2, 3, 4, 8, 16]))
def test_in_batch_fix_keeps_packing_and_a_divisible_batch(gbs: int, dp: int) -> None:
    """Whatever GBS and DP: after SP006's fix in-batch packing is still on, MBS > 1, GBS % (MBS x DP) == 0
    (SP017 quiet), and GBS is unchanged whenever GBS / DP is a whole number of at least 2."""
    loaded = load_config(overrides=_in_batch(1, gbs))
    options = DoctorOptions(dp=dp)
    (finding,) = [f for f in check(loaded, options).findings if f.id == "SP006"]
    fixed = apply_overrides(loaded, finding.fix)
    train = fixed.view.train
    assert fixed.view.dataset.enable_in_batch_packing and train.micro_batch_size is not None
    assert train.micro_batch_size > 1 and train.global_batch_size is not None
    assert train.global_batch_size % (train.micro_batch_size * dp) == 0
    if gbs % dp == 0 and gbs // dp >= 2:
        assert train.global_batch_size == gbs
    assert not {"SP006", "SP017"} & {f.id for f in check(fixed, options).findings}
