"""The cost model against FLOPs counted by hand from Megatron-LM's formula (module docstring of _cost)."""

from __future__ import annotations

import numpy as np
import pytest

from bridgepack.errors import UsageError
from bridgepack.packing import DEFAULT_DIMS, CostModel, ModelDims, PackPlan, pack_costs


def test_tiny_model_by_hand() -> None:
    # h=8, 1 layer, 2 heads (MHA), ffn 16, vocab 10, SwiGLU:
    # QKV 8*(8+8+8)=192, out proj 64, MLP 3*8*16=384 -> layer 640; logits 8*10=80; x6 -> 4320
    model = CostModel.from_dims(ModelDims(hidden=8, layers=1, heads=2, ffn=16, vocab=10))
    assert model.dense == 6 * (192 + 64 + 384 + 80) == 4320
    assert model.attention == 6 * 1 * 8 == 48  # 2 GEMMs x 2 FLOPs x h x L^2 / 2 (causal), x3


def test_grouped_query_and_plain_mlp() -> None:
    # h=8, 2 layers, 4 heads, 2 query groups: K and V are 8*2/4 = 4 wide -> QKV 8*(8+4+4) = 128;
    # out 64; plain MLP 2*8*16 = 256 -> layer 448, x2 layers = 896; logits 80 -> x6 = 5856
    dims = ModelDims(hidden=8, layers=2, heads=4, ffn=16, vocab=10, query_groups=2, gated=False)
    model = CostModel.from_dims(dims)
    assert model.dense == 6 * (2 * (128 + 64 + 256) + 80) == 5856
    assert model.attention == 6 * 2 * 8


def test_seven_b_like_default() -> None:
    # 4096 hidden, 32 layers: QKV 3*4096^2, out 4096^2, SwiGLU MLP 3*4096*11008, logits 4096*32000
    h = 4096
    per_layer = 3 * h * h + h * h + 3 * h * 11008
    model = CostModel.default()
    assert model.dims == DEFAULT_DIMS
    assert model.dense == 6 * (32 * per_layer + h * 32000)
    assert model.attention == 6 * 32 * h
    assert 50_000 < model.crossover_length < 51_000


def test_pack_costs_split_dense_and_attention() -> None:
    model = CostModel(dense=2.0, attention=0.5)
    plan = PackPlan(
        lengths=np.array([3, 1, 4]),
        pack_size=5,
        pack_offsets=np.array([0, 2, 3]),
        items=np.array([0, 1, 2]),
        algorithm="x",
        seed=0,
    )
    dense, attention = pack_costs(plan, model)
    assert dense.tolist() == [2.0 * 4, 2.0 * 4]
    assert attention.tolist() == [0.5 * (9 + 1), 0.5 * 16]
    assert model.sequence_costs([3]).tolist() == [2.0 * 3 + 0.5 * 9]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("4096,32,30,11008,32000", "30 heads do not divide hidden size 4096"),
        ("4096,32,32,11008,32000,5", "5 query groups do not divide 32 heads"),
        ("4096,32,32,11008", "hidden,layers,heads,ffn,vocab"),
        ("4096,32,x,11008,32000", "hidden,layers,heads,ffn,vocab"),
        ("4096,0,32,11008,32000", "layers must be a positive integer"),
    ],
)
def test_inconsistent_dims_are_usage_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        ModelDims.parse(text)


def test_parse_with_query_groups() -> None:
    dims = ModelDims.parse("4096, 32, 32, 14336, 128256, 8")
    assert (dims.groups, dims.ffn, dims.vocab) == (8, 14336, 128256)
    assert CostModel.from_dims(dims).to_record()["model"]["query_groups"] == 8
