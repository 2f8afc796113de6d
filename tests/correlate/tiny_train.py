"""A tiny real training run that logs like Megatron-LM (bridge-format §10), for the ``correlate run`` tests.

A two-layer MLP language model learns a synthetic next-token rule (``t[i+1] = (3 t[i] + 1) mod V``, with
some noise) with Adam on CPU, one thread, fully seeded: two runs with the same flags print the same losses.
It reads the knobs it knows from Megatron-LM flags (``--lr 0.01``) or Bridge overrides (``optimizer.lr=0.01``)
and ignores everything else, so a plan's two commands can both run it.

    python tiny_train.py --lr 0.01 --seed 3 --train-iters 20 [--fail-at 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time

import torch

VOCAB = 64
SEQ = 16
HIDDEN = 32

# Bridge override key -> Megatron-LM flag, for the knobs this script uses.
BRIDGE_KEYS = {
    "optimizer.lr": "--lr",
    "rng.seed": "--seed",
    "train.train_iters": "--train-iters",
    "train.global_batch_size": "--global-batch-size",
}


def parse(argv: list[str]) -> argparse.Namespace:
    flags = []
    for item in argv:
        key, eq, value = item.partition("=")
        if eq and key in BRIDGE_KEYS:
            flags += [BRIDGE_KEYS[key], value]
        else:
            flags.append(item)
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--train-iters", type=int, default=20)
    parser.add_argument("--global-batch-size", type=int, default=8)
    parser.add_argument("--fail-at", type=int, default=0, help="raise at this iteration (a crashing run)")
    args, _ = parser.parse_known_args(flags)
    return args


def batch(gen: torch.Generator, size: int) -> torch.Tensor:
    start = torch.randint(0, VOCAB, (size, 1), generator=gen)
    steps = [start]
    for _ in range(SEQ - 1):
        noise = (torch.rand((size, 1), generator=gen) < 0.1).long() * torch.randint(
            0, VOCAB, (size, 1), generator=gen
        )
        steps.append((3 * steps[-1] + 1 + noise) % VOCAB)
    return torch.cat(steps, dim=1)


def main() -> int:
    args = parse(sys.argv[1:])
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    data_gen = torch.Generator().manual_seed(args.seed + 1)
    model = torch.nn.Sequential(
        torch.nn.Embedding(VOCAB, HIDDEN),
        torch.nn.Linear(HIDDEN, HIDDEN),
        torch.nn.GELU(),
        torch.nn.Linear(HIDDEN, VOCAB),
    )
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    gbs = args.global_batch_size
    for it in range(1, args.train_iters + 1):
        if it == args.fail_at:
            raise RuntimeError(f"simulated crash at iteration {it}")
        start = time.perf_counter()
        tokens = batch(data_gen, gbs)
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        ms = (time.perf_counter() - start) * 1000
        stamp = dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")
        print(
            f" [{stamp}] iteration {it:8d}/{args.train_iters:8d} | consumed samples: {it * gbs:12d} |"
            f" elapsed time per iteration (ms): {ms:.1f} | learning rate: {args.lr:.6E} |"
            f" global batch size: {gbs:5d} | lm loss: {loss.item():.6E} | loss scale: 1.0 |"
            f" grad norm: {grad_norm:.3f} | number of skipped iterations: {0:3d} |"
            f" number of nan iterations: {0:3d} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
