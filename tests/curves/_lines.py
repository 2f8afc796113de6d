"""Build log lines in the documented formats (bridge-format §10) for what the real excerpts lack."""

from __future__ import annotations


def mlm_line(
    iteration: int,
    loss: float | str | None = 9.5,
    *,
    total: int = 1000,
    timestamp: str | None = None,
    prefix: str = "",
    loss_key: str = "lm loss",
    time_ms: float = 123.4,
    time_unit: str = "ms",
    skipped: int = 0,
    nans: int = 0,
    extra: str = "",
) -> str:
    """One Megatron-LM iteration line; ``loss=None`` leaves the loss off, as Megatron does for NaN."""
    stamp = f" [{timestamp}]" if timestamp else ""
    time_value = time_ms if time_unit == "ms" else time_ms / 1000
    fields = [
        f"consumed samples: {iteration * 32:12d}",
        f"elapsed time per iteration ({time_unit}): {time_value}",
        "learning rate: 2.700000E-04",
        "global batch size:    32",
    ]
    if loss is not None:
        text = loss if isinstance(loss, str) else f"{loss:E}"
        fields.append(f"{loss_key}: {text}")
    fields += ["loss scale: 1.0", "grad norm: 1.234"]
    if extra:
        fields.append(extra)
    fields += [f"number of skipped iterations: {skipped:3d}", f"number of nan iterations: {nans:3d}"]
    return f"{prefix}{stamp} iteration {iteration:8d}/{total:8d} | " + " | ".join(fields) + " |"


def nemo_line(iteration: int, loss: float, *, last: int = 19) -> str:
    """One NeMo 2.x Lightning line (iterations from 0)."""
    fields = [
        f"Training epoch 0, iteration {iteration}/{last}",
        "lr: 1.499e-07",
        f"consumed_samples: {64 * (iteration + 1)}",
        "global_batch_size: 64",
        f"global_step: {iteration}",
        f"reduced_train_loss: {loss}",
        "train_step_timing in s: 0.4531",
    ]
    return " | ".join(fields)


def validation_block(iteration: int, loss: float, where: str = "") -> str:
    """A dashed validation block; ``where`` is e.g. `` on test set``."""
    dash = "-" * 90
    fields = [
        f" validation loss at iteration {iteration}{where}",
        f"lm loss value: {loss:E}",
        "lm loss PPL: 1.0E+04",
    ]
    return f"{dash}\n{' | '.join(fields)} | \n{dash}"
