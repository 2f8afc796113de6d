"""Metric names: every reader speaks Megatron-LM's TensorBoard / golden-value names.

A log prints ``elapsed time per iteration (ms): 123.4`` while golden JSON and TensorBoard say
``iteration-time`` (seconds); NeMo 2.x says ``reduced_train_loss``; old forks say ``lm-loss``. Mapping all of
them to one name (and one unit) here is what lets a log be compared with a golden file (bridge-format §10-11).
Keys that have no TensorBoard twin (``load_balancing_loss``, ``mtp_1 loss``) keep their printed name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from bridgepack.errors import DataError, UsageError, param, shown

if TYPE_CHECKING:
    from bridgepack.curves._series import Curves

# printed key -> (canonical name, factor to the canonical unit). Spec §10 (log lines), §11 (golden names).
LOG_KEYS: dict[str, tuple[str, float]] = {
    "lm loss": ("lm loss", 1.0),
    "lm-loss": ("lm loss", 1.0),  # Megatron v1 forks
    "reduced_train_loss": ("lm loss", 1.0),  # NeMo 2.x Lightning line
    "elapsed time per iteration (ms)": ("iteration-time", 1e-3),
    "elapsed time per iteration (s)": ("iteration-time", 1.0),  # old forks print seconds
    "train_step_timing in s": ("iteration-time", 1.0),  # NeMo 2.x
    "learning rate": ("learning-rate", 1.0),
    "lr": ("learning-rate", 1.0),
    "global batch size": ("batch-size", 1.0),
    "global_batch_size": ("batch-size", 1.0),
    "consumed samples": ("consumed-samples", 1.0),
    "consumed_samples": ("consumed-samples", 1.0),
    "consumed tokens": ("consumed-tokens", 1.0),
    "loss scale": ("loss-scale", 1.0),
    "grad norm": ("grad-norm", 1.0),
    "num zeros": ("num-zeros", 1.0),
    "params norm": ("params-norm", 1.0),
    "number of skipped iterations": ("skipped-iterations", 1.0),
    "number of nan iterations": ("nan-iterations", 1.0),
    "throughput per GPU (TFLOP/s/GPU)": ("throughput", 1.0),
    "global_step": ("global-step", 1.0),
    "val_loss": ("lm loss validation", 1.0),  # NeMo 2.x
}

# Hugging Face Trainer names (``trainer_state.json`` keys; TensorBoard and W&B tags) -> canonical names.
HF_KEYS: dict[str, str] = {
    "loss": "lm loss",
    "train/loss": "lm loss",
    "grad_norm": "grad-norm",
    "train/grad_norm": "grad-norm",
    "learning_rate": "learning-rate",
    "train/learning_rate": "learning-rate",
    "eval_loss": "lm loss validation",
    "eval/loss": "lm loss validation",
    "train/epoch": "epoch",
}

LOSS = "lm loss"
SKIPPED = "skipped-iterations"
NAN_ITERS = "nan-iterations"
STEP_TIME = "step-time"  # Bridge's ``Step Time : 0.81s`` line, seconds
GPU_UTILIZATION = "gpu-utilization"  # Bridge's ``GPU utilization: 123.4MODEL_TFLOP/s/GPU``

# Golden-value JSON metrics Megatron-LM writes (bridge-format §11) and the canonical names they come from.
GOLDEN_METRICS: tuple[str, ...] = (
    "lm loss",
    "num-zeros",
    "mem-allocated-bytes",
    "mem-max-allocated-bytes",
    "iteration-time",
)


def canonical(name: str) -> str:
    """The canonical name of a metric as a user or a file spells it (``grad norm`` -> ``grad-norm``)."""
    key = name.strip()
    if key in LOG_KEYS:
        return LOG_KEYS[key][0]
    return HF_KEYS.get(key, key)


def canonical_names(source: str, names: Iterable[str], kind: str = "columns") -> dict[str, str]:
    """``{name: canonical name}`` of the metric names one file holds, refusing two that read as one.

    ``loss`` and ``train/loss`` (or ``lm loss`` and ``lm-loss``) are both the loss: kept side by side, the
    later one replaced the earlier without a word, and which was compared depended on the column order.
    Names that only resemble a metric (``train/loss_scale``, ``loss (smoothed)``) are not the metric and
    keep their own names.
    """
    found: dict[str, str] = {}
    owner: dict[str, str] = {}
    for name in names:
        name_is = canonical(name)
        first = owner.setdefault(name_is, name)
        if first != name:
            raise DataError(
                f"{source}: {kind} {shown(first)} and {shown(name)} both read as {shown(name_is)}; "
                "keep one of them"
            )
        found[name] = name_is
    return found


def parse_metric_map(pairs: list[str]) -> dict[str, str]:
    """``["train/my_loss=lm loss"]`` -> ``{canonical source name: canonical target name}``."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        src, sep, dst = pair.partition("=")
        if not sep or not src.strip() or not dst.strip():
            raise UsageError(
                f"{param('metric_map')}: expected NAME=CANONICAL (e.g. 'train/loss=lm loss'), found {pair!r}"
            )
        mapping[canonical(src)] = canonical(dst)
    return mapping


def rename_metrics(curves: Curves, mapping: dict[str, str]) -> None:
    """Rename ``curves``' metrics per ``mapping`` (from :func:`parse_metric_map`), in place.

    Keys are canonical, so a built-in name maps onto itself (``train/loss=lm loss`` changes nothing).
    """
    for src, dst in mapping.items():
        if src == dst or src not in curves.metrics:
            continue
        if dst in curves.metrics:
            curves.notes.append(f"{curves.source}: '{src}' mapped onto '{dst}', which replaces the run's own")
        curves.metrics[dst] = curves.metrics.pop(src)
        if src in curves.missing:
            curves.missing[dst] = curves.missing.pop(src)
