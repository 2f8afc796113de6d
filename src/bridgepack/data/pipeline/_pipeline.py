"""``pack_files``: the streaming pack pipeline behind ``bridgepack pack``, top to bottom, one small function a
step: resolve the run, claim the output directory, pass 1, plan, pass 2, commit.

::

    inputs --pass 1--> stored examples --shape--> scratch store (disk)     + lengths (RAM, O(samples))
                                  \\--> rejects file (too long: rejected / truncated / split / dropped)
    lengths --pack_lengths--> PackPlan (integer arrays only)
    scratch store + plan --pass 2--> {split}_{N}.idx.parquet (row groups of 500) + {N}_metadata.jsonl

Every output is written under a temporary name and renamed at the end; the scratch store is removed on
success, error and Ctrl-C alike, so an interrupted run leaves nothing that looks complete.

The parts a sharded run shares live apart (``_run``: resolving and planning; ``_pass1``: shaping and
spooling; ``_input_digest``; ``_result``); this module holds what only the local run does: its scratch
store, its progress, its temporary names and the order they are renamed in.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from bridgepack._faults import fault_point
from bridgepack._io import (
    atomic_path,
    disk_full_error,
    is_disk_full,
    make_dirs,
    missing_dirs,
    remove_made_dirs,
    restored_on_failure,
)
from bridgepack._progress import progress
from bridgepack.data.packset import PARQUET_RUN_ID, Layout, MetadataEntry, PackRecord, write_metadata_entry
from bridgepack.data.pipeline._input_digest import BackgroundHash
from bridgepack.data.pipeline._lock import OutputLock, claim_output_dir
from bridgepack.data.pipeline._options import PackOptions
from bridgepack.data.pipeline._pass1 import SpoolToScratch, check_packable, shaped_chunks
from bridgepack.data.pipeline._result import Counts, PackResult
from bridgepack.data.pipeline._run import Run, cost_model_record, plan_packs, resolve_run
from bridgepack.data.pipeline._scratch import ScratchStore, default_scratch_dir
from bridgepack.data.pipeline._shape import Shaping
from bridgepack.data.pipeline._write import write_packed
from bridgepack.data.samples import ChunkToExamples, as_paths, chunk_rows_for, iter_chunks, known_rows
from bridgepack.errors import UsageError
from bridgepack.fingerprint import PackedFingerprinter
from bridgepack.packing import PackPlan


def pack_files(opts: PackOptions) -> PackResult:
    """Pack ``opts``' inputs into its output directory (see the module docstring), step by step:
    resolve the inputs, pass 1 (read, shape, spool), plan, pass 2 (write), commit."""
    run = resolve_run(opts)
    lock, store, made = _claim_output_dir(run)
    done = False
    try:
        with contextlib.ExitStack() as stack:
            # Commit order (the stack exits in reverse): metadata, then rejects, then the packed file last,
            # so a run killed at any point leaves no packed file under its final name that inspect accepts
            # (inspect reads a lone packed file without its sidecar). A run that fails between those steps
            # puts the metadata and rejects files back as they were.
            outputs = run.outputs
            stack.enter_context(restored_on_failure(outputs.metadata, outputs.rejects))
            packed_tmp = stack.enter_context(atomic_path(run.outputs.packed, overwrite=True))
            stack.callback(fault_point, "rename")
            rejects_tmp = stack.enter_context(atomic_path(run.outputs.rejects, overwrite=True))
            bar = stack.enter_context(progress(opts.run.quiet))
            rejects = stack.enter_context(open(rejects_tmp, "wb"))
            input_hash = BackgroundHash(run.inputs)
            spool = _pass1(run, store, rejects, bar)
            plan = _make_pack_plan(run, spool)
            fingerprint = _pass2(run, store, plan, packed_tmp, bar)
            assert spool.eos_id is not None  # pass 1 refuses an input without samples
            record = (
                run.record.with_eos(spool.eos_id)
                .with_plan(plan.algorithm, cost_model_record(opts))
                .with_fingerprint(fingerprint)
                .committed(input_hash.result(), spool.counts.record(plan.num_packs))
            )
            entry = _commit(run, record, plan)
        done = True
        run.outputs.remove_sharded()
    except OSError as exc:  # ENOSPC, EFBIG (a file-size limit), EDQUOT: the directory, in one line
        if not is_disk_full(exc):
            raise
        raise disk_full_error(Path(exc.filename).parent if exc.filename else opts.run.out_dir, exc) from None
    finally:
        store.remove()
        lock.release()
        if not done:  # a failed run leaves no folder it made (the temp files went with their contexts)
            remove_made_dirs(made)
    outputs = run.outputs
    return PackResult(
        outputs.packed,
        outputs.metadata,
        outputs.rejects,
        entry,
        record,
        spool.counts,
        plan.num_packs,
        int(plan.total_length),
        opts.size.pack_size,
        run.seconds,
    )


def _claim_output_dir(run: Run) -> tuple[OutputLock, ScratchStore, list[Path]]:
    """Make the output directory and take it with its scratch store: one run per output directory; a
    killed run's leftovers are reclaimed (docs/failure-behaviour.md). Also returns the directories this
    run created, for a failed run to remove."""
    out, scratch_dir = run.opts.run.out_dir, run.opts.run.scratch_dir
    data_dir = run.outputs.packed.parent
    made: list[Path] = []
    lock: OutputLock | None = None
    try:
        made += make_dirs(out)
        if data_dir != out:  # the HF layout's data/ folder: never a link out of the directory
            if data_dir.is_symlink():
                raise UsageError(f"{data_dir}: a symbolic link; bridgepack writes a real folder here")
            made += make_dirs(data_dir)
        if scratch_dir is not None:  # the store makes it, and names it in its own errors
            made += missing_dirs(scratch_dir)
        lock = claim_output_dir(out, scratch_dir, data_dir)
        store = ScratchStore((scratch_dir or out) / default_scratch_dir(out).name)
    except BaseException:
        if lock is not None:
            lock.release()
        remove_made_dirs(made)
        raise
    return lock, store, made


def _pass1(run: Run, store: ScratchStore, rejects: BinaryIO, bar: Any) -> SpoolToScratch:
    """Read, convert and shape every chunk on the workers; spool the pieces to the scratch store, the
    too-long samples to the rejects file, and keep only the lengths in memory."""
    opts = run.opts
    t0 = time.perf_counter()
    spool = SpoolToScratch(as_paths(run.inputs), store, rejects, run.record.run_id)
    task = bar.add_task("read", total=known_rows(run.inputs))

    def spec_for(eos: int) -> Shaping:
        return Shaping(
            opts.max_seq_length,
            opts.size.pad_seq_to_mult,
            eos,
            opts.too_long,
            opts.bridge_compat,
            opts.run.layout is Layout.padding_free,
        )

    chunks = iter_chunks(run.inputs, chunk_rows_for(run.text, opts.input.chunk_rows))
    converter = ChunkToExamples(spool.paths, run.text)
    for examples, shaped, shaping in shaped_chunks(chunks, converter, spec_for, run.eos_id, run.workers):
        spool.add(examples, shaped, shaping)
        fault_point("read")
        bar.advance(task, len(examples.lengths))
        _rate(bar, task, spool.counts, t0)
    run.seconds["read"] = time.perf_counter() - t0
    check_packable(spool.paths, spool.counts, spool.refused, spool.first_rejected, opts.max_seq_length)
    return spool


def _make_pack_plan(run: Run, spool: SpoolToScratch) -> PackPlan:
    """The packs, from the lengths alone (the plan names the algorithm that made them)."""
    t1 = time.perf_counter()
    plan = plan_packs(run.opts, np.concatenate(spool.lengths))
    run.seconds["plan"] = time.perf_counter() - t1
    fault_point("plan")
    return plan


def _pass2(
    run: Run, store: ScratchStore, plan: PackPlan, packed_tmp: Path, bar: Any
) -> dict[str, Any] | None:
    """Build the packs' row groups from the scratch store and write them; returns the rows' content
    fingerprint (Bridge's layout; ``None`` for the HF layout)."""
    t2 = time.perf_counter()
    write_task = bar.add_task("write", total=plan.num_packs)
    store.offsets()  # computed once, here: pass 2 reads the store from several threads

    def on_row_group(packs: int, _tokens: int) -> None:
        bar.advance(write_task, packs)
        fault_point("write")

    layout = run.opts.run.layout
    fingerprinter = PackedFingerprinter() if layout is Layout.bridge else None
    write_packed(
        packed_tmp,
        store.read,
        plan.items,
        plan.pack_offsets,
        on_row_group=on_row_group,
        layout=layout,
        fingerprinter=fingerprinter,
        threads=run.workers,
        key_value={PARQUET_RUN_ID: run.record.run_id.encode()},
    )
    run.seconds["write"] = time.perf_counter() - t2
    return None if fingerprinter is None else fingerprinter.result().to_dict()


def _commit(run: Run, record: PackRecord, plan: PackPlan) -> MetadataEntry:
    """Write the metadata entry of the complete record; the caller's exit renames the rejects and then
    the packed file into place."""
    entry = MetadataEntry.from_values(plan.bridge_metadata(), record.to_dict())
    write_metadata_entry(run.outputs.metadata, entry)
    fault_point("commit")
    return entry


def _rate(bar: Any, task: Any, counts: Counts, t0: float) -> None:
    elapsed = max(time.perf_counter() - t0, 1e-9)
    bar.update(
        task,
        description=(
            f"read {counts.samples_in / elapsed:,.0f} samples/s {counts.tokens_in / elapsed:,.0f} tokens/s"
        ),
    )
