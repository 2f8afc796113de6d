"""The step-cost model: estimated training FLOPs of a pack, split into a dense and an attention part.

Counts follow Megatron-LM's ``num_floating_point_operations`` (``megatron/training/training.py``,
``transformer_flops`` for a dense decoder with standard/grouped-query attention): every GEMM of
``m x n`` by ``n x k`` costs ``2 m n k`` FLOPs and runs three times (forward, data gradient, weight
gradient), so a token costs ``3 * 2 = 6`` FLOPs per weight it meets::

    dense per token  D = 6 * ( layers * ( h*(h + 2*h*g/heads)     QKV projections (g = query groups)
                                          + h*h                    attention output projection
                                          + f*h*ffn )              MLP: f = 3 gated (SwiGLU), 2 plain
                               + h*vocab )                         logits
    attention        A(L) = 6 * layers * h * L**2                  QK^T and (QK^T)V: 2 GEMMs of 2*h*L*L
                                                                   FLOPs each, halved by the causal mask

With packed (THD) batches attention runs per sequence, so a pack of sequences ``L_1..L_k`` costs
``D * sum(L_i) + A_coef * sum(L_i**2)``: the dense part grows with the tokens, the attention part with
the square of each sequence's length. A 7B-like decoder (4096 hidden, 32 layers, 32 heads, 11008 ffn,
32000 vocab, SwiGLU) has ``D = 39,642,464,256`` and ``A_coef = 786,432``: attention per token equals
dense per token at a sequence length of ``D / A_coef = 50,408``.

Without model dimensions bridgepack uses those 7B-like dims (:data:`DEFAULT_DIMS`), i.e. that dense /
attention ratio.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bridgepack._ranges import SIZE
from bridgepack.errors import UsageError, param, shown
from bridgepack.packing._plan import PackPlan

FloatArray = npt.NDArray[np.float64]

#: Forward + data gradient + weight gradient: each GEMM runs three times (Megatron-LM's factor 3).
FORWARD_BACKWARD_FACTOR = 3
#: ``2 m n k`` FLOPs per GEMM (Megatron-LM's factor 2).
FMA_FACTOR = 2
#: A dense decoder's fields, in the order ``--model`` takes them.
MODEL_FIELDS = ("hidden", "layers", "heads", "ffn", "vocab")


@dataclass(frozen=True)
class ModelDims:
    """A dense decoder's shape: enough to count its FLOPs per token and per sequence."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    query_groups: int | None = None  # grouped-query attention; None = heads (plain multi-head)
    gated: bool = True  # SwiGLU-style MLP (three ffn GEMMs instead of two)

    def __post_init__(self) -> None:
        for name in (*MODEL_FIELDS, "query_groups"):
            value = getattr(self, name)
            if value is None and name == "query_groups":
                continue
            if not SIZE.contains(value):
                raise UsageError(
                    f"model dimension {name} must be a positive integer <= {SIZE.hi:.0f}, got {shown(value)}"
                )
        if self.hidden % self.heads:
            raise UsageError(
                f"model dims are inconsistent: {self.heads} heads do not divide hidden size {self.hidden}"
            )
        groups = self.groups
        if self.heads % groups:
            raise UsageError(
                f"model dims are inconsistent: {groups} query groups do not divide {self.heads} heads"
            )

    @property
    def groups(self) -> int:
        return self.heads if self.query_groups is None else self.query_groups

    @classmethod
    def parse(cls, text: str) -> ModelDims:
        """``"hidden,layers,heads,ffn,vocab[,query_groups]"`` (the ``--model`` option) -> dims.

        >>> ModelDims.parse("4096,32,32,11008,32000").heads
        32
        """
        parts = [p.strip() for p in text.split(",")]
        if len(parts) not in (5, 6) or not all(p.isdigit() for p in parts):
            raise UsageError(
                f"{param('cost_model')} expects hidden,layers,heads,ffn,vocab[,query_groups] as integers, "
                f"got {text!r}"
            )
        values = [int(p) for p in parts]
        hidden, layers, heads, ffn, vocab = values[:5]
        groups = values[5] if len(values) == 6 else None
        return cls(hidden, layers, heads, ffn, vocab, query_groups=groups)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Dims of a 7B-like decoder (Llama-2-7B's shape), the cost model used when no ``--model`` is given.
DEFAULT_DIMS = ModelDims(hidden=4096, layers=32, heads=32, ffn=11008, vocab=32000)


@dataclass(frozen=True)
class CostModel:
    """``cost(pack) = dense * tokens + attention * sum(L_i**2)`` in FLOPs of one forward+backward pass.

    ``dense`` is FLOPs per token, ``attention`` FLOPs per squared sequence length. Only the ratio
    matters for balancing; the absolute values make FLOPs per step meaningful.
    """

    dense: float
    attention: float
    dims: ModelDims | None = None

    @classmethod
    def from_dims(cls, dims: ModelDims) -> CostModel:
        """Megatron-LM's counts (module docstring) for ``dims``."""
        h = dims.hidden
        qkv = h * (h + 2 * h * dims.groups // dims.heads)
        mlp = (3 if dims.gated else 2) * h * dims.ffn
        per_layer = qkv + h * h + mlp
        scale = FORWARD_BACKWARD_FACTOR * FMA_FACTOR
        dense = scale * (dims.layers * per_layer + h * dims.vocab)
        # Core attention per token at length L: 2 GEMMs x 2 FLOPs x h x L, halved by the causal mask.
        attention = scale * dims.layers * h
        return cls(float(dense), float(attention), dims)

    @classmethod
    def default(cls) -> CostModel:
        return cls.from_dims(DEFAULT_DIMS)

    @property
    def crossover_length(self) -> float:
        """Sequence length at which a token's attention FLOPs equal its dense FLOPs."""
        return self.dense / self.attention

    def sequence_costs(self, lengths: npt.ArrayLike) -> FloatArray:
        """Cost of each sequence on its own: ``dense * L + attention * L**2``."""
        values = np.asarray(lengths, dtype=np.float64)
        return self.dense * values + self.attention * values * values

    def to_record(self) -> dict[str, Any]:
        """What the packing metadata records under ``"bridgepack"`` (``cost_model``)."""
        return {
            "formula": "dense * sum(L) + attention * sum(L^2)  (FLOPs, forward+backward)",
            "source": "Megatron-LM num_floating_point_operations (dense decoder, causal attention)",
            "dense_flops_per_token": self.dense,
            "attention_flops_per_squared_length": self.attention,
            "model": None if self.dims is None else self.dims.to_dict(),
        }


def resolve_cost_model(dims: ModelDims | None) -> CostModel:
    """The cost model of ``dims``, or the default (7B-like) one."""
    return CostModel.default() if dims is None else CostModel.from_dims(dims)


def squared_sums(lengths: npt.ArrayLike, pack_offsets: npt.ArrayLike, items: npt.ArrayLike) -> FloatArray:
    """``sum(L_i**2)`` per pack of a CSR plan (packs are never empty), in float64."""
    offsets = np.asarray(pack_offsets, dtype=np.int64)
    if offsets.shape[0] <= 1:
        return np.zeros(0, dtype=np.float64)
    values = np.asarray(lengths, dtype=np.float64)[np.asarray(items, dtype=np.int64)]
    return np.add.reduceat(values * values, offsets[:-1])


def pack_costs(plan: PackPlan, model: CostModel) -> tuple[FloatArray, FloatArray]:
    """``(dense, attention)`` FLOPs of every pack of ``plan`` under ``model``."""
    dense = model.dense * plan.pack_sums.astype(np.float64)
    attention = model.attention * squared_sums(plan.lengths, plan.pack_offsets, plan.items)
    return dense, attention
