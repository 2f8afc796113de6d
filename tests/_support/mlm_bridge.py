"""Megatron-LM vs Megatron-Bridge config resolution as a test peer: one child interpreter for the whole run.

The child (``mlm_bridge_child.py``) resolves Megatron-LM command lines with Megatron-LM's own argparse and
``validate_args``, and Bridge recipes plus overrides with Bridge's own override machinery, ``finalize()`` and
``validate()``; both answer the same *view* of the training knobs. Cases are batched: a test module sends all
of its cases in one request, through the session fixture ``mlm_bridge_peer`` (``tests/conftest.py``: the
modules that use it share a worker, so the child starts once)::

    answers = mlm_bridge_peer.resolve([MlmCase("a", argv), BridgeCase("b", words)])
    knob_differences(answers["a"], answers["b"])   # [] when they train alike

The fixture starts the child (Bridge 0.6.2 and Megatron-Core 0.19.2 wheels first on its path) on first use
and closes it when the test run ends.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from _support.peers import bridge_wheel_root, megatron_core_wheel_root

CHILD = Path(__file__).resolve().parent / "mlm_bridge_child.py"
SRC = Path(__file__).resolve().parents[2] / "src"
#: What the ``${VAR}`` of the Megatron-LM functional-test configs stand for in these checks (paths only).
CASE_ENV = {
    "TENSORBOARD_PATH": "/runs/tb",
    "CHECKPOINT_SAVE_PATH": "/runs/ckpt",
    "CHECKPOINT_LOAD_PATH": "/runs/ckpt",
    "DATA_PATH": "/data",
    "DATA_CACHE_PATH": "/data/cache",
}

#: View keys that are no training knob, with why (everything else in the view must be equal).
NOT_KNOBS: Mapping[str, str] = {
    "ddp.data_parallel_sharding_strategy": "Megatron-FSDP only",
    "model.bias_activation_fusion": "a fused kernel for the same math",
    "model.bias_dropout_fusion": "a fused kernel for the same math",
    "model.cross_entropy_loss_fusion": "a fused kernel for the same math",
    "model.gradient_accumulation_fusion": "a fused kernel for the same math (needs TE or Apex)",
    "model.persist_layer_norm": "a fused kernel for the same math",
    "model.masked_softmax_fusion": "a fused kernel for the same math",
    "model.apply_rope_fusion": "a fused kernel for the same math",
    "model.expert_tensor_parallel_num_weight_shards": "1 and None both mean unsharded",
    "model.tensor_parallel_num_weight_shards": "1 and None both mean unsharded",
    "model.fp8_recipe": "read only with fp8",
    "optimizer.fp8_recipe": "read only with fp8",
    "model.num_layers_at_start_in_bf16": "read only with fp8/fp4",
    "model.num_layers_at_end_in_bf16": "read only with fp8/fp4",
    "model.inference_sampling_seed": "inference only",
    "model.use_cpu_initialization": "None and False both initialise on the GPU",
    "optimizer.barrier_with_L1_time": "timer barriers, no effect on the numbers",
    "optimizer.muon_momentum": "read only by the Muon optimizer",
    "optimizer.optimizer_offload_fraction": "read only with optimizer CPU offload",
    "optimizer.weight_decay": "the scheduler sets every group's weight decay each step (schedule.wd@*)",
    "model.batch_p2p_comm": "how pipeline stages exchange activations (same values)",
    "model.overlap_p2p_comm": "how pipeline stages exchange activations (same values)",
    "ddp.align_param_gather": "when parameters are all-gathered (same values)",
    "model.transformer_impl": (
        "which modules run the layers (Transformer Engine or Megatron-Core's local ones, the same math);"
        " Bridge builds them from model.transformer_layer_spec, not this field (--transformer-impl:"
        " untranslated)"
    ),
}
#: View keys read only under a condition on the same view: key -> (condition key, values where it is read).
READ_WHEN: Mapping[str, tuple[str, tuple[Any, ...]]] = {
    "model.cp_comm_type": ("model.context_parallel_size", tuple(range(2, 1025))),
    "model.pipeline_dtype": ("model.pipeline_model_parallel_size", tuple(range(2, 1025))),
    "schedule.lr_wsd_decay_style": ("schedule.lr_decay_style", ("WSD",)),
}


@dataclass(frozen=True)
class MlmCase:
    """A ``pretrain_gpt.py`` command line (``${VAR}`` expanded from :data:`CASE_ENV`) on ``world_size``
    processes."""

    id: str
    argv: tuple[str, ...]
    world_size: int = 1

    def request(self) -> dict[str, Any]:
        argv = [_expand(word) for word in self.argv]
        return {"id": self.id, "side": "mlm", "argv": argv, "world_size": self.world_size}


@dataclass(frozen=True)
class BridgeCase:
    """``run_recipe.py --recipe RECIPE`` with ``words`` (argv words, after the shell) on ``world_size``."""

    id: str
    words: tuple[str, ...]
    world_size: int = 1
    recipe: str = "vanilla_gpt_pretrain_config"

    @classmethod
    def from_lines(cls, id: str, lines: Iterable[str], world_size: int = 1) -> BridgeCase:
        """From ``bridgepack translate``'s printed lines, as a shell reads them (comments dropped)."""
        words = [w for line in lines if line and not line.startswith("#") for w in shlex.split(line)]
        return cls(id, tuple(words), world_size)

    def request(self) -> dict[str, Any]:
        words = [_expand(word) for word in self.words]
        return {
            "id": self.id,
            "side": "bridge",
            "recipe": self.recipe,
            "overrides": words,
            "world_size": self.world_size,
        }


def _expand(word: str) -> str:
    """``${VAR}`` as the shell expands it inside double quotes (only :data:`CASE_ENV`'s names)."""
    for name, value in CASE_ENV.items():
        word = word.replace("${" + name + "}", value)
    return word


def is_knob(key: str, view: Mapping[str, Any]) -> bool:
    """Whether ``key`` is a training knob of a run resolved to ``view`` (:data:`NOT_KNOBS`,
    :data:`READ_WHEN`)."""
    if key in NOT_KNOBS:
        return False
    condition = READ_WHEN.get(key)
    return condition is None or view.get(condition[0]) in condition[1]


def knob_differences(
    mlm: Mapping[str, Any], bridge: Mapping[str, Any], also: Iterable[str] = ()
) -> list[str]:
    """Every training knob (and every key of ``also``) on which the two resolved views differ (``[]``: they
    train alike)."""
    assert "view" in mlm, f"Megatron-LM did not resolve: {mlm}"
    assert "view" in bridge, f"Bridge did not resolve: {bridge}"
    a, b = mlm["view"], bridge["view"]
    extra = set(also)
    return [
        f"{key}: Megatron-LM {a.get(key)!r} vs Bridge {b.get(key)!r}"
        for key in sorted(set(a) | set(b))
        if (key in extra or is_knob(key, a)) and not _same(a.get(key), b.get(key))
    ]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    return (bool(a == b) and type(a) is type(b)) or (isinstance(a, int | float) and a == b)


class MlmBridge:
    """The child process and its pipes; requests are serialised (one at a time)."""

    def __init__(self) -> None:
        env = {**os.environ, "BRIDGEPACK_SRC": str(SRC)}
        self._proc = subprocess.Popen(
            [sys.executable, str(CHILD), str(bridge_wheel_root()), str(megatron_core_wheel_root())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self._log: list[str] = []
        assert self._proc.stderr is not None
        threading.Thread(target=self._drain, args=(self._proc.stderr,), daemon=True).start()
        self._lock = threading.Lock()
        self.stand_ins: list[str] = self._read()["stand_ins"]

    def _drain(self, stream: IO[str]) -> None:
        for line in stream:
            self._log.append(line)
            del self._log[:-200]

    def _read(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("the Megatron-LM/Bridge child died:\n" + "".join(self._log[-40:]))
        return json.loads(line)

    def resolve(self, cases: Iterable[MlmCase | BridgeCase]) -> dict[str, dict[str, Any]]:
        """Each case's answer by id: ``{"view": ...}``, ``{"refused": why}`` or ``{"error", "trace"}``."""
        assert self._proc.stdin is not None
        with self._lock:
            self._proc.stdin.write(json.dumps({"cases": [case.request() for case in cases]}) + "\n")
            self._proc.stdin.flush()
            results: dict[str, dict[str, Any]] = self._read()["results"]
        crashed = {k: v["trace"] for k, v in results.items() if "error" in v}
        assert not crashed, f"the peer crashed on {sorted(crashed)}:\n{next(iter(crashed.values()))}"
        return results

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=60)
