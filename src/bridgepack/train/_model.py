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

from bridgepack.errors import UsageError, param
from bridgepack.packing import ModelDims

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


def count_parameters(dims: ModelDims) -> int:
    """Parameters of the model :func:`build_model` makes (checked against ``numel`` in the tests)."""
    h, f, v = dims.hidden, dims.ffn, dims.vocab
    return 2 * v * h + dims.layers * (4 * h * h + 3 * h * f + 2 * h) + h


def estimate_memory(dims: ModelDims, *, rows: int, width: int) -> MemoryEstimate:
    """The estimate of the module docstring for a micro-batch of ``rows x width`` slots."""
    params = count_parameters(dims)
    slots = rows * width
    activations = _FLOAT32 * (
        dims.layers * slots * (16 * dims.hidden + 2 * dims.ffn)
        + 2 * rows * dims.heads * width * width
        + 3 * slots * dims.vocab
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
            f"use smaller {'/'.join(param(n) for n in ('hidden', 'layers', 'ffn', 'vocab'))} or a smaller "
            f"{param('mbs')}"
        )


def build_model(dims: ModelDims, *, max_positions: int, seed: int) -> torch.nn.Module:
    """A randomly initialised ``LlamaForCausalLM`` (SDPA attention), the same weights for the same seed.

    ``dims`` is read as a plain multi-head SwiGLU decoder (K/V heads = heads), the shape
    :func:`count_parameters` counts.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    head_size = dims.hidden // dims.heads
    if head_size % 2:  # rotary embeddings rotate pairs of channels
        raise UsageError(
            f"{param('hidden')} {dims.hidden} / {param('heads')} {dims.heads} = {head_size}: the head size "
            "must be even"
        )
    config = LlamaConfig(
        vocab_size=dims.vocab,
        hidden_size=dims.hidden,
        intermediate_size=dims.ffn,
        num_hidden_layers=dims.layers,
        num_attention_heads=dims.heads,
        num_key_value_heads=dims.heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=False,
        use_cache=False,
    )
    config._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)
