"""Pass 1 of a pack, the part a worker runs and the part that keeps its results, shared by the local
pipeline (``_pipeline``) and a sharded run's slices (``_shard_tasks``), so both read, convert and shape
exactly alike:

* :class:`ShapeChunk`: one chunk converted to examples, its EOS checked, and shaped (length policy, CP/SP
  pre-padding); picklable, it runs on the workers;
* :class:`SpoolToScratch`: the shaped chunks, in input order, appended to a scratch store, the samples not
  packed whole written to the rejects file, everything counted; only the runtime lengths stay in memory;
* :func:`shaped_chunks`: the chunks through :class:`ShapeChunk` on the workers, the EOS inferred from the
  first chunk when none was given;
* :func:`check_packable`: the refusal of a run with nothing to pack, once pass 1 has counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import orjson

from bridgepack.data.packset import RUN_ID, most_common_last_token
from bridgepack.data.pipeline._result import Counts
from bridgepack.data.pipeline._scratch import ScratchStore
from bridgepack.data.pipeline._shape import Action, Shaped, Shaping, shape
from bridgepack.data.samples import IDS_FIELD, ChunkToExamples, Examples, RawChunk, convert_all
from bridgepack.errors import DataError, param


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
class ShapeChunk:
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


class SpoolToScratch:
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


def shaped_chunks(
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
        job = ShapeChunk(converter, spec_for(eos), infer_eos=True)
        yield (*job.shape(first), job.spec)
    else:
        job = ShapeChunk(converter, spec_for(int(eos_id)), infer_eos=False)
    for examples, shaped in convert_all(chunks, job, workers):
        yield examples, shaped, job.spec


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
