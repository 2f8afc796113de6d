#!/usr/bin/env python3
"""Grade an answer to one of this skill's eval tasks, deterministically, with bridgepack itself.

    python evals/grade.py TASK_ID ANSWER_DIR     # exit 0 pass, 1 fail (each miss named), 2 usage
    python evals/grade.py --check-all            # CI: each reference passes, each wrong answer fails

The checks of a task live in ``evals.json`` beside this file (``grade.checks``), so a task is added
without touching code. The kinds every bridgepack skill shares (``doctor``, ``keeps``, ``values``,
``product``, ``tool``) are in ``grading.py`` beside this file; this skill adds two for packed data:

- ``inspect``: ``bridgepack inspect`` passes on the answer's packed data, with the listed fields;
- ``packed``: the packs hold exactly the task's samples, each once, as Bridge stores them (the sample's
  own ids and loss mask, padded with the task's EOS id to the task's pad multiple).
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import grading  # noqa: E402  (beside this file: the engine every bridgepack skill ships)
from grading import Miss, bridgepack, fill, tail  # noqa: E402

Sequence = tuple[tuple[int, ...], tuple[int, ...]]


def check_inspect(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    path = fill(check["path"], ctx)
    if not path.exists():
        raise Miss(f"{path.name} is missing from the answer")
    ran = bridgepack(["inspect", str(path), "--format", "json"])
    if ran.returncode != 0:
        raise Miss(f"bridgepack inspect fails on the answer (exit {ran.returncode}): {tail(ran)}")
    report = json.loads(ran.stdout)
    for key, value in check.get("expect", {}).items():
        if report.get(key) != value:
            raise Miss(f"the packed data has {key} {report.get(key)}, the task asks for {value}")


def stored_sequence(ids: list[int], mask: list[int], eos: int, multiple: int, pack: int) -> Sequence:
    """One sample as Bridge's offline packing stores it (bridge-format §2): with a pad multiple m > 1 the
    runtime length r = len - 1 is padded up to a multiple of m (at most the pack's) with the EOS id, mask
    0; the loss mask is then shifted left by one (stored mask j: token j + 1 is a label)::

        ids 5 6 7 2, mask 0 1 1 1, EOS 2, m 4  ->  ids 5 6 7 2 2, mask 1 1 1 0 0
    """
    runtime = len(ids) - 1
    if multiple > 1:
        target = min(pack // multiple * multiple, math.ceil(runtime / multiple) * multiple) + 1
        ids = (ids + [eos] * target)[:target]
        mask = (mask + [0] * target)[:target]
    return tuple(ids), tuple([*mask[1:], 0])


def read_packs(folder: Path) -> list[tuple[str, Sequence]]:
    """(where, sequence) of every sequence of the packed Parquet files in ``folder``, cut at seq_start_id."""
    import pyarrow.parquet as pq

    files = sorted(folder.glob("training_*.parquet"))
    if not files:
        raise Miss(f"{folder.name}/ holds no training_*.parquet")
    out = []
    for path in files:
        try:
            table = pq.read_table(path, columns=["input_ids", "loss_mask", "seq_start_id"])
        except (KeyError, ValueError, OSError) as exc:
            raise Miss(f"{path.name}: not Bridge's packed Parquet ({exc})") from None
        columns = (table.column(c).to_pylist() for c in ("input_ids", "loss_mask", "seq_start_id"))
        for row, (ids, mask, starts) in enumerate(zip(*columns, strict=True)):
            for a, b in itertools.pairwise([*starts, len(ids)]):
                out.append((f"{path.name} row {row} at {a}", (tuple(ids[a:b]), tuple(mask[a:b]))))
    return out


def why_unmatched(
    sample: int, own: list[int], want: Sequence, stored: list[tuple[str, Sequence]], eos: int
) -> str:
    """What is wrong with how one sample was stored, found among the stored sequences that start with the
    sample's tokens (less its last, the EOS): the length (pad multiple), a token (EOS id) or the mask."""
    ids, mask = want
    for where, (got_ids, got_mask) in stored:
        if list(got_ids[: len(own) - 1]) != own[:-1]:
            continue
        if len(got_ids) != len(ids):
            return (
                f"input row {sample} is stored as {len(got_ids)} tokens ({where}), the task's pad multiple "
                f"gives {len(ids)}"
            )
        if got_ids != ids:
            odd = next(t for t, w in zip(got_ids, ids, strict=True) if t != w)
            return (
                f"input row {sample} is stored with token {odd} where the task's EOS id {eos} goes ({where})"
            )
        j = next(k for k, (g, w) in enumerate(zip(got_mask, mask, strict=True)) if g != w)
        return (
            f"input row {sample}'s loss mask is not its own ({where}): stored position {j} is {got_mask[j]}, "
            f"the sample's mask gives {mask[j]}"
        )
    return f"input row {sample} is not in the packs"


def check_packed(ctx: dict[str, Path], check: dict[str, Any]) -> None:
    folder = fill(check["path"], ctx)
    if not folder.is_dir():
        raise Miss(f"{folder.name}/ is missing from the answer")
    eos, multiple, pack = check["eos_id"], check["pad_multiple"], check["pack_size"]
    lines = fill(check["samples"], ctx).read_text(encoding="utf-8").splitlines()
    samples = [json.loads(line) for line in lines if line.strip()]
    want = [stored_sequence(s["input_ids"], s["loss_mask"], eos, multiple, pack) for s in samples]
    got = read_packs(folder)
    missing = Counter(want) - Counter(seq for _, seq in got)
    extra = Counter(seq for _, seq in got) - Counter(want)
    if not missing and not extra:
        return
    leftover = [(where, seq) for where, seq in got if seq in extra]
    problems = [
        why_unmatched(i, samples[i]["input_ids"], seq, leftover, eos)
        for i, seq in enumerate(want)
        if seq in missing
    ]
    if not problems:  # nothing missing: the packs hold more than the samples
        problems = [f"{where} is no input sample" for where, _ in leftover]
    count = sum(missing.values())
    raise Miss(
        f"{count} of {len(want)} samples are not stored as the task asks, {sum(extra.values())} stored "
        f"sequences are not the samples'; {'; '.join(problems[:3])}"
    )


CHECKS = {**grading.CHECKS, "inspect": check_inspect, "packed": check_packed}


def grade(task_id: str, answer: Path) -> list[str]:
    """The misses of an answer (empty: it passes)."""
    return grading.grade(HERE, CHECKS, task_id, answer)


def main(argv: list[str]) -> int:
    """``grade.py TASK ANSWER_DIR`` or ``grade.py --check-all`` (exit 0 pass, 1 fail, 2 usage)."""
    return grading.main(HERE, CHECKS, argv, (__doc__ or "").split("\n\n")[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
