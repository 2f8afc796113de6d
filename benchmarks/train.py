"""Packed vs padded reference training of the same samples: real tokens per second and the loss curves.

Builds pre-tokenized samples with lognormal lengths (median ``pack/8``, clipped to ``[8, pack]``), packs
them with ``bridgepack pack``, then trains the same tiny Llama twice with ``bridgepack.train.train``: on the
packs
(``--data``) and on the same sequences one per row, right-padded to the pack size (``--padded-from``).
Both runs take the same optimizer steps over the same samples, so their loss curves must agree; what
differs is the compute: the padded run pushes every sequence through ``pack`` slots.

Timed region: the optimizer steps after the first (``TrainResult.tokens_per_s``), model forward, backward
and AdamW included; data loading and collate inside each step are included too. Prints a table and writes
``benchmarks/results/train.json``. Run from the repository root with ``src`` and ``tests`` importable::

    python benchmarks/train.py                                   # CPU, float32
    python benchmarks/train.py --device cuda --dtype bfloat16 --pack 4096 --hidden 1024 --layers 8
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import sys
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy as np
import orjson
import torch

from bridgepack.cli import main as bridgepack_main
from bridgepack.packing import ModelDims
from bridgepack.train import DataMode, TrainConfig, train

EOS = 2


def _samples(path: Path, n: int, pack: int, vocab: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(np.log(pack / 8), 0.9, size=n).astype(int), 8, pack)
    with path.open("wb") as out:
        for r in lengths:
            ids = [*rng.integers(3, vocab, size=int(r)).tolist(), EOS]
            out.write(orjson.dumps({"input_ids": ids}) + b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--pack", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=512)
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--gbs", type=int, default=8)
    parser.add_argument("--mbs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    results: dict[str, Any] = {}
    with TemporaryDirectory() as tmp:
        samples = Path(tmp) / "samples.jsonl"
        _samples(samples, args.samples, args.pack, args.vocab, seed=0)
        with contextlib.redirect_stdout(io.StringIO()):
            code = bridgepack_main(
                [
                    "pack",
                    str(samples),
                    "--out",
                    f"{tmp}/packed",
                    "--pack-size",
                    str(args.pack),
                    "--quiet",
                    "--format",
                    "json",
                ]
            )
        assert code == 0
        data = Path(tmp) / "packed" / f"training_{args.pack}.idx.parquet"
        for mode in DataMode:
            config = TrainConfig(
                data=data,
                mode=mode,
                model=ModelDims(
                    hidden=args.hidden, layers=args.layers, heads=args.heads, ffn=args.ffn, vocab=args.vocab
                ),
                steps=args.steps,
                gbs=args.gbs,
                mbs=args.mbs,
                device=args.device,
                dtype=args.dtype,
                quiet=True,
            )
            r = train(config)
            results[mode.value] = {
                "steps": r.steps_done,
                "positions": r.positions,
                "real_tokens": r.real_tokens,
                "padding_fraction": r.padding_fraction,
                "seconds": r.seconds,
                "tokens_per_s": r.tokens_per_s,
                "real_tokens_per_s": r.real_tokens_per_s,
                "losses": r.losses,
            }
    packed, padded = results["packed"], results["padded"]
    ratio = packed["real_tokens_per_s"] / padded["real_tokens_per_s"]
    rel = float(np.max(np.abs(np.array(packed["losses"]) / np.array(padded["losses"]) - 1)))
    print(
        f"{'mode':<7} {'positions':>10} {'real':>9} {'padding':>8} {'s':>7} {'tok/s':>9} {'real tok/s':>11}"
    )
    for mode, r in results.items():
        print(
            f"{mode:<7} {r['positions']:>10,} {r['real_tokens']:>9,} {100 * r['padding_fraction']:>7.1f}% "
            f"{r['seconds']:>7.2f} {r['tokens_per_s']:>9,.0f} {r['real_tokens_per_s']:>11,.0f}"
        )
    fewer = padded["positions"] / packed["positions"]
    print(f"real tokens/s packed / padded: {ratio:.2f}x; positions padded / packed: {fewer:.2f}x")
    print(f"max relative loss difference per step: {rel:.2e}")
    out = Path("benchmarks/results/train.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "device": args.device,
        "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
    }
    doc = {"machine": machine, "inputs": vars(args), "results": results, "real_tokens_per_s_ratio": ratio}
    out.write_text(json.dumps(doc, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
