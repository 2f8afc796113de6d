"""The reference training loop: per-token loss over the global batch, AdamW, data parallel by hand.

Loss (bridge-format §9, ``calculate_per_token_loss``): every micro-batch contributes ``sum(loss * mask)``; the
gradient of each is divided by the masked-token count of the *whole global batch* (all micro-batches, all
ranks, summed with one all-reduce before the forward passes), and the ranks' gradients are summed. So the
step minimises the exact global per-token mean, independent of how the tokens are split into rows,
micro-batches or processes -- which is why packed vs padded and 1 vs K processes give the same curve.

Data parallel: started by ``torchrun`` (``RANK``/``WORLD_SIZE`` in the environment), gloo on CPU and NCCL
on GPU. Every rank builds the same model from the seed, takes ``batch[rank::world]`` of each global batch
and all-reduces gradients, loss sums and token counts, so all ranks take identical optimizer steps.

Ctrl-C (SIGINT) or SIGTERM asks the run to stop: the current step finishes, the ranks agree to stop (one
all-reduce per step), the log is flushed and the result says ``interrupted=True``.

:func:`train` reads as the recipe: :func:`_setup` (steps, memory check, model, optimizer, sampler, collator,
log), :func:`_train_steps` (one :func:`_step` each: collate, all-reduce the counts, forward/backward,
gradients summed, clipped, stepped), cleanup (the log closed, the process group left).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import TextIO

import torch
import torch.distributed as dist
import torch.nn.functional as F

from bridgepack.batching import GlobalBatchSampler, PackedCollator
from bridgepack.errors import UsageError, param
from bridgepack.train._config import DataMode, StepRecord, TrainConfig, TrainResult
from bridgepack.train._data import TrainingData, check_pad_to, load_training_data
from bridgepack.train._log import RunLog
from bridgepack.train._model import available_memory, build_model, check_memory, estimate_memory
from bridgepack.train._steps import MicroBatch, rank_batches, rank_microbatches

StepHook = Callable[[StepRecord], None]


class _StopFlag:
    """Set by SIGINT/SIGTERM; a second Ctrl-C raises ``KeyboardInterrupt`` at once."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True


@contextlib.contextmanager
def _stop_on_signals(flag: _StopFlag) -> Iterator[None]:
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, flag) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _device(name: str) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(f"{param('device')} cuda: no CUDA device is available (use cpu or auto)")
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    if name != "cpu":
        raise UsageError(f"{param('device')} must be cpu, cuda or auto, got {name!r}")
    return torch.device("cpu")


@contextlib.contextmanager
def _distributed(device: torch.device) -> Iterator[tuple[int, int]]:
    """(rank, world): joins the process group torchrun describes, or runs alone without one."""
    if dist.is_available() and dist.is_initialized():
        yield dist.get_rank(), dist.get_world_size()
        return
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        yield 0, 1
        return
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    try:
        yield dist.get_rank(), dist.get_world_size()
        # Every rank done talking before any tears the group down: without it a rank that destroys
        # first can close gloo's sockets under its peer, which then aborts at exit (SIGABRT).
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _all_sum(values: list[float], world: int, device: torch.device) -> list[float]:
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    if world > 1:
        dist.all_reduce(tensor)
    return [float(v) for v in tensor.tolist()]


def _reduce_gradients(params: list[torch.nn.Parameter], world: int) -> None:
    """Sum gradients across ranks in one flat buffer (each rank already divided by the global count)."""
    if world <= 1:
        return
    grads = [p.grad for p in params if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[offset : offset + n].view_as(g))
        offset += n


def _forward_backward(
    model: torch.nn.Module,
    micro: list[MicroBatch],
    denominator: float,
    autocast: contextlib.AbstractContextManager[object],
    device: torch.device,
) -> float:
    """Accumulate the gradient of ``sum(token loss * mask) / denominator``; return the unscaled sum.

    No ``attention_mask`` and ``use_cache=False``: transformers then reads the restarting ``position_ids``
    of a packed row as sequence boundaries and attends only within each sequence.
    """
    total = 0.0
    for m in micro:
        with autocast:
            logits = model(
                input_ids=m.tokens.to(device), position_ids=m.position_ids.to(device), use_cache=False
            ).logits
        token_loss = F.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]), m.labels.to(device).reshape(-1), reduction="none"
        )
        masked = (token_loss * m.loss_mask.to(device).reshape(-1)).sum()
        (masked / denominator).backward()
        total += float(masked.detach())
    return total


def _plan_steps(config: TrainConfig, num_rows: int, world: int) -> int:
    """The number of steps, after the batch-divisibility rules of bridge-format §8."""
    if config.gbs < 1 or config.mbs < 1:
        raise UsageError(f"{param('gbs')} and {param('mbs')} must be >= 1, got {config.gbs} and {config.mbs}")
    if config.gbs % (config.mbs * world):
        raise UsageError(
            f"{param('gbs')} {config.gbs} must be a multiple of {param('mbs')} x processes = "
            f"{config.mbs} x {world} (docs/bridge-format.md §8)"
        )
    per_epoch = num_rows // config.gbs
    if per_epoch == 0:
        raise UsageError(f"{param('gbs')} {config.gbs} is larger than the {num_rows} packs of {config.data}")
    if config.steps is not None and config.epochs is not None:
        raise UsageError(f"give {param('steps')} or {param('epochs')}, not both")
    if config.steps is not None:
        if config.steps < 1:
            raise UsageError(f"{param('steps')} must be >= 1, got {config.steps}")
        return config.steps
    epochs = 1 if config.epochs is None else config.epochs
    if epochs < 1:
        raise UsageError(f"{param('epochs')} must be >= 1, got {epochs}")
    return epochs * per_epoch


def _check_outputs(config: TrainConfig) -> None:
    if config.log is not None and config.log.exists() and not config.overwrite:
        raise UsageError(f"{config.log}: exists (pass {param('overwrite')} to replace it)")
    if config.log_interval < 1:
        raise UsageError(f"{param('log_interval')} must be >= 1, got {config.log_interval}")
    if config.dtype not in ("float32", "bfloat16"):
        raise UsageError(f"{param('dtype')} must be float32 or bfloat16, got {config.dtype!r}")


def train(
    config: TrainConfig, *, on_step: StepHook | None = None, stream: TextIO | None = None
) -> TrainResult:
    """Run one reference training and return what it did: set up, take the steps, clean up.

    ``stream`` receives the Megatron-LM log lines (default: stdout unless ``config.quiet``); ``on_step`` is
    called on every rank after every optimizer step (progress bars, the demo). Raises
    :class:`~bridgepack.errors.BridgepackError` for bad input before any model memory is allocated.
    """
    _check_outputs(config)
    device = _device(config.device)
    data = load_training_data(
        config.data, pack_size=config.pack_size, pad_multiple=config.pad_multiple, vocab=config.model.vocab
    )
    padded_length = check_pad_to(data, config.pad_to) if config.mode is DataMode.padded else None
    with _distributed(device) as (rank, world):
        run = _setup(config, data, padded_length, device, rank, world, stream)
        try:
            records = _train_steps(run, on_step)
        finally:
            run.log.close()
    return _result(config, records, run.steps, len(records) < run.steps, world, run.parameters)


@dataclass
class _Run:
    """What every step uses, made once by :func:`_setup` on each rank."""

    config: TrainConfig
    data: TrainingData
    padded_length: int | None  # rows padded to this width (padded mode), else packs of the pack size
    device: torch.device
    world: int
    steps: int
    parameters: int
    model: torch.nn.Module
    params: list[torch.nn.Parameter]
    optimizer: torch.optim.Optimizer
    autocast: contextlib.AbstractContextManager[object]
    sampler: GlobalBatchSampler
    collator: PackedCollator
    log: RunLog


def _setup(
    config: TrainConfig,
    data: TrainingData,
    padded_length: int | None,
    device: torch.device,
    rank: int,
    world: int,
    stream: TextIO | None,
) -> _Run:
    """The steps to take, the memory check, then the model, optimizer, sampler, collator and log."""
    steps = _plan_steps(config, data.num_rows, world)
    if padded_length is not None:
        mb_rows, width = config.mbs * data.max_sequences_per_pack, padded_length
    else:
        mb_rows, width = config.mbs, data.pack_size
    estimate = estimate_memory(config.model, rows=mb_rows, width=width)
    available = config.memory_limit if config.memory_limit is not None else available_memory(device)
    check_memory(estimate, available, what=f"micro-batches of {mb_rows} x {width} slots")
    model = build_model(config.model, max_positions=max(width, data.pack_size), seed=config.seed).to(device)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        params,
        lr=config.lr,
        betas=(config.adam_beta1, config.adam_beta2),
        eps=config.adam_eps,
        weight_decay=config.weight_decay,
    )
    logging_rank = rank == world - 1
    console = stream if stream is not None else (None if config.quiet else sys.stdout)
    log = RunLog(
        stream=console if logging_rank else None,
        path=config.log if logging_rank else None,
        tensorboard=config.tensorboard if logging_rank else None,
        interval=config.log_interval,
    )
    autocast: contextlib.AbstractContextManager[object] = (
        torch.autocast(device.type, dtype=torch.bfloat16)
        if config.dtype == "bfloat16"
        else contextlib.nullcontext()
    )
    sampler = GlobalBatchSampler(
        data.num_rows, config.gbs, rank, world, micro_batch_size=config.mbs, seed=config.seed
    )
    collator = PackedCollator(
        data.eos_id,
        data.pack_size,
        pad_seq_length_to_mult=config.width_multiple,
        pad_seq_to_mult=data.pad_multiple or 1,
    )
    return _Run(
        config,
        data,
        padded_length,
        device,
        world,
        steps,
        estimate.parameters,
        model,
        params,
        optimizer,
        autocast,
        sampler,
        collator,
        log,
    )


def _train_steps(run: _Run, on_step: StepHook | None) -> list[StepRecord]:
    """Every step, until the last or until a rank is asked to stop (the ranks agree before each step)."""
    flag = _StopFlag()
    records: list[StepRecord] = []
    with _stop_on_signals(flag):
        batches = rank_batches(run.sampler)
        for step in range(run.steps):
            if step and _all_sum([float(flag.requested)], run.world, run.device)[0] > 0:
                break
            record = _step(run, step, next(batches), consumed=records[-1].consumed_samples if records else 0)
            records.append(record)
            run.log.step(record)
            if on_step is not None:
                on_step(record)
    run.log.flush_line()
    if len(records) < run.steps:
        run.log.note(f"# bridgepack train: stopped on request after iteration {len(records)} of {run.steps}")
    return records


def _step(run: _Run, step: int, batch: list[int], consumed: int) -> StepRecord:
    """One optimizer step on this rank's share of a global batch (``batch``: its pack indices)."""
    config, device, world = run.config, run.device, run.world
    start = time.perf_counter()
    micro = rank_microbatches(
        [run.data.dataset[i] for i in batch], run.collator, mbs=config.mbs, padded_length=run.padded_length
    )
    local = [
        float(sum(m.loss_tokens for m in micro)),
        float(sum(m.positions for m in micro)),
        float(sum(m.real_tokens for m in micro)),
        float(sum(m.tokens.shape[0] for m in micro)),
    ]
    loss_tokens, positions, real, rows = _all_sum(local, world, device)
    denominator = max(loss_tokens, 1.0)
    run.optimizer.zero_grad(set_to_none=False)
    loss_sum = _forward_backward(run.model, micro, denominator, run.autocast, device)
    _reduce_gradients(run.params, world)
    max_norm = config.clip_grad if config.clip_grad > 0 else math.inf
    grad_norm = float(torch.nn.utils.clip_grad_norm_(run.params, max_norm))
    run.optimizer.step()
    (global_loss_sum,) = _all_sum([loss_sum], world, device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return StepRecord(
        iteration=step + 1,
        total_iterations=run.steps,
        loss=global_loss_sum / denominator,
        grad_norm=grad_norm,
        learning_rate=config.lr,
        rows=int(rows),
        consumed_samples=consumed + int(rows),
        loss_tokens=int(loss_tokens),
        positions=int(positions),
        real_tokens=int(real),
        seconds=time.perf_counter() - start,
    )


def _result(
    config: TrainConfig, records: list[StepRecord], steps: int, interrupted: bool, world: int, parameters: int
) -> TrainResult:
    """Totals over all steps; throughput over the steps after the first (the first pays warm-up)."""
    timed = records[1:] if len(records) > 1 else records
    seconds = sum(r.seconds for r in timed)
    positions = sum(r.positions for r in records)
    real = sum(r.real_tokens for r in records)
    timed_positions = sum(r.positions for r in timed)
    timed_real = sum(r.real_tokens for r in timed)
    return TrainResult(
        mode=config.mode,
        world_size=world,
        steps_planned=steps,
        steps_done=len(records),
        interrupted=interrupted,
        losses=[r.loss for r in records],
        final_loss=records[-1].loss if records else math.nan,
        positions=positions,
        real_tokens=real,
        loss_tokens=sum(r.loss_tokens for r in records),
        seconds=sum(r.seconds for r in records),
        tokens_per_s=timed_positions / seconds if seconds > 0 else math.nan,
        real_tokens_per_s=timed_real / seconds if seconds > 0 else math.nan,
        padding_fraction=1.0 - real / positions if positions else math.nan,
        parameters=parameters,
        log_path=config.log,
        tensorboard_dir=config.tensorboard,
        records=records,
    )
