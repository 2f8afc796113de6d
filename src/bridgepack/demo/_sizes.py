"""How big the demo's run is: the full run (about a minute on two CPU cores) and ``--quick`` (seconds).

The full run trains one epoch over the bundled conversations (2,000 chats packed into ~170 packs of 512
tokens, global batches of 4 packs: ~42 optimizer steps). The model is tiny on purpose -- 2 layers, hidden
64 -- yet the per-token loss falls from ln(vocab) ~ 4.8 to ~ 2.2 within that epoch, because the chats are
templated tasks whose words and digits a small model picks up quickly.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DemoSizes:
    """Packing, model and optimizer sizes of one demo run (both training runs use the same)."""

    name: str
    #: Pack capacity N in runtime tokens; padded rows are padded to N as well (bridge-format §1: seq_length =
    #: N).
    pack_size: int
    hidden: int
    layers: int
    heads: int
    ffn: int
    #: Global batch in packs; the padded run takes the same packs' sequences in the same step.
    gbs: int
    lr: float
    #: Optimizer steps; ``None`` = one epoch over the packs.
    steps: int | None
    seed: int = 1234


FULL = DemoSizes(
    name="full", pack_size=512, hidden=64, layers=2, heads=4, ffn=128, gbs=4, lr=5e-3, steps=None
)
QUICK = DemoSizes(name="quick", pack_size=512, hidden=32, layers=1, heads=2, ffn=64, gbs=2, lr=5e-3, steps=4)

#: The model's vocabulary is the tokenizer's rounded up to this multiple (Megatron's
#: ``make_vocab_size_divisible_by`` does the same), so the embedding has room for every token id.
VOCAB_MULTIPLE = 64


def model_vocab(tokenizer_size: int) -> int:
    """``tokenizer_size`` rounded up to :data:`VOCAB_MULTIPLE` (118 -> 128)."""
    return -(-tokenizer_size // VOCAB_MULTIPLE) * VOCAB_MULTIPLE
