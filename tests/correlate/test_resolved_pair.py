"""``bridgepack correlate plan``'s two commands resolved by the frameworks' own config code (the resolution
peer:
Megatron-LM's argparse + ``validate_args``, Bridge's recipe + overrides + ``finalize()``/``validate()``): the
MLM command is accepted and both sides train the same knobs -- weight decay and the distributed optimizer
included (issue #38's reverse cases)."""

from __future__ import annotations

from typing import Any

import pytest

from _support.mlm_bridge import BridgeCase, MlmBridge, MlmCase, knob_differences
from bridgepack.correlate import build_plan, parse_spec
from correlate.test_plan import SPEC, mlm_side

DOCS: dict[str, dict[str, Any]] = {
    "1gpu": SPEC,
    "tp2-sp": {**SPEC, "parallel": {"tp": 2, "sp": True}},
    "constant-wd": {
        **SPEC,
        "lr": {"lr": 1.0e-4, "min_lr": 1.0e-4, "decay_style": "constant", "warmup_iters": 0},
        "optimizer": {"adam_beta2": 0.999, "weight_decay": 0.1},
    },
}


@pytest.fixture(scope="module")
def answers(mlm_bridge_peer: MlmBridge) -> dict[str, Any]:
    cases: list[MlmCase | BridgeCase] = []
    for name, doc in DOCS.items():
        spec = parse_spec(doc)
        plan = build_plan(spec, "/runs/correlate-20260830-101500")
        words = list(plan.bridge.argv[plan.bridge.argv.index("--recipe") + 2 :])
        cases.append(
            MlmCase(f"mlm:{name}", tuple(mlm_side(plan.mlm.argv, spec["launch.mlm_script"])), spec.world_size)
        )
        cases.append(BridgeCase(f"bridge:{name}", tuple(words), spec.world_size, spec["launch.recipe"]))
    return mlm_bridge_peer.resolve(cases)


@pytest.mark.parametrize("name", list(DOCS))
def test_plan_pair_resolves_alike(name: str, answers: dict[str, Any]) -> None:
    mlm, bridge = answers[f"mlm:{name}"], answers[f"bridge:{name}"]
    assert "error" not in mlm, mlm.get("error")
    assert "error" not in bridge, bridge.get("error")
    assert knob_differences(mlm, bridge, also=["ddp.use_distributed_optimizer"]) == []
    assert bridge["view"]["ddp.use_distributed_optimizer"] is False  # the recipe's True is turned off
