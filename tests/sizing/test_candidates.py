"""Candidate rows on small arrays computed by hand (formulas in bridgepack.sizing._candidates)."""

from __future__ import annotations

import pytest

from bridgepack.errors import UsageError
from bridgepack.packing import CostModel
from bridgepack.sizing import (
    Imbalance,
    Topology,
    evaluate,
    evaluate_candidate,
    overrides_for_candidate,
    pack_command,
    parse_pack_sizes,
    recommend,
)

MODEL = CostModel(dense=1.0, attention=0.25)


def test_worked_example() -> None:
    # best_fit_decreasing of 7 5 3 2 in packs of 8: [7] [5, 3] [2]
    c = evaluate_candidate([3, 5, 2, 7], 8, 16, Topology(), MODEL, simulate=False)
    assert (c.packs, c.lower_bound, c.rejected, c.pad_tokens) == (3, 3, 0, 0)
    assert c.efficiency == pytest.approx(17 / 24)
    assert c.padding_saved == (4 - 3) * 8
    assert c.padding_saved_fraction == pytest.approx(1 / 4)
    assert (c.gbs, c.gbs_exact, c.steps_per_epoch, c.dp_divides) == (2, True, 1, None)
    # per step = mean pack x GBS: dense (7 + 8 + 2) / 3 * 2; attention (49 + 34 + 4) / 3 * 0.25 * 2
    assert c.dense_flops_per_step == pytest.approx(17 / 3 * 2)
    assert c.attention_flops_per_step == pytest.approx(87 / 3 * 0.25 * 2)


def test_pad_multiple_and_rejects() -> None:
    # CP 2 -> m = 4: cap 8, runtime 3 5 2 7 -> 4 8 4 8 (7 pad tokens) -> packs [8] [8] [4, 4]
    c = evaluate_candidate([3, 5, 2, 7], 8, 16, Topology(cp=2), MODEL, simulate=False)
    assert (c.pad_multiple, c.packs, c.pad_tokens) == (4, 3, 7)
    assert c.pad_cost == pytest.approx(7 / 17)
    assert c.efficiency == pytest.approx(17 / 24)
    # pack 6 with m = 4: cap 4, so 5 and 7 are rejected; 3 2 -> 4 4 -> two packs
    small = evaluate_candidate([3, 5, 2, 7], 6, 12, Topology(cp=2), MODEL, simulate=False)
    assert (small.rejected, small.packs, small.real_tokens) == (2, 2, 5)
    assert "below the longest sample (7 runtime tokens): 2 sample(s) would be rejected" in small.notes[0]


def test_token_slots_not_a_multiple() -> None:
    c = evaluate_candidate([3, 5, 2, 7], 8, 20, Topology(dp=2), MODEL, simulate=False)
    assert (c.gbs, c.gbs_exact, c.dp_divides) == (2, False, True)


def test_recommend_prefers_fewest_rejects_then_epoch_cost() -> None:
    lengths = [3, 5, 2, 7, 8, 8, 1, 1]
    cands = evaluate(lengths, [4, 8, 16], 32, Topology(), MODEL, simulate=False)
    by = {c.pack_size: c for c in cands}
    assert by[4].rejected == 4 and by[8].rejected == 0 and by[16].rejected == 0
    # 8: [8] [8] [7,1] [5,3] [2,1] -> 5 packs, 40 slots; 16: [8,8] [7,5,3,1] [2,1] -> 3 packs, 48 slots
    squares = 9 + 25 + 4 + 49 + 64 + 64 + 1 + 1
    assert by[8].efficiency == pytest.approx(35 / 40)
    assert by[8].epoch_flops == pytest.approx(40 + 0.25 * squares)
    assert by[16].epoch_flops == pytest.approx(48 + 0.25 * squares)
    assert recommend(cands).pack_size == 8
    # waiting for the slowest rank counts too: a 20% imbalance at 8 hands the choice to 16
    by[8].imbalance = Imbalance(steps=4, mean=1.2, p95=1.2, worst=1.2)
    assert recommend(cands).pack_size == 16
    by[8].imbalance_balanced = Imbalance(steps=4, mean=1.0, p95=1.0, worst=1.0)
    assert by[8].best_imbalance == 1.0 and recommend(cands).pack_size == 8


def test_dp_not_dividing_any_gbs_is_a_usage_error() -> None:
    cands = evaluate([3, 5, 2, 7], [8], 16, Topology(dp=3), MODEL, simulate=False)
    assert cands[0].dp_divides is False
    with pytest.raises(UsageError, match="DP 3 does not divide GBS 2"):
        recommend(cands)


def test_topology_resolution() -> None:
    assert Topology.resolve(2, 2, True, None, 32).dp == 8
    assert Topology.resolve(4, 1, True, None, None).pad_multiple == 4
    with pytest.raises(UsageError, match=r"^give either dp or world_size, not both$"):
        Topology.resolve(1, 1, False, 2, 8)
    with pytest.raises(UsageError, match="not a multiple of TP 4 x CP 1"):
        Topology.resolve(4, 1, False, None, 6)


def test_overrides_and_command_with_cp() -> None:
    topo = Topology(tp=2, cp=2, sequence_parallel=True, dp=4)
    c = evaluate_candidate([3, 5, 2, 7], 8, 32, topo, MODEL, simulate=False)
    lines = overrides_for_candidate(c, topo)
    assert lines[:7] == [
        "dataset.enable_offline_packing=true",
        "dataset.seq_length=8",
        "model.seq_length=8",
        "train.micro_batch_size=1",
        "train.global_batch_size=4",
        "dataset.offline_packing_specs.packed_sequence_size=8",
        "dataset.offline_packing_specs.pad_seq_to_mult=4",  # lcm(2*CP=4, CP*TP=4)
    ]
    assert "model.calculate_per_token_loss=true" in lines and "ddp.average_in_collective=false" in lines
    carried = [("--tokenizer", None), ("--eos-id", 0), ("--model", "8,1,2,16,10")]
    command = pack_command(["my data.jsonl"], c, topo, carried=carried)
    assert command == (
        "bridgepack pack 'my data.jsonl' --out packed_8 --pack-size 8"
        " --cp 2 --tp 2 --sequence-parallel --eos-id 0 --model 8,1,2,16,10"
    )


def test_parse_pack_sizes() -> None:
    assert parse_pack_sizes("8192, 2048,8192") == [2048, 8192]
    for bad in ("", "0,8", "a,b"):
        with pytest.raises(UsageError):
            parse_pack_sizes(bad)


def test_balance_recommended_only_when_it_helps() -> None:
    from bridgepack.sizing import balance_worthwhile

    c = evaluate_candidate([3, 5, 2, 7], 8, 16, Topology(dp=2), MODEL, simulate=False)
    assert not balance_worthwhile(c)  # nothing simulated
    c.imbalance = Imbalance(steps=10, mean=1.05, p95=1.1, worst=1.2)
    c.imbalance_balanced = Imbalance(steps=10, mean=1.049, p95=1.1, worst=1.2)
    assert not balance_worthwhile(c)
    c.imbalance_balanced = Imbalance(steps=10, mean=1.02, p95=1.05, worst=1.1)
    assert balance_worthwhile(c)
