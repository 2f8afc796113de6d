"""``pack_files``: the streaming pack pipeline behind ``seqpack pack``.

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
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from seqpack import __version__
from seqpack._faults import fault_point
from seqpack._io import atomic_path, disk_full_error, is_disk_full
from seqpack._progress import progress
from seqpack.data._examples import IDS_FIELD, Examples
from seqpack.data._ingest import ChunkToExamples, as_paths, convert_all, default_workers, text_fields
from seqpack.data._lock import claim_output_dir
from seqpack.data._readers import DEFAULT_CHUNK_ROWS, RawChunk, iter_chunks, known_rows
from seqpack.data._scratch import ScratchStore, default_scratch_dir
from seqpack.data._shape import Action, Shaped, ShapeSpec, TooLong, check_lengths, shape
from seqpack.data._write import write_packed
from seqpack.data.metadata import (
    HF_METADATA,
    SEQPACK_KEY,
    MetadataEntry,
    PackingMetadata,
    hf_filename,
    metadata_filename,
    packed_filename,
    write_metadata_entry,
)
from seqpack.data.overrides import offline_packing_overrides
from seqpack.data.runs import PARQUET_RUN_ID, RUN_ID, new_run_id, rejects_filename
from seqpack.data.text import TextSpec, chat_options, load_tokenizer, text_record, tokenizer_hash
from seqpack.data.token_ids import check_eos_id, infer_eos_id
from seqpack.errors import DataError, InputError, UsageError
from seqpack.fingerprint import PackedFingerprinter
from seqpack.packing import (
    BALANCED,
    BRIDGE_ALGORITHMS,
    BRIDGE_DEFAULT_ALGORITHM,
    BRIDGE_DEFAULT_SEED,
    DEFAULT_ALGORITHM,
    CostModel,
    PackPlan,
    pack_lengths,
)

SPLITS = ("training", "validation")
#: ``bridge``: Bridge's packed Parquet (spec §3); ``hf``: the flattened padding-free layout.
LAYOUTS = ("bridge", "hf")
#: Keys of the seqpack record that must agree between the splits of one output directory.
_SPLIT_AGREEMENT = ("pack_size", "pad_seq_to_mult", "seed", "tokenizer_sha256")


@dataclass
class PackOptions:
    """Everything ``seqpack pack`` takes (the CLI maps flags 1:1 onto this)."""

    inputs: list[Path]
    out_dir: Path
    pack_size: int
    split: str = "training"
    max_seq_length: int | None = None
    pad_seq_to_mult: int = 1
    too_long: TooLong | None = None
    bridge_compat: bool = False
    algorithm: str | None = None
    cost_model: CostModel | None = None  # what the balanced algorithm evens out (None: 7B-like default)
    seed: int | None = None  # None: BRIDGE_DEFAULT_SEED with --bridge-compat, else 0
    eos_id: int | None = None
    tokenizer: Path | None = None
    prompt_field: str | None = None
    completion_field: str | None = None
    messages_field: str = "messages"
    chat_template: Path | None = None  # --chat-template: Bridge's TokenizerConfig.chat_template_path
    tool_schemas: Path | None = None  # --tool-schemas: Bridge's dataset_kwargs.tool_schemas
    # Bridge's PromptCompletionSFTPreprocessingConfig as its recipes set it (see TextSpec)
    loss_mode: str | None = None
    separator: str = " "
    prompt_template: str = "{prompt}"
    strip_whitespace: bool = True
    add_bos: bool = False
    add_sep: bool = False
    add_eos: bool = True
    truncation_method: str = "right"

    @property
    def packing_seed(self) -> int:
        """The seed of the packing shuffles: compat defaults to Bridge's ``GPTSFTDatasetConfig.seed``."""
        if self.seed is not None:
            return self.seed
        return BRIDGE_DEFAULT_SEED if self.bridge_compat else 0

    workers: int | None = None
    scratch_dir: Path | None = None
    overwrite: bool = False
    quiet: bool = False
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    layout: str = "bridge"


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


@dataclass
class PackResult:
    """What ``pack_files`` wrote and measured."""

    packed_path: Path
    metadata_path: Path
    rejects_path: Path
    metadata: dict[str, Any]
    counts: Counts
    num_packs: int
    runtime_tokens: int
    pack_size: int
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def padding_saved(self) -> int:
        """Padding tokens saved versus padding every packed sample to N: ``(sequences - packs) * N``."""
        return (self.counts.sequences - self.num_packs) * self.pack_size

    @property
    def padding_tokens(self) -> int:
        return self.num_packs * self.pack_size - self.runtime_tokens


def _check_options(opts: PackOptions) -> tuple[int, str]:
    if opts.pack_size <= 0:
        raise UsageError(f"--pack-size must be a positive integer, got {opts.pack_size}")
    if opts.split not in SPLITS:
        raise UsageError(f"--split must be one of {', '.join(SPLITS)}, got {opts.split!r}")
    if not opts.inputs:
        raise UsageError("no input files given")
    max_len = opts.pack_size if opts.max_seq_length is None else opts.max_seq_length
    if max_len > opts.pack_size:
        raise UsageError(f"--max-seq-length {max_len} is larger than --pack-size {opts.pack_size}")
    check_lengths(max_len, opts.pad_seq_to_mult)
    if opts.bridge_compat and opts.too_long is not None:
        raise UsageError("--too-long cannot be combined with --bridge-compat (compat decides long samples)")
    algorithm = opts.algorithm or (BRIDGE_DEFAULT_ALGORITHM if opts.bridge_compat else DEFAULT_ALGORITHM)
    if opts.cost_model is not None and algorithm != BALANCED:
        raise UsageError(f"--model sets the cost model of the {BALANCED} algorithm, not of {algorithm}")
    if opts.bridge_compat and algorithm not in BRIDGE_ALGORITHMS:
        raise UsageError(f"--bridge-compat needs one of Bridge's algorithms ({', '.join(BRIDGE_ALGORITHMS)})")
    if (opts.prompt_field is None) != (opts.completion_field is None):
        raise UsageError("--prompt-field and --completion-field go together")
    if opts.prompt_field is not None and opts.tokenizer is None:
        raise UsageError("--prompt-field/--completion-field need --tokenizer")
    if opts.layout not in LAYOUTS:
        raise UsageError(f"--layout must be one of {', '.join(LAYOUTS)}, got {opts.layout!r}")
    if opts.layout == "hf":  # the HF layout counts stored tokens (docs/pack.md); Bridge's bins do not
        if opts.bridge_compat:
            raise UsageError("--bridge-compat builds Bridge's packs; it cannot be combined with --layout hf")
        if opts.too_long is TooLong.split and max_len // opts.pad_seq_to_mult * opts.pad_seq_to_mult < 2:
            raise UsageError("--too-long split with --layout hf needs pieces of at least 2 tokens")
    check_eos_id(opts.eos_id)
    return max_len, algorithm


class _BackgroundHash:
    """:func:`_hash_inputs` on a daemon thread (hashlib releases the GIL), overlapping with the passes.

    A daemon thread never delays the exit of a failed or interrupted run.
    """

    def __init__(self, paths: list[Path]) -> None:
        self._result: list[str | BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(paths,), daemon=True, name="seqpack-hash")
        self._thread.start()

    def _run(self, paths: list[Path]) -> None:
        try:
            self._result.append(_hash_inputs(paths))
        except BaseException as exc:  # reported by result()
            self._result.append(exc)

    def result(self) -> str:
        self._thread.join()
        value = self._result[0]
        if isinstance(value, BaseException):
            raise InputError(f"cannot hash the inputs ({value})")
        return value


def _hash_inputs(paths: list[Path]) -> str:
    """SHA-256 over every input's bytes (directories: their files, sorted), in input order."""
    digest = hashlib.sha256()
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            with open(file, "rb") as handle:
                for block in iter(lambda h=handle: h.read(1 << 20), b""):  # type: ignore[misc]
                    digest.update(block)
    return digest.hexdigest()


def _check_existing(opts: PackOptions, packed: Path, meta_path: Path, record: dict[str, Any]) -> None:
    if packed.exists() and not opts.overwrite:
        raise UsageError(f"{packed}: already exists (pass --overwrite to replace it)")
    if not meta_path.exists():
        return
    for entry in PackingMetadata.read(meta_path).entries:
        other = entry.record
        if other is None or other.get("split") == opts.split:
            continue
        for key in _SPLIT_AGREEMENT:
            if other.get(key) != record[key]:
                raise UsageError(
                    f"{meta_path}: the {other.get('split')} split was packed with {key}={other.get(key)!r}, "
                    f"this run has {record[key]!r}; use another --out directory"
                )


def check_eos(examples: Examples, eos_id: int, paths: tuple[str, ...]) -> None:
    """Pre-tokenized input without a given EOS: every row must end with the same token."""
    last = examples.tokens[np.cumsum(examples.lengths) - 1]
    bad = np.flatnonzero(last != eos_id)
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"{examples.where(paths[examples.source], i, IDS_FIELD)}: last token {int(last[i])} "
            f"differs from {eos_id}, the EOS inferred as the most common last token of the first rows "
            "(pass --eos-id or --tokenizer, or fix the row)"
        )


@dataclass(frozen=True)
class _ShapeChunk:
    """A worker's whole share of pass 1 for one chunk: convert, check the EOS, shape.

    Picklable (it runs in processes for text). It returns the examples without their tokens: the shaped
    pieces carry them, and only those go to the scratch store.
    """

    converter: ChunkToExamples
    spec: ShapeSpec
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
            check_eos(examples, self.spec.eos_id, self.paths)
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

    def add(self, examples: Examples, shaped: Shaped, spec: ShapeSpec) -> None:
        """Store one chunk's shaped pieces (in input order), count them, list what was not kept as is."""
        self.store.append(shaped.tokens, shaped.mask, shaped.lengths)
        self.lengths.append(spec.counted(shaped.lengths))
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

    def _reject_line(self, examples: Examples, spec: ShapeSpec, i: int, action: Action, pieces: int) -> None:
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


def _text_spec(opts: PackOptions, eos_id: int, max_len: int) -> TextSpec:
    """The text step's settings; compat truncates long prompt-completion rows as Bridge does while it
    tokenizes: to the max length, + 1 with a pad multiple > 1 (``tokenize_dataset``'s stored length)."""
    assert opts.tokenizer is not None
    spec = TextSpec(
        os.fspath(opts.tokenizer),
        eos_id,
        opts.prompt_field,
        opts.completion_field,
        opts.messages_field,
        loss_mode=opts.loss_mode,
        separator=opts.separator,
        prompt_template=opts.prompt_template,
        strip_whitespace=opts.strip_whitespace,
        add_bos=opts.add_bos,
        add_sep=opts.add_sep,
        add_eos=opts.add_eos,
        truncation_method=opts.truncation_method,
        max_length=(max_len + int(opts.pad_seq_to_mult > 1)) if opts.bridge_compat else None,
        allow_missing_completion=opts.bridge_compat,
        chat=chat_options(opts.chat_template, opts.tool_schemas, opts.bridge_compat),
    )
    if spec.is_chat:
        spec.check_chat()
    else:
        spec.check_prompt_completion()
    return spec


def pack_files(opts: PackOptions) -> PackResult:
    """Pack ``opts.inputs`` into ``opts.out_dir`` (see the module docstring)."""
    max_len, algorithm = _check_options(opts)
    text_spec: TextSpec | None = None
    tok_sha = None
    eos_id = opts.eos_id
    eos_source = "--eos-id" if eos_id is not None else "inferred"
    if opts.tokenizer is not None:
        tokenizer = load_tokenizer(opts.tokenizer)
        tok_sha = tokenizer_hash(opts.tokenizer)
        if eos_id is None:
            eos_id, eos_source = tokenizer.eos_token_id, "tokenizer"
            if eos_id is None:
                raise UsageError(f"{opts.tokenizer}: the tokenizer has no EOS token; pass --eos-id")
        # Pre-tokenized input with --tokenizer: the tokenizer only names the EOS (#15: rows made by a chat
        # template end with its end token and a newline, so "the rows' last token" would pad with "\n").
        is_text, prompt, completion = text_fields(
            opts.inputs, opts.prompt_field, opts.completion_field, opts.messages_field
        )
        if is_text:
            fields = replace(opts, prompt_field=prompt, completion_field=completion)
            text_spec = _text_spec(fields, int(eos_id), max_len)
    out = opts.out_dir
    packed_path = out / packed_filename(opts.split, opts.pack_size)
    meta_path = out / metadata_filename(opts.pack_size)
    if opts.layout == "hf":  # never mixed with a Bridge set's files in the same directory
        packed_path = out / hf_filename(opts.split)
        meta_path = out / HF_METADATA
    rejects_path = out / rejects_filename(opts.split)
    run_id = new_run_id()  # carried by every file of the set (seqpack.data.runs)
    record: dict[str, Any] = {
        "version": __version__,
        "split": opts.split,
        "mode": "bridge-compat" if opts.bridge_compat else "seqpack",
        "layout": opts.layout,
        "algorithm": algorithm,
        "seed": opts.packing_seed,
        "pack_size": opts.pack_size,
        "pad_seq_to_mult": opts.pad_seq_to_mult,
        "max_seq_length": max_len,
        "too_long": None if opts.bridge_compat else (opts.too_long or TooLong.reject).value,
        "eos_id": eos_id,
        "eos_source": eos_source,  # --eos-id | tokenizer | inferred (the rows' most common last token)
        "tokenizer": os.fspath(opts.tokenizer) if opts.tokenizer else None,
        "tokenizer_sha256": tok_sha,
        RUN_ID: run_id,
    }
    if text_spec is not None:
        record["text"] = text_record(text_spec)
    _check_existing(opts, packed_path, meta_path, record)
    record["inputs"] = [os.fspath(p) for p in opts.inputs]
    workers = opts.workers if opts.workers is not None else default_workers()
    if workers < 1:
        raise UsageError(f"--workers must be >= 1, got {workers}")
    if opts.chunk_rows < 1:
        raise UsageError(f"--chunk-rows must be >= 1, got {opts.chunk_rows}")
    out.mkdir(parents=True, exist_ok=True)
    if packed_path.parent != out:  # the HF layout's data/ folder: never a link out of the directory
        if packed_path.parent.is_symlink():
            raise UsageError(f"{packed_path.parent}: a symbolic link; seqpack writes a real folder here")
        packed_path.parent.mkdir(exist_ok=True)
    # One run per output directory; a killed run's leftovers are reclaimed (docs/failure-behaviour.md).
    lock = claim_output_dir(out, opts.scratch_dir, packed_path.parent)
    try:
        store = ScratchStore((opts.scratch_dir or out) / default_scratch_dir(out).name)
    except BaseException:
        lock.release()
        raise
    seconds: dict[str, float] = {}
    try:
        with contextlib.ExitStack() as stack:
            # Commit order (the stack exits in reverse): metadata, then rejects, then the packed file last,
            # so a run killed at any point leaves no packed file under its final name that inspect accepts
            # (inspect reads a lone packed file without its sidecar).
            packed_tmp = stack.enter_context(atomic_path(packed_path, overwrite=True))
            stack.callback(fault_point, "rename")
            rejects_tmp = stack.enter_context(atomic_path(rejects_path, overwrite=True))
            bar = stack.enter_context(progress(opts.quiet))
            rejects = stack.enter_context(open(rejects_tmp, "wb"))
            t0 = time.perf_counter()
            input_hash = _BackgroundHash(opts.inputs)
            spool = _SpoolToScratch(as_paths(opts.inputs), store, rejects, run_id)
            task = bar.add_task("read", total=known_rows(opts.inputs))
            spec: ShapeSpec | None = None

            def spec_for(eos: int) -> ShapeSpec:
                too_long = opts.too_long or TooLong.reject
                return ShapeSpec(
                    max_len, opts.pad_seq_to_mult, eos, too_long, opts.bridge_compat, opts.layout == "hf"
                )

            chunks = iter_chunks(opts.inputs, opts.chunk_rows)
            converter = ChunkToExamples(spool.paths, text_spec)
            for examples, shaped, spec in _shaped_chunks(chunks, converter, spec_for, eos_id, workers):
                spool.add(examples, shaped, spec)
                fault_point("read")
                bar.advance(task, len(examples.lengths))
                _rate(bar, task, spool.counts, t0)
            seconds["read"] = time.perf_counter() - t0
            counts = spool.counts
            if counts.samples_in == 0:
                raise DataError(f"{', '.join(spool.paths)}: empty input (no samples)")
            if counts.sequences == 0:
                raise DataError(
                    f"{', '.join(spool.paths)}: no sample fits max length {max_len}; see the rejects"
                )
            assert spec is not None
            record["eos_id"] = spec.eos_id
            t1 = time.perf_counter()
            lengths = np.concatenate(spool.lengths)
            plan = _plan(lengths, opts, algorithm)
            record["algorithm"] = plan.algorithm
            if algorithm == BALANCED:
                record["cost_model"] = (opts.cost_model or CostModel.default()).to_record()
            seconds["plan"] = time.perf_counter() - t1
            fault_point("plan")
            t2 = time.perf_counter()
            write_task = bar.add_task("write", total=plan.num_packs)
            store.offsets()  # computed once, here: pass 2 reads the store from several threads

            def on_row_group(packs: int, _tokens: int) -> None:
                bar.advance(write_task, packs)
                fault_point("write")

            fingerprinter = PackedFingerprinter() if opts.layout == "bridge" else None
            write_packed(
                packed_tmp,
                store.read,
                plan.items,
                plan.pack_offsets,
                on_row_group=on_row_group,
                layout=opts.layout,
                fingerprinter=fingerprinter,
                threads=workers,
                key_value={PARQUET_RUN_ID: run_id.encode()},
            )
            if fingerprinter is not None:
                record["fingerprint"] = fingerprinter.result().to_dict()
            seconds["write"] = time.perf_counter() - t2
            record["input_sha256"] = input_hash.result()
            record["counts"] = {
                "samples_in": counts.samples_in,
                "packed": counts.packed,
                "rejected": counts.rejected,
                "truncated": counts.truncated,
                "split": counts.split,
                "dropped": counts.dropped,
                "sequences": counts.sequences,
                "packs": plan.num_packs,
            }
            entry = MetadataEntry.from_values(plan.bridge_metadata(), record)
            write_metadata_entry(meta_path, entry)
            fault_point("commit")
    except OSError as exc:  # ENOSPC, EFBIG (a file-size limit), EDQUOT: the directory, in one line
        if not is_disk_full(exc):
            raise
        raise disk_full_error(Path(exc.filename).parent if exc.filename else out, exc) from None
    finally:
        store.remove()
        lock.release()
    return PackResult(
        packed_path,
        meta_path,
        rejects_path,
        entry.to_dict(),
        counts,
        plan.num_packs,
        int(plan.total_length),
        opts.pack_size,
        seconds,
    )


def _shaped_chunks(
    chunks: Iterator[RawChunk],
    converter: ChunkToExamples,
    spec_for: Callable[[int], ShapeSpec],
    eos_id: int | None,
    workers: int,
) -> Iterator[tuple[Examples, Shaped, ShapeSpec]]:
    """Pass 1's chunks, converted and shaped on the workers, in input order.

    Without a known EOS (pre-tokenized input, no ``--eos-id``) the first chunk is converted here: its rows'
    most common last token (:func:`~seqpack.data.token_ids.infer_eos_id`) is the EOS every row must end
    with, and the shaping pads with it.
    """
    if eos_id is None:
        first_chunk = next(chunks, None)
        if first_chunk is None:
            return
        first = converter(first_chunk)
        eos = infer_eos_id(first.tokens, np.cumsum(first.lengths))
        job = _ShapeChunk(converter, spec_for(eos), infer_eos=True)
        yield (*job.shape(first), job.spec)
    else:
        job = _ShapeChunk(converter, spec_for(int(eos_id)), infer_eos=False)
    for examples, shaped in convert_all(chunks, job, workers):
        yield examples, shaped, job.spec


def _plan(lengths: np.ndarray, opts: PackOptions, algorithm: str) -> PackPlan:
    return pack_lengths(
        lengths, opts.pack_size, algorithm=algorithm, seed=opts.packing_seed, cost=opts.cost_model
    )


def _rate(bar: Any, task: Any, counts: Counts, t0: float) -> None:
    elapsed = max(time.perf_counter() - t0, 1e-9)
    bar.update(
        task,
        description=(
            f"read {counts.samples_in / elapsed:,.0f} samples/s {counts.tokens_in / elapsed:,.0f} tokens/s"
        ),
    )


def bridge_overrides(
    result: PackResult, *, cp: int = 1, tp: int = 1, sequence_parallel: bool = False
) -> list[str]:
    """The Megatron-Bridge 0.6.2 overrides that train on this output directory (spec §1, §4)."""
    record = result.metadata[SEQPACK_KEY]
    if record.get("layout") == "hf":
        return []
    n = result.pack_size
    out = result.packed_path.parent
    paths = {split: out / packed_filename(split, n) for split in ("training", "validation")}
    return offline_packing_overrides(
        n,
        int(record["pad_seq_to_mult"]),
        cp=cp,
        tp=tp,
        sequence_parallel=sequence_parallel,
        train_path=paths["training"] if paths["training"].exists() else None,
        val_path=paths["validation"] if paths["validation"].exists() else None,
        metadata_path=result.metadata_path,
    )
