"""``pack_files``: the streaming pack pipeline behind ``bridgepack pack``.

::

    inputs --pass 1--> stored examples --shape--> scratch store (disk)     + lengths (RAM, O(samples))
                                  \\--> rejects file (too long: rejected / truncated / split / dropped)
    lengths --pack_lengths--> PackPlan (integer arrays only)
    scratch store + plan --pass 2--> {split}_{N}.idx.parquet (row groups of 500) + {N}_metadata.jsonl

Every output is written under a temporary name and renamed at the end; the scratch store is removed on
success, error and Ctrl-C alike, so an interrupted run leaves nothing that looks complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

import numpy as np
import orjson

from bridgepack import __version__
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
from bridgepack.data.packset import (
    PADDING_FREE_METADATA,
    PARQUET_RUN_ID,
    RUN_ID,
    SPLITS,
    TRAINING,
    VALIDATION,
    Layout,
    MetadataEntry,
    PackCounts,
    PackingMetadata,
    PackRecord,
    metadata_filename,
    most_common_last_token,
    new_run_id,
    offline_packing_overrides,
    packed_filename,
    padding_free_filename,
    rejects_filename,
    sharded_dirname,
    write_metadata_entry,
)
from bridgepack.data.pipeline._input import checked_text, resolve_input
from bridgepack.data.pipeline._lock import OutputLock, claim_output_dir
from bridgepack.data.pipeline._options import PackOptions, resolve_workers
from bridgepack.data.pipeline._scratch import ScratchStore, default_scratch_dir
from bridgepack.data.pipeline._shape import Action, Shaped, Shaping, shape
from bridgepack.data.pipeline._write import write_packed
from bridgepack.data.samples import (
    IDS_FIELD,
    ChunkToExamples,
    Examples,
    RawChunk,
    as_paths,
    chunk_rows_for,
    convert_all,
    iter_chunks,
    known_rows,
)
from bridgepack.data.samples.text import (
    ResolvedText,
    load_tokenizer,
    text_record,
    tokenizer_hash,
)
from bridgepack.errors import DataError, InputError, UsageError, param
from bridgepack.fingerprint import PackedFingerprinter
from bridgepack.packing import BALANCED, CostModel, PackPlan, pack_lengths

#: Keys of the bridgepack record that must agree between the splits of one output directory.
_SPLIT_AGREEMENT = ("pack_size", "pad_seq_to_mult", "seed", "tokenizer_sha256")


@dataclass
class Counts:
    """Samples in and what became of them: each sample is ``packed`` (truncated and split ones included, also
    counted in ``truncated`` / ``split``) or ``rejected`` or ``dropped``; the sequences that were packed (a
    split sample packs as several) and the tokens read."""

    samples_in: int = 0
    packed: int = 0
    rejected: int = 0
    truncated: int = 0
    split: int = 0
    dropped: int = 0
    sequences: int = 0
    tokens_in: int = 0

    def record(self, packs: int) -> PackCounts:
        """The counts as the metadata record keeps them, with the ``packs`` the plan made."""
        return PackCounts(
            self.samples_in,
            self.packed,
            self.rejected,
            self.truncated,
            self.split,
            self.dropped,
            self.sequences,
            packs,
        )


@dataclass
class PackResult:
    """What ``pack_files`` wrote and measured: the files, the metadata entry written (Bridge's six values
    and bridgepack's record), the counts and the time of each step."""

    #: Version of :meth:`to_dict`'s document (``bridgepack pack --format json``).
    SCHEMA_VERSION: ClassVar[int] = 1

    packed_path: Path
    metadata_path: Path
    rejects_path: Path
    metadata: MetadataEntry
    record: PackRecord
    counts: Counts
    num_packs: int
    runtime_tokens: int
    pack_size: int
    seconds: dict[str, float] = field(default_factory=dict)
    #: A distributed run's measures (``--engine ray``): shards, shards reused by a resumed run, the
    #: shards' CPU seconds, the largest worker's peak memory (MB); empty for a local run.
    engine: dict[str, float] = field(default_factory=dict)
    #: The overrides that train on this output for a topology (:func:`overrides_for_result`), when the
    #: caller knows it: ``bridgepack pack`` adds them for its ``--cp``/``--tp``; ``pack_files`` leaves none.
    overrides: list[str] = field(default_factory=list)

    @property
    def padding_saved(self) -> int:
        """Padding tokens saved versus padding every packed sample to N: ``(sequences - packs) * N``."""
        return (self.counts.sequences - self.num_packs) * self.pack_size

    @property
    def padding_tokens(self) -> int:
        return self.num_packs * self.pack_size - self.runtime_tokens

    def to_dict(self) -> dict[str, Any]:
        """The summary ``bridgepack pack --format json`` prints, ``schema_version`` first."""
        c = self.counts
        bridge = self.metadata.bridge_values()
        text = self.record.text or {}
        return {
            "schema_version": self.SCHEMA_VERSION,
            "packed_path": os.fspath(self.packed_path),
            "metadata_path": os.fspath(self.metadata_path),
            "rejects_path": os.fspath(self.rejects_path),
            "samples_in": c.samples_in,
            "samples_packed": c.packed,
            "rejected": c.rejected,
            "truncated": c.truncated,
            "split": c.split,
            "dropped": c.dropped,
            "sequences": c.sequences,
            "packs": self.num_packs,
            "efficiency_percent": bridge["packing_efficiency"],
            "padding_tokens": self.padding_tokens,
            "padding_tokens_saved": self.padding_saved,
            "bridge_metadata": bridge,
            **({"assistant_mask": text["assistant_mask"]} if "assistant_mask" in text else {}),
            "overrides": list(self.overrides),
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            **({"engine": {k: round(v, 3) for k, v in self.engine.items()}} if self.engine else {}),
        }


class _BackgroundHash:
    """:func:`input_digest` of each input on a daemon thread (hashlib releases the GIL), overlapping with
    the passes. A daemon thread never delays the exit of a failed or interrupted run.
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        self._result: list[list[str] | BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(paths,), daemon=True, name="bridgepack-hash")
        self._thread.start()

    def _run(self, paths: Sequence[Path]) -> None:
        try:
            self._result.append([input_digest(path) for path in paths])
        except BaseException as exc:  # reported by digests()
            self._result.append(exc)

    def digests(self) -> list[str]:
        """Each input's digest, in the order given."""
        self._thread.join()
        value = self._result[0]
        if isinstance(value, BaseException):
            raise InputError(f"cannot hash the inputs ({value})")
        return value

    def result(self) -> str:
        return combine_input_digests(self.digests())


def input_digest(path: Path) -> str:
    """SHA-256 of one input's bytes (a directory: its files', sorted, one stream)."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        with open(file, "rb") as handle:
            for block in iter(lambda h=handle: h.read(1 << 20), b""):  # type: ignore[misc]
                digest.update(block)
    return digest.hexdigest()


def combine_input_digests(digests: Sequence[str]) -> str:
    """The record's ``input_sha256``: SHA-256 over the inputs' own digests in input order. Two levels, so
    that the ray engine's workers hash their own files and the driver only combines (the same value as
    the local pack of the same inputs)."""
    return hashlib.sha256(b"".join(bytes.fromhex(d) for d in digests)).hexdigest()


def _check_existing(opts: PackOptions, outputs: _Outputs, record: PackRecord) -> None:
    packed, meta_path = outputs.packed, outputs.metadata
    if packed.exists() and not opts.run.overwrite:
        raise UsageError(f"{packed}: already exists (pass {param('overwrite')} to replace it)")
    # one set per split and size, one file or the ray engine's directory of shards, never both: the sidecar
    # holds one entry for it, the printed overrides name one path (--overwrite replaces either with the other)
    sharded = outputs.sharded
    if sharded is not None and sharded.exists() and not opts.run.overwrite:
        raise UsageError(
            f"{sharded}: already exists, this split's packs as a directory of shards "
            f"(pass {param('overwrite')} to replace it)"
        )
    if not meta_path.exists():
        return
    for entry in PackingMetadata.read(meta_path).entries:
        other = entry.record
        if other is None or other.get("split") == opts.run.split:
            continue
        for key in _SPLIT_AGREEMENT:
            if other.get(key) != getattr(record, key):
                raise UsageError(
                    f"{meta_path}: the {other.get('split')} split was packed with {key}={other.get(key)!r}, "
                    f"this run has {getattr(record, key)!r}; use another {param('out_dir')} directory"
                )


def check_rows_end_with_eos(examples: Examples, eos_id: int, paths: tuple[str, ...]) -> None:
    """Pre-tokenized input without a given EOS: every row must end with the same token."""
    last = examples.tokens[np.cumsum(examples.lengths) - 1]
    bad = np.flatnonzero(last != eos_id)
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"{examples.where(paths[examples.source], i, IDS_FIELD)}: last token {int(last[i])} "
            f"differs from {eos_id}, the EOS inferred as the most common last token of the first rows "
            f"(pass {param('eos_id')} or {param('tokenizer')}, or fix the row)"
        )


@dataclass(frozen=True)
class _ShapeChunk:
    """A worker's whole share of pass 1 for one chunk: convert, check the EOS, shape.

    Picklable (it runs in processes for text). It returns the examples without their tokens: the shaped
    pieces carry them, and only those go to the scratch store.
    """

    converter: ChunkToExamples
    spec: Shaping
    infer_eos: bool

    @property
    def paths(self) -> tuple[str, ...]:
        return self.converter.paths

    @property
    def needs_processes(self) -> bool:
        return self.converter.needs_processes

    def __call__(self, chunk: RawChunk) -> tuple[Examples, Shaped]:
        return self.shape(self.converter(chunk))

    def shape(self, examples: Examples) -> tuple[Examples, Shaped]:
        if self.infer_eos:
            check_rows_end_with_eos(examples, self.spec.eos_id, self.paths)
        return examples.without_tokens(), shape(examples.tokens, examples.mask, examples.lengths, self.spec)


class _SpoolToScratch:
    """Consumes shaped chunks in input order: appends them to the store, writes rejects, counts."""

    def __init__(self, paths: tuple[str, ...], store: ScratchStore, rejects: BinaryIO, run_id: str) -> None:
        self.paths = paths
        self.run_id = run_id
        self.store = store
        self.rejects = rejects
        self.counts = Counts()
        self.lengths: list[np.ndarray] = []
        #: The EOS every piece was padded with: given, or inferred from the first chunk's rows.
        self.eos_id: int | None = None
        #: The first sample not packed whole ("a.jsonl:3 (9 runtime tokens)"): what a failed run names,
        #: since its rejects file is not kept.
        self.first_rejected: str | None = None
        #: Rows the text step refused (counted in ``counts.rejected`` too).
        self.refused = 0

    def add(self, examples: Examples, shaped: Shaped, spec: Shaping) -> None:
        """Store one chunk's shaped pieces (in input order), count them, list what was not kept as is."""
        self.store.append(shaped.tokens, shaped.mask, shaped.lengths)
        self.lengths.append(spec.counted(shaped.lengths))
        self.eos_id = spec.eos_id
        c = self.counts
        c.samples_in += len(examples.lengths)
        c.tokens_in += int(examples.lengths.sum())
        c.sequences += len(shaped.lengths)
        actions = shaped.actions
        c.packed += int(np.count_nonzero(shaped.pieces > 0))
        c.rejected += int(np.count_nonzero(actions == Action.rejected))
        c.truncated += int(np.count_nonzero(actions == Action.truncated))
        c.split += int(np.count_nonzero(actions == Action.split))
        c.dropped += int(np.count_nonzero(actions == Action.dropped))
        cut = examples.cut_by_text_step()
        cut = cut[actions[cut] == Action.kept]
        c.truncated += len(cut)
        for i in np.union1d(np.flatnonzero(actions != Action.kept), cut):
            self._reject_line(examples, spec, int(i), Action(int(actions[i])), int(shaped.pieces[i]))
        if examples.refused_locs is not None:
            self._refused_lines(examples)

    def _refused_lines(self, examples: Examples) -> None:
        """The rows the text step refused (chat rows whose assistant turns could not be inferred)."""
        assert examples.refused_locs is not None
        self.counts.samples_in += len(examples.refused_locs)
        self.counts.rejected += len(examples.refused_locs)
        self.refused += len(examples.refused_locs)
        for loc, reason in zip(examples.refused_locs.tolist(), examples.refused_reasons, strict=True):
            record = {
                "source": self.paths[examples.source],
                "line" if examples.line_based else "row": int(loc),
                "reason": reason,
                "action": "rejected (not packed)",
                RUN_ID: self.run_id,
            }
            self.rejects.write(orjson.dumps(record) + b"\n")
            if self.first_rejected is None:
                at = f":{loc}" if examples.line_based else f" row {loc}"
                self.first_rejected = f"{self.paths[examples.source]}{at}: {reason}"

    def _reject_line(self, examples: Examples, spec: Shaping, i: int, action: Action, pieces: int) -> None:
        before = examples.lengths if examples.lengths_before is None else examples.lengths_before
        runtime = int(spec.counted(before[i]))
        kept = int(spec.counted(examples.lengths[i]))
        unit = "tokens" if spec.counts_stored else "runtime tokens"
        what = {
            # cut by the text step only (compat: Bridge truncates long prompt-completion rows as it tokenizes)
            Action.kept: f"truncated to {kept} {unit} while tokenizing, as Bridge does",
            Action.rejected: "rejected (not packed)",
            Action.truncated: f"truncated to {spec.cap} {unit}",
            Action.split: f"split into {pieces} pieces",
            Action.dropped: "dropped (not packed, as Bridge does with pad_seq_to_mult=1)",
        }[action]
        record = {
            "source": self.paths[examples.source],
            "line" if examples.line_based else "row": int(examples.locs[i]),
            "reason": f"too long: {runtime} {unit} > {spec.cap}",
            "length": runtime,
            "action": what,
            RUN_ID: self.run_id,
        }
        self.rejects.write(orjson.dumps(record) + b"\n")
        if self.first_rejected is None and action is not Action.kept:
            where = int(examples.locs[i])
            at = f":{where}" if examples.line_based else f" row {where}"
            self.first_rejected = f"{self.paths[examples.source]}{at} has {runtime} {unit}"


@dataclass(frozen=True)
class _Outputs:
    """The files of one set, named by split, pack size and layout (the HF layout never shares a Bridge
    set's names)."""

    packed: Path
    metadata: Path
    rejects: Path
    sharded: Path | None  # the same split's directory of shards (the ray engine's; Bridge layout only)

    @classmethod
    def of(cls, opts: PackOptions) -> _Outputs:
        out, split, n = opts.run.out_dir, opts.run.split, opts.size.pack_size
        if opts.run.layout is Layout.padding_free:
            return cls(
                out / padding_free_filename(split),
                out / PADDING_FREE_METADATA,
                out / rejects_filename(split),
                None,
            )
        packed = out / packed_filename(split, n)
        rejects = out / rejects_filename(split, n)
        return cls(packed, out / metadata_filename(n), rejects, out / sharded_dirname(split, n))

    def remove_sharded(self) -> None:
        """After a one-file commit with ``overwrite``: remove the split's directory of shards it replaced
        (moved to a hidden name first, so the directory's name never holds a half-removed set)."""
        if self.sharded is None or not self.sharded.is_dir():
            return
        trash = self.sharded.with_name(f".{self.sharded.name}.replaced-{uuid.uuid4().hex[:8]}")
        os.replace(self.sharded, trash)
        shutil.rmtree(trash, ignore_errors=True)


@dataclass
class _Run:
    """One run, resolved from its options before anything is written: ``record`` is the metadata record as
    far as resolving knows it (the steps return what they add); ``seconds`` fill in as the steps go."""

    opts: PackOptions
    inputs: list[Path]
    eos_id: int | None  # None: inferred in pass 1
    text: ResolvedText | None  # None: pre-tokenized input
    outputs: _Outputs
    record: PackRecord
    workers: int
    seconds: dict[str, float] = field(default_factory=dict)


def pack_files(opts: PackOptions) -> PackResult:
    """Pack ``opts``' inputs into its output directory (see the module docstring), step by step:
    resolve the inputs, pass 1 (read, shape, spool), plan, pass 2 (write), commit."""
    run = _resolve(opts)
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
            input_hash = _BackgroundHash(run.inputs)
            spool = _pass1(run, store, rejects, bar)
            plan = _make_pack_plan(run, spool)
            fingerprint = _pass2(run, store, plan, packed_tmp, bar)
            assert spool.eos_id is not None  # pass 1 refuses an input without samples
            record = (
                run.record.with_eos(spool.eos_id)
                .with_plan(plan.algorithm, _cost_model_record(opts))
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


def _resolve(opts: PackOptions) -> _Run:
    """Check the options, resolve the EOS and the text step, name the outputs and start the metadata
    record; refuse to replace a set (or join one packed differently) before anything is written."""
    opts.check()
    tokenizer = opts.input.tokenizer
    tok_sha = None
    if tokenizer is not None:
        load_tokenizer(tokenizer)  # refused here if it cannot load, also where it only names the EOS
        tok_sha = tokenizer_hash(tokenizer)
    resolved = resolve_input(opts.input)
    text = None if resolved.text is None else _text_spec(opts, resolved.text)
    outputs = _Outputs.of(opts)
    max_len, size = opts.max_seq_length, opts.size
    inputs = list(opts.input.paths)
    record = PackRecord(
        version=__version__,
        split=opts.run.split,
        mode="bridge-compat" if opts.bridge_compat else "bridgepack",
        layout=opts.run.layout.value,
        algorithm=opts.algorithm,
        seed=opts.packing_seed,
        pack_size=size.pack_size,
        pad_seq_to_mult=size.pad_seq_to_mult,
        max_seq_length=max_len,
        too_long=None if opts.bridge_compat else opts.too_long.value,
        eos_id=resolved.eos_id,
        eos_source=resolved.eos_source,
        tokenizer=os.fspath(tokenizer) if tokenizer else None,
        tokenizer_sha256=tok_sha,
        run_id=new_run_id(),
        text=None if text is None else text_record(text),
        inputs=tuple(os.fspath(p) for p in inputs),
    )
    _check_existing(opts, outputs, record)
    return _Run(opts, inputs, resolved.eos_id, text, outputs, record, resolve_workers(opts.run.workers))


def _text_spec(opts: PackOptions, spec: ResolvedText) -> ResolvedText:
    """The text step's settings, checked; compat truncates long prompt-completion rows as Bridge does while
    it tokenizes: to the max length, + 1 with a pad multiple > 1 (``tokenize_dataset``'s stored length)."""
    compat = opts.bridge_compat
    max_length = (opts.max_seq_length + int(opts.size.pad_seq_to_mult > 1)) if compat else None
    return checked_text(spec, opts.input, compat=compat, max_length=max_length)


def _claim_output_dir(run: _Run) -> tuple[OutputLock, ScratchStore, list[Path]]:
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


def _pass1(run: _Run, store: ScratchStore, rejects: BinaryIO, bar: Any) -> _SpoolToScratch:
    """Read, convert and shape every chunk on the workers; spool the pieces to the scratch store, the
    too-long samples to the rejects file, and keep only the lengths in memory."""
    opts = run.opts
    t0 = time.perf_counter()
    spool = _SpoolToScratch(as_paths(run.inputs), store, rejects, run.record.run_id)
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
    for examples, shaped, shaping in _shaped_chunks(chunks, converter, spec_for, run.eos_id, run.workers):
        spool.add(examples, shaped, shaping)
        fault_point("read")
        bar.advance(task, len(examples.lengths))
        _rate(bar, task, spool.counts, t0)
    run.seconds["read"] = time.perf_counter() - t0
    check_packable(spool.paths, spool.counts, spool.refused, spool.first_rejected, opts.max_seq_length)
    return spool


def check_packable(
    paths: Sequence[str], counts: Counts, refused: int, first_rejected: str | None, max_seq_length: int
) -> None:
    """After pass 1: refuse a run with nothing to pack, naming a sample (the rejects file is not kept when
    nothing is packed). ``refused``: rows the text step refused; ``first_rejected``: the first sample not
    packed whole."""
    if counts.samples_in == 0:
        raise DataError(f"{', '.join(paths)}: empty input (no samples)")
    if counts.sequences == 0 and refused == counts.rejected + counts.dropped:
        raise DataError(
            f"{', '.join(paths)}: every sample was refused ({first_rejected}); nothing was written"
        )
    if counts.sequences == 0:
        raise DataError(
            f"{', '.join(paths)}: no sample fits max length {max_seq_length} "
            f"({counts.rejected + counts.dropped - refused} too long; {first_rejected}); nothing was written"
        )


def _make_pack_plan(run: _Run, spool: _SpoolToScratch) -> PackPlan:
    """The packs, from the lengths alone (the plan names the algorithm that made them)."""
    t1 = time.perf_counter()
    plan = plan_packs(run.opts, np.concatenate(spool.lengths))
    run.seconds["plan"] = time.perf_counter() - t1
    fault_point("plan")
    return plan


def plan_packs(opts: PackOptions, lengths: np.ndarray) -> PackPlan:
    """The one plan of a run over all its runtime lengths, in input order: the local pipeline's and the
    ray engine's (which gathers the lengths in this same order, so both make the same packs)."""
    return pack_lengths(
        lengths,
        opts.size.pack_size,
        algorithm=opts.algorithm,
        seed=opts.packing_seed,
        cost=opts.size.cost_model,
    )


def _pass2(
    run: _Run, store: ScratchStore, plan: PackPlan, packed_tmp: Path, bar: Any
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


def _commit(run: _Run, record: PackRecord, plan: PackPlan) -> MetadataEntry:
    """Write the metadata entry of the complete record; the caller's exit renames the rejects and then
    the packed file into place."""
    entry = MetadataEntry.from_values(plan.bridge_metadata(), record.to_dict())
    write_metadata_entry(run.outputs.metadata, entry)
    fault_point("commit")
    return entry


def _cost_model_record(opts: PackOptions) -> dict[str, Any] | None:
    """The cost model the balanced algorithm evened packs under (``None`` for any other algorithm)."""
    return (opts.size.cost_model or CostModel.default()).to_record() if opts.algorithm == BALANCED else None


def _shaped_chunks(
    chunks: Iterator[RawChunk],
    converter: ChunkToExamples,
    spec_for: Callable[[int], Shaping],
    eos_id: int | None,
    workers: int,
) -> Iterator[tuple[Examples, Shaped, Shaping]]:
    """Pass 1's chunks, converted and shaped on the workers, in input order.

    Without a known EOS (pre-tokenized input, no ``--eos-id``) the first chunk is converted here: its rows'
    most common last token (:func:`~bridgepack.data.packset.most_common_last_token`) is the EOS every row
    must end with, and the shaping pads with it.
    """
    if eos_id is None:
        first_chunk = next(chunks, None)
        if first_chunk is None:
            return
        first = converter(first_chunk)
        eos = most_common_last_token(first.tokens, np.cumsum(first.lengths))
        job = _ShapeChunk(converter, spec_for(eos), infer_eos=True)
        yield (*job.shape(first), job.spec)
    else:
        job = _ShapeChunk(converter, spec_for(int(eos_id)), infer_eos=False)
    for examples, shaped in convert_all(chunks, job, workers):
        yield examples, shaped, job.spec


def _rate(bar: Any, task: Any, counts: Counts, t0: float) -> None:
    elapsed = max(time.perf_counter() - t0, 1e-9)
    bar.update(
        task,
        description=(
            f"read {counts.samples_in / elapsed:,.0f} samples/s {counts.tokens_in / elapsed:,.0f} tokens/s"
        ),
    )


def overrides_for_result(
    result: PackResult, *, cp: int = 1, tp: int = 1, sequence_parallel: bool = False
) -> list[str]:
    """The Megatron-Bridge 0.6.2 overrides that train on this output directory (bridge-format §1, §4)."""
    record = result.record
    if record.layout == Layout.padding_free.value:
        return []
    n = result.pack_size
    out = result.metadata_path.parent
    # a split packed by the ray engine is a directory of shards (sharded_dirname), else one file
    paths = {
        split: out / sharded_dirname(split, n)
        if (out / sharded_dirname(split, n)).is_dir()
        else out / packed_filename(split, n)
        for split in SPLITS
    }
    paths[record.split] = result.packed_path  # this run's own set, whichever shape it has
    return offline_packing_overrides(
        n,
        record.pad_seq_to_mult,
        cp=cp,
        tp=tp,
        sequence_parallel=sequence_parallel,
        train_path=paths[TRAINING] if paths[TRAINING].exists() else None,
        val_path=paths[VALIDATION] if paths[VALIDATION].exists() else None,
        metadata_path=result.metadata_path,
    )
