"""The tiny Llama-style model and the memory check that runs before anything is allocated.

The estimate is deliberately simple and on the high side, so a run that would exhaust the machine is
refused with the numbers instead of dying in the allocator (or swapping the machine to a halt):

* parameters ``P = 2*V*h + L*(4*h*h + 3*h*f + 2*h) + h`` (untied embeddings, full-head K/V, SwiGLU MLP);
* state ``16*P`` bytes in float32: weights, gradients, two AdamW moments;
* activations per micro-batch of ``B x T`` slots: ``L * B*T * (16*h + 2*f) * 4`` bytes kept for backward,
  ``2 * B*heads*T*T * 4`` for one layer's attention scores (SDPA's math path materialises them on CPU), and
  ``3 * B*T*V * 4`` for the logits, their log-softmax and its gradient.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from seqpack.errors import UsageError

#: Share of the available memory a run may plan to use; the rest is headroom for the allocator and Python.
MEMORY_HEADROOM = 0.9
_FLOAT32 = 4


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes a run needs per process, split the way the refusal message reports it."""

    parameters: int
    state_bytes: int
    activation_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.state_bytes + self.activation_bytes


def count_parameters(hidden: int, layers: int, ffn: int, vocab: int) -> int:
    """Parameters of the model :func:`build_model` makes (checked against ``numel`` in the tests)."""
    return 2 * vocab * hidden + layers * (4 * hidden * hidden + 3 * hidden * ffn + 2 * hidden) + hidden


def estimate_memory(
    *, hidden: int, layers: int, heads: int, ffn: int, vocab: int, rows: int, width: int
) -> MemoryEstimate:
    """The estimate of the module docstring for a micro-batch of ``rows x width`` slots."""
    params = count_parameters(hidden, layers, ffn, vocab)
    slots = rows * width
    activations = _FLOAT32 * (
        layers * slots * (16 * hidden + 2 * ffn) + 2 * rows * heads * width * width + 3 * slots * vocab
    )
    return MemoryEstimate(parameters=params, state_bytes=16 * params, activation_bytes=activations)


def available_memory(device: torch.device) -> int:
    """Bytes this process may use: free GPU memory, or ``MemAvailable`` shared by the local processes."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 // max(local, 1)
    except OSError:
        pass
    pages = os.sysconf("SC_AVPHYS_PAGES") if hasattr(os, "sysconf") else 0
    return int(pages * os.sysconf("SC_PAGE_SIZE")) // max(local, 1) if pages else 1 << 62


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def check_memory(estimate: MemoryEstimate, available: int, *, what: str) -> None:
    """Refuse (exit 2) when the estimate exceeds :data:`MEMORY_HEADROOM` of ``available``."""
    if estimate.total_bytes > MEMORY_HEADROOM * available:
        raise UsageError(
            f"model too large for this machine: {estimate.parameters:,} parameters need about "
            f"{_gib(estimate.state_bytes)} (weights, gradients, AdamW) plus "
            f"{_gib(estimate.activation_bytes)} "
            f"of activations for {what} = {_gib(estimate.total_bytes)}, but {_gib(available)} is available; "
            "use smaller --hidden/--layers/--ffn/--vocab or a smaller --mbs"
        )


def build_model(
    *, hidden: int, layers: int, heads: int, ffn: int, vocab: int, max_positions: int, seed: int
) -> torch.nn.Module:
    """A randomly initialised ``LlamaForCausalLM`` (SDPA attention), the same weights for the same seed."""
    from transformers import LlamaConfig, LlamaForCausalLM

    if hidden % heads:
        raise UsageError(f"--hidden {hidden} must be divisible by --heads {heads}")
    if (hidden // heads) % 2:  # rotary embeddings rotate pairs of channels
        raise UsageError(
            f"--hidden {hidden} / --heads {heads} = {hidden // heads}: the head size must be even"
        )
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=ffn,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=False,
        use_cache=False,
    )
    config._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)
