"""Every error a ray task raises crosses to the driver as the error it was (#43 item 8), without a cluster:
the tasks are plain functions and their rows are what the driver reads.

A bridgepack error raised in a Ray Data task came back as Ray's ``RayTaskError(UserCodeException)`` with the
traceback as text and no bridgepack error in its cause chain, so the CLI printed ~170 lines and no ``error:``
line. The tasks now return their own error (every bridgepack error class, and an OS error such as a full
disk) in their row, and the driver raises the first in the local pack's order.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from _support.pack_inputs import random_examples, write_jsonl
from bridgepack.cli._common import flag
from bridgepack.data.pipeline import FAILED_CHUNK, PackOptions, plan_sharded, prepare_sharded, read_slice
from bridgepack.engine import TaskFailure, captured, first_failure, run_shard, run_slice
from bridgepack.errors import BridgepackError, DataError, InputError, param


def _raising(exc: BaseException) -> Callable[[], tuple[None, bool]]:
    def task() -> tuple[None, bool]:
        raise exc

    return task


def _error_classes(base: type[BridgepackError] = BridgepackError) -> list[type[BridgepackError]]:
    """``BridgepackError`` and every class below it: a new one fails here until it crosses as itself."""
    return [base, *(c for sub in base.__subclasses__() for c in _error_classes(sub))]


#: One error of each class a task can raise (the exit code follows the class; a parameter is rendered as
#: its flag by the CLI, so the raw text must cross unrendered), and the OS errors a task meets.
ERRORS: dict[str, BaseException] = {
    **{
        kind.__name__: kind(f"in.jsonl:6: malformed JSON (unexpected end of data) with {param('eos_id')}")
        for kind in _error_classes()
    },
    "disk full": OSError(errno.ENOSPC, "No space left on device", "out/.training_64.staging/spool/00000"),
    "permission": OSError(errno.EACCES, "Permission denied", "in.jsonl"),
}


@pytest.mark.parametrize("kind", ERRORS)
def test_every_kind_of_task_error_crosses_as_it_was_raised(kind: str) -> None:
    raised = ERRORS[kind]
    row = captured(_raising(raised), 0)
    assert row["reused"] is False and isinstance(row["failure"], str)
    again = first_failure([{"index": 0, **row}])
    assert type(again) is type(raised)
    if isinstance(raised, BridgepackError):
        assert isinstance(again, BridgepackError)
        assert again.render(flag) == raised.render(flag) and again.exit_code == raised.exit_code
    else:
        assert isinstance(again, OSError)
        assert (again.errno, again.strerror, again.filename) == (
            raised.errno,
            raised.strerror,
            raised.filename,
        )


def test_a_task_that_succeeds_carries_no_failure_and_other_errors_are_rays() -> None:
    assert captured(lambda: (None, True), 3) == {"reused": True, "failure": ""}
    assert first_failure([{"index": 0, "reused": True, "failure": ""}]) is None
    with pytest.raises(RuntimeError):  # a bug or a lost worker: Ray's to retry or report
        captured(_raising(RuntimeError("boom")), 0)


def _at_chunk(message: str, chunk: int) -> DataError:
    exc = DataError(message)
    setattr(exc, FAILED_CHUNK, chunk)
    return exc


def test_of_several_tasks_errors_the_first_in_the_local_order_is_raised() -> None:
    """Whole files per slice: slice order first (slice 0 holds the first files); every K-th chunk of the
    same files: chunk order first. An error raised outside a chunk comes after the chunks' errors."""
    whole = [captured(_raising(_at_chunk(f"slice {i}", c)), i) for i, c in ((1, 0), (0, 5), (2, 1))]
    assert str(first_failure(whole)) == "slice 0"
    every = [captured(_raising(_at_chunk(f"chunk {c}", c)), i, interleaved=True) for i, c in ((0, 4), (1, 3))]
    assert str(first_failure(every)) == "chunk 3"
    late = captured(_raising(DataError("no chunk")), 0, interleaved=True)
    assert str(first_failure([late, *every])) == "chunk 3"
    assert TaskFailure.from_json(str(late["failure"])).kind == "DataError"


def test_a_slice_task_returns_the_local_packs_error(tmp_path: Path) -> None:
    """The real phase-1 task on a malformed line, and phase 2 on a spool that went away (a full disk, a
    node's scratch lost): the errors come back in the row, named as locally."""
    rows = random_examples(np.random.default_rng(2), 300, 60)
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    lines = data.read_bytes().splitlines()
    lines[250] = b'{"input_ids": [1, 2'
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join(lines) + b"\n")
    opts = PackOptions.from_flat([bad], tmp_path / "out", 64, quiet=True, chunk_rows=100)
    sharded = prepare_sharded(opts, 2)
    try:
        rows_out = [
            captured(lambda p=p: run_slice(sharded.job, p), p.index, interleaved=True) for p in sharded.slices
        ]
    finally:
        sharded.discard()
    assert str(first_failure(rows_out)) == f"{bad}:251: malformed JSON (unexpected end of data)"
    assert not (tmp_path / "out").exists()  # a failed run leaves nothing

    good = PackOptions.from_flat([data], tmp_path / "out2", 64, quiet=True)
    sharded = prepare_sharded(good, 2)
    try:
        slices = [read_slice(sharded.job, p) for p in sharded.slices]
        plan = plan_sharded(sharded, slices)
        shutil.rmtree(sharded.job.staging.spool(0))
        row = captured(lambda: run_shard(sharded.job, plan.shards[0]), 0)
    finally:
        sharded.discard()
    failure = first_failure([row])
    spool = sharded.job.staging.root / "spool"
    assert isinstance(failure, InputError)
    assert str(failure) == f"{spool}: cannot use the scratch store (No such file or directory)"
