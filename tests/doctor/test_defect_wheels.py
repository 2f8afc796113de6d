"""The atlas's ranges against the released wheels' own code (downloaded from PyPI, never installed).

* Every Bridge and Megatron-Core entry with a wheel marker: the marker is present exactly on the releases the
  range says (affected or fixed), for the megatron-bridge wheels 0.3.0-0.6.2 and the megatron-core wheels
  0.15.3-0.19.2.
* SP201 (Bridge #2952), run: each wheel's ``training/gpt_step.get_batch`` is executed as a middle pipeline
  stage of a PP 4 + offline packing config; the packing metadata is lost on the releases the atlas marks
  affected and reaches the stage on the others, and the doctor says so for that config.
* SP204 (Bridge PR #5213), run: Bridge 0.6.2's packed collate drops the loss of exactly the positions the
  doctor's data scan flags; with the workaround (a turn delimiter that is not the EOS id) nothing is dropped.
* SP206 (Bridge #4228), run: the 0.5.0 ``get_batch_from_iterator`` hands the CP partitioning the collate's
  mask only when the dataset's mask is asked for or on a middle stage (PP 1 and 2 with the default: never).
* The defects the survey found in no release: Bridge #2246 (every wheel with in-batch packing hands the
  model an argmin or Megatron-Core's cu_seqlens_q) and Megatron-LM PR #5696 (the micro-batch flattening and
  its MoE un-flattening ship together).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from _support.peers import bridge_wheel_root, megatron_core_wheel_root
from _support.stand_ins import load_with_stand_ins
from bridgepack.data.packed._scan import eos_inside_trained_spans
from bridgepack.doctor import DEFECTS, DoctorOptions, check, load_config
from bridgepack.doctor._defect_config import FP8_PRESETS, fp8_attention
from bridgepack.doctor._defect_facts import DefectContext
from bridgepack.doctor._versions import BRIDGE, MCORE, release

pytestmark = pytest.mark.network

WHEELS = ("0.3.0", "0.3.1", "0.4.0", "0.4.2", "0.5.0", "0.5.1", "0.6.0", "0.6.2")
MCORE_WHEELS = ("0.15.3", "0.16.1", "0.17.1", "0.18.0", "0.18.2", "0.19.0", "0.19.2")
WHEEL_ROOT = {BRIDGE: bridge_wheel_root, MCORE: megatron_core_wheel_root}
EOS = 2


def _bridge_file(version: str, relative: str) -> Path:
    return bridge_wheel_root(version) / "megatron" / "bridge" / relative


@pytest.mark.parametrize(
    ("component", "version"), [(BRIDGE, v) for v in WHEELS] + [(MCORE, v) for v in MCORE_WHEELS]
)
def test_wheel_markers_match_the_ranges(component: str, version: str) -> None:
    entries = [d for d in DEFECTS if d.component == component and d.wheel_marker is not None]
    assert len(entries) >= 3
    root = WHEEL_ROOT[component](version)
    for defect in entries:
        marker = defect.wheel_marker
        assert marker is not None
        files = [p for p in (root / rel for rel in marker.paths) if p.exists()]
        affected = defect.affected.covers(version)
        code = files[0].read_text() if files else ""
        if not files or (marker.requires is not None and marker.requires not in code):
            assert not affected, (defect.id, version)  # the code is not in this release at all
            continue
        present = marker.text in code
        want = affected if marker.present_when == "affected" else not affected
        assert present == want, (defect.id, version)


# ---------------------------------------------------------------- SP201: gpt_step.get_batch on a middle stage


class _OnHost:
    """A batch value whose device moves are no-ops (the middle-stage path only moves and forwards it)."""

    def cuda(self, non_blocking: bool = False) -> _OnHost:
        return self

    def cpu(self) -> _OnHost:
        return self


def _middle_stage_packing_metadata(version: str) -> Any:
    """What ``get_batch`` of Bridge ``version`` hands the model on a middle stage (PP 4, offline packing)."""
    pytest.importorskip("torch")
    gpt_step = load_with_stand_ins(
        _bridge_file(version, "training/gpt_step.py"), f"bridge_gpt_step_{version}"
    )
    gpt_step.is_pp_first_stage = lambda *_a, **_k: False  # a middle stage of PP 4
    gpt_step.is_pp_last_stage = lambda *_a, **_k: False
    gpt_step.get_batch_on_this_cp_rank = lambda batch, **_k: batch  # CP 1
    specs = SimpleNamespace(packed_sequence_size=4096)
    cfg = SimpleNamespace(
        dataset=SimpleNamespace(
            enable_offline_packing=True,  # v0.6 names
            offline_packing_specs=specs,
            packed_sequence_specs=specs,  # <= v0.5 names
            pack_sequences_in_batch=False,
            skip_getting_attention_mask_from_dataset=True,
        ),
        model=SimpleNamespace(virtual_pipeline_model_parallel_size=None, pipeline_model_parallel_size=4),
    )
    batch = {k: _OnHost() for k in ("tokens", "labels", "loss_mask", "position_ids", "cu_seqlens")}
    batch |= {"cu_seqlens_argmin": _OnHost(), "max_seqlen": _OnHost(), "attention_mask": None}
    pg = SimpleNamespace(pp=object(), cp=SimpleNamespace(size=lambda: 1))
    out = gpt_step.get_batch(iter([batch]), cfg, False, pg_collection=pg)
    return out[5]  # cu_seqlens (<= 0.5) or the packed-metadata dict (0.6)


@pytest.mark.parametrize("version", WHEELS)
def test_pp4_offline_packing_is_affected_where_gpt_step_drops_the_metadata(version: str) -> None:
    lost = _middle_stage_packing_metadata(version) is None
    config = load_config(
        overrides=[
            "model.pipeline_model_parallel_size=4",
            "dataset.enable_offline_packing=true",
            "dataset.offline_packing_specs.packed_sequence_size=4096",
            "dataset.seq_length=4096",
            "model.seq_length=4096",
        ]
    )
    report = check(config, DoctorOptions(stack={BRIDGE: version}))
    flagged = [(f.id, f.severity) for f in report.findings if f.id == "SP201"]
    assert flagged == ([("SP201", "error")] if lost else []), version
    assert lost == (version in ("0.3.0", "0.3.1", "0.4.0", "0.4.2"))


# ---------------------------------------------------------------- SP204: Bridge 0.6.2's packed collate


def _collating(cls: Any, *, width: int, pad_seq_to_mult: int) -> Any:
    """A Bridge packed dataset of class ``cls`` that only collates (variable width, no padded cu_seqlens)."""
    from _support.bridge_batching import collate_only

    return collate_only(
        cls,
        EOS,
        max_seq_length=width,
        pad_to_max_length=False,
        pad_seq_length_to_mult=1,
        _pad_seq_to_mult=pad_seq_to_mult,
        pad_cu_seqlens=False,
    )


def _collate_0_6_2_loss(sequences: list[list[int]], masks: list[list[int]]) -> np.ndarray:
    from _support.bridge_batching import bridge_packing_modules

    ids = [t for s in sequences for t in s]
    boundaries = np.cumsum([0] + [len(s) for s in sequences]).tolist()
    item = {"input_ids": ids, "loss_mask": [m for s in masks for m in s], "seq_boundaries": boundaries}
    dataset = _collating(bridge_packing_modules().gpt_sft.GPTSFTPackedDataset, width=64, pad_seq_to_mult=1)
    out = dataset.collate_fn([item])
    return out["loss_mask"][0].numpy()[: len(ids) - len(sequences)]


@pytest.mark.parametrize("delimiter", [EOS, 5])
def test_packed_collate_drops_exactly_the_flagged_positions(delimiter: int) -> None:
    # Two conversations; the first has a turn delimiter inside its trained span (loss_mode full).
    sequences = [[11, 12, delimiter, 13, 14, EOS], [21, 22, EOS]]
    masks = [[1, 1, 1, 1, 1, 0], [1, 1, 0]]
    got = _collate_0_6_2_loss(sequences, masks)
    wanted = np.array([m for s in masks for m in s[:-1]])  # the per-input loss the data asks for
    dropped = np.flatnonzero((wanted == 1) & (got == 0))

    ids = np.array([t for s in sequences for t in s])
    lengths = np.array([len(s) for s in sequences])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    flagged = eos_inside_trained_spans(ids, np.array([m for s in masks for m in s]), starts, lengths, EOS)
    seq_of = np.searchsorted(starts, flagged, side="right") - 1
    assert (
        dropped.tolist() == (flagged - seq_of).tolist()
    )  # stored -> input position (one label per sequence)
    assert dropped.tolist() == ([2] if delimiter == EOS else [])


# ---------------------------------------------------------------- SP210: vlm_step.pack_batch_sequences


def _in_batch_cu_seqlens(version: str, tokens: list[int], real: int) -> list[int]:
    """cu_seqlens Bridge ``version``'s in-batch packing builds for one row with ``real`` leading tokens."""
    torch = pytest.importorskip("torch")
    vlm_step = load_with_stand_ins(
        _bridge_file(version, "training/vlm_step.py"), f"bridge_vlm_step_{version}"
    )
    ids = torch.tensor([tokens])
    args = (ids, ids.clone(), torch.ones_like(ids, dtype=torch.float), None, torch.arange(len(tokens))[None])
    padding = torch.tensor([[1] * real + [0] * (len(tokens) - real)])
    new_api = "padding_mask" in vlm_step.pack_batch_sequences.__code__.co_varnames
    out = vlm_step.pack_batch_sequences(
        *args, pad_token_id=0, **({"padding_mask": padding} if new_api else {})
    )
    return out[5].tolist()


@pytest.mark.parametrize("version", ["0.3.1", "0.4.0"])
def test_in_batch_packing_lengths(version: str) -> None:
    affected = next(d for d in DEFECTS if d.id == "SP210").affected.covers(version)
    padded_with_9 = _in_batch_cu_seqlens(version, [5, 6, 7, 9, 9, 9], real=3)  # a tokenizer whose pad id is 9
    ends_in_id_0 = _in_batch_cu_seqlens(version, [5, 6, 0, 0, 0, 0], real=3)  # last real token has id 0
    assert (padded_with_9, ends_in_id_0) == (([0, 6], [0, 2]) if affected else ([0, 3], [0, 3]))


# ---------------------------------------------------------------- SP203 / SP206: packed CP partitioning


@pytest.mark.parametrize("version", ["0.5.0", "0.5.1"])
def test_packed_cp_partition_of_the_collated_batch(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wheel's packed collate feeds the wheel's CP partitioning (as when the batch keeps the dataset's
    attention_mask). Transformer Engine's index helper is stood in for by one that records the cu_seqlens it
    is handed and returns bridgepack's zigzag indices of their valid (non-negative) prefix."""
    torch = pytest.importorskip("torch")
    from _support.bridge_batching import legacy_packed_dataset_cls
    from bridgepack.batching.cp import zigzag_indices

    sequences = [[11, 12, 13, 14, EOS], [21, 22, 23, 24, 25, 26, 27, 28, EOS]]  # runtime lengths 4 and 8
    item = {
        "input_ids": [t for s in sequences for t in s],
        "loss_mask": [1] * 14,
        "seq_boundaries": [0, 5, 14],
    }
    dataset = _collating(legacy_packed_dataset_cls(version), width=16, pad_seq_to_mult=4)
    batch = dataset.collate_fn([item])
    gpt_step = load_with_stand_ins(
        _bridge_file(version, "training/gpt_step.py"), f"bridge_gpt_step_cp_{version}"
    )
    gpt_step.parallel_state = SimpleNamespace(get_context_parallel_rank=lambda: 0)
    gpt_step.is_te_min_version = lambda *_a: True
    handed: list[list[int]] = []

    def partitioned_indices(cu_seqlens: Any, _total: int, cp: int, rank: int) -> Any:
        handed.append(cu_seqlens.tolist())
        valid = [int(c) for c in cu_seqlens.tolist() if c >= 0]
        return torch.as_tensor(zigzag_indices(valid, cp, rank))

    monkeypatch.setitem(
        sys.modules,
        "transformer_engine_torch",
        SimpleNamespace(thd_get_partitioned_indices=partitioned_indices),
    )
    by_id = {d.id: d for d in DEFECTS}
    tokens = batch["tokens"].clone()
    if by_id["SP206"].affected.covers(version):
        assert tuple(batch["attention_mask"].shape) == (1,)  # the placeholder has no sequence dimension
        with pytest.raises(IndexError):
            gpt_step._partition_packed_batch_for_cp(batch, 2)
    else:
        assert batch["attention_mask"] is None
        out = gpt_step._partition_packed_batch_for_cp(batch, 2)
        assert out["tokens"].tolist() == tokens[:, zigzag_indices([0, 4, 12], 2, 0)].tolist()
    # SP203: the -1 padding of the collated cu_seqlens reaches Transformer Engine on the affected release.
    sentinel = [0, 4, 12, -1] if by_id["SP203"].affected.covers(version) else [0, 4, 12]
    assert handed and all(h == sentinel for h in handed)


# ---------------------------------------------------------------- SP209: Megatron-Core's MTP roll, CP 2


def _mtp_roll_cp2(
    tmp_path: Path, boundaries: list[list[int]], padded: list[int], tokens: list[int]
) -> np.ndarray:
    """The packed row after the megatron-core 0.19.2 wheel's MTP roll on two gloo CP ranks, once per
    ``cu_seqlens_q`` in ``boundaries`` (rows of the result, in global token order)."""
    mp = pytest.importorskip("torch.multiprocessing")
    from _support.mtp_roll import roll_on_rank

    path = (
        megatron_core_wheel_root("0.19.2") / "megatron" / "core" / "transformer" / "multi_token_prediction.py"
    )
    args = (2, str(tmp_path / "rendezvous"), str(path), boundaries, padded, tokens, str(tmp_path))
    mp.spawn(roll_on_rank, args=args, nprocs=2)
    out = np.zeros((len(boundaries), len(tokens)), dtype=np.int64)
    for rank in range(2):
        positions, *values = np.load(tmp_path / f"rank{rank}.npy")
        out[:, positions] = values
    return out


def test_mtp_roll_under_cp_uses_the_boundaries_it_is_given(tmp_path: Path) -> None:
    # Two sequences of 5 and 7 real tokens, each padded to a multiple of 2*CP = 4 (pad id 0).
    tokens = [10, 11, 12, 13, 14, 0, 0, 0, 20, 21, 22, 23, 24, 25, 26, 0]
    padded, unpadded = [0, 8, 16], [0, 5, 12]
    real_next = {j: tokens[j + 1] for j in [*range(0, 4), *range(8, 14)]}  # each real token's target
    assert next(d for d in DEFECTS if d.id == "SP209").affected.covers("0.19.2")

    # 0.19.2 rolls by cu_seqlens_q, which is unpadded under CP with padding; the fix rolls by the padded one.
    shipped, fixed = _mtp_roll_cp2(tmp_path, [unpadded, padded], padded, tokens)
    assert {j: int(fixed[j]) for j in real_next} == real_next
    wrong = {j: int(shipped[j]) for j in real_next if shipped[j] != real_next[j]}
    assert len(wrong) >= 3  # real tokens trained towards the wrong targets (positions shifted by the roll)


# ---------------------------------------------------------------- SP206: which batches carry the mask


@pytest.mark.parametrize(
    ("skip_mask_from_dataset", "middle_stage", "carried"),
    [(True, False, False), (False, False, True), (True, True, True)],
)
def test_the_collated_mask_reaches_cp_only_when_asked_for_or_on_a_middle_stage(
    skip_mask_from_dataset: bool, middle_stage: bool, carried: bool
) -> None:
    """Bridge 0.5.0's ``get_batch_from_iterator`` on a packed batch (CP partitioning follows): the collate's
    attention_mask placeholder is kept only with skip_getting_attention_mask_from_dataset false (SP206) or on
    a middle stage that needs the whole batch (SP253); PP 1 and 2 with the default never carry it."""
    pytest.importorskip("torch")
    gpt_step = load_with_stand_ins(_bridge_file("0.5.0", "training/gpt_step.py"), "bridge_gpt_step_mask")
    batch = {k: _OnHost() for k in ("tokens", "labels", "loss_mask", "position_ids", "cu_seqlens")}
    batch |= {"attention_mask": _OnHost(), "cu_seqlens_argmin": _OnHost(), "max_seqlen": _OnHost()}
    out = gpt_step.get_batch_from_iterator(
        iter([batch]),
        False,
        skip_mask_from_dataset,
        is_first_pp_stage=not middle_stage,
        is_last_pp_stage=not middle_stage,
        include_full_batch_fields=middle_stage,
    )
    assert (out["attention_mask"] is not None) == carried
    config = [
        "dataset.enable_offline_packing=true",
        "dataset.offline_packing_specs.packed_sequence_size=4096",
        "model.context_parallel_size=2",
        f"dataset.skip_getting_attention_mask_from_dataset={str(skip_mask_from_dataset).lower()}",
        f"model.pipeline_model_parallel_size={4 if middle_stage else 2}",
    ]
    found = {
        f.id for f in check(load_config(overrides=config), DoctorOptions(stack={BRIDGE: "0.5.0"})).findings
    }
    assert bool(found & {"SP206", "SP253"}) == carried


# ---------------------------------------------------------------- defects in no release


@pytest.mark.parametrize("version", WHEELS)
def test_in_batch_packing_never_shipped_without_an_argmin(version: str) -> None:
    """Bridge #2246 (a VLM packed batch without cu_seqlens_argmin cut to nothing after PR #2180): no wheel
    with in-batch packing lacks the argmin (0.3.0-0.5.1) or the Megatron-Core cu_seqlens_q that need none."""
    code = _bridge_file(version, "training/vlm_step.py").read_text()
    packs = "def pack_batch_sequences" in code or '"cu_seqlens_q"' in code
    assert packs
    assert "cu_seqlens_argmin = torch.tensor(len(cu_seqlens))" in code or '"cu_seqlens_q"' in code


@pytest.mark.parametrize("version", MCORE_WHEELS)
def test_micro_batch_flattening_shipped_with_its_moe_fix(version: str) -> None:
    """Megatron-LM PR #5696 (seq_aux_loss over a micro-batch flattened by PR #5454): every wheel has both the
    flattening and the MoE un-flattening, or neither."""
    core = megatron_core_wheel_root(version) / "megatron" / "core"
    flattens = "def flatten_batch_for_packed_sequences" in (core / "utils.py").read_text()
    unflattens = "_maybe_unflatten_for_moe" in (core / "transformer" / "transformer_layer.py").read_text()
    assert flattens == unflattens == ((release(version) or ()) >= (0, 19))


# ---------------------------------------------------------------- FP8 as Bridge resolves it


def _bridge_mixed_precision() -> Any:
    pytest.importorskip("torch")
    return load_with_stand_ins(_bridge_file("0.6.2", "training/mixed_precision.py"), "bridge_mixed_precision")


def test_the_fp8_presets_are_bridges() -> None:
    """``FP8_PRESETS`` holds exactly Bridge 0.6.2's FP8 presets, with their recipe and parameter gather."""
    mp = _bridge_mixed_precision()
    fp8 = {}
    for name, factory in mp.MIXED_PRECISION_RECIPES.items():
        cfg = factory()
        if cfg.fp8 and "-" not in name:
            fp8[name] = (cfg.fp8_recipe, cfg.fp8_param_gather)
    assert fp8 == FP8_PRESETS


@pytest.mark.parametrize(
    ("mixed_precision", "attention"),
    [("bf16_with_fp8_delayed_scaling_mixed", False), ("bf16_mixed", False), (None, True)],
)
def test_a_preset_overwrites_the_models_fp8_fields(mixed_precision: str | None, attention: bool) -> None:
    """Bridge applies ``mixed_precision`` over the model config, so ``model.fp8_dot_product_attention=true``
    under a preset is off; without one the model's own fields hold. The doctor reads it the same way."""
    mp = _bridge_mixed_precision()
    model = SimpleNamespace(fp8="hybrid", fp8_recipe="delayed", fp8_dot_product_attention=True)
    if mixed_precision is not None:
        mp.get_mixed_precision_config(mixed_precision).setup(model)
    assert model.fp8_dot_product_attention is attention
    overrides = ["model.fp8=hybrid", "model.fp8_recipe=delayed", "model.fp8_dot_product_attention=true"]
    if mixed_precision is not None:
        overrides.append(f"mixed_precision={mixed_precision}")
    dctx = DefectContext(ctx=SimpleNamespace(), raw=load_config(overrides=overrides).raw)  # type: ignore[arg-type]
    assert (fp8_attention(dctx) is not None) == attention
