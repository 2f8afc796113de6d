"""``bridgepack diff`` for two packed sets: from the cheapest difference to the deepest, streamed.

The report answers, in order:

1. **metadata** -- keys of the sidecars (``{N}_metadata.jsonl`` beside the data) that differ;
2. **packs** -- pack count, tokens and packing efficiency of each side (different pack sizes are reported,
   not refused);
3. **sequences** -- is the multiset of sequences (tokens) the same? Then only the assignment to packs
   differs. If not: how many are only in A / only in B, with a readable excerpt of the first few;
4. **loss masks** -- for sequences with the same tokens but another mask, the supervised positions that
   changed, summed by kind (:data:`bridgepack.fingerprint.MASK_KINDS`), e.g. "positions whose input is EOS:
   supervised in B, not in A: 48,210 tokens";
5. **boundaries** -- packs at the same index with the same tokens but other sequence starts or masks;
6. **first differing pack** -- its index and both sides' excerpts, with the first differing position;
7. **unlike its record** -- a side that no longer matches the fingerprint ``bridgepack pack`` recorded for it
   (edited after it was written): the report says what changed, and the CLI then exits 1 with the one
   line every reader prints for such a set.

Memory: one pass over each side keeps only per-sequence and per-pack hashes (about 40 bytes per
sequence); excerpts re-read single packs through the row-group cache.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bridgepack.data.packed import (
    PackedRow,
    PackedSource,
    files_recorded_fingerprint,
    infer_eos_id,
    mismatch,
    not_as_recorded,
    resolve_packed_paths,
    scan_blocks,
)
from bridgepack.data.packset import (
    BRIDGEPACK_KEY,
    LEGACY_SUFFIX,
    RUN_KEYS,
    MetadataEntry,
    PackingMetadata,
    check_run_ids,
    find_metadata,
    packed_names,
)
from bridgepack.diff._match import match_sequences
from bridgepack.errors import DataError, InputError
from bridgepack.fingerprint import MASK_KINDS, PackTable, SequenceTable
from bridgepack.packing import packing_efficiency

ProgressHook = Callable[[int], None] | None

#: How a mask kind reads in a sentence ("<label>: supervised in B, not in A: N tokens").
KIND_LABELS: Mapping[str, str] = {
    "last": "last positions of a sequence",
    "eos_input": "EOS positions (input token is EOS)",
    "eos_label": "positions predicting EOS",
    "other": "other positions",
}
#: Sequences shown per side in "only in A/B" excerpts, and tokens shown per excerpt.
EXAMPLES = 3
EXCERPT_TOKENS = 16
#: Keys of bridgepack's own record left out of the metadata comparison: they describe the run (its id,
#: version,
#: paths as typed), or repeat what the data comparison measures itself (the fingerprints).
IGNORED_RECORD_KEYS = RUN_KEYS | {"seconds", "fingerprint"}


@dataclass
class _Side:
    """One side of the comparison: its source, metadata and the hashes of its scan."""

    label: str
    source: PackedSource
    metadata_path: str | None
    metadata: PackingMetadata | None
    seqs: SequenceTable
    packs: PackTable
    fingerprint: dict[str, Any]
    #: How the side differs from what ``bridgepack pack`` recorded for it (``None``: as recorded, or no
    #: record).
    unlike_record: dict[str, Any] | None = None

    @property
    def seq_offsets(self) -> npt.NDArray[np.int64]:
        """Global index of each pack's first sequence (length ``num_packs + 1``)."""
        return np.concatenate([np.zeros(1, np.int64), np.cumsum(self.packs.nseq)])


def _flatten(entry: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in entry.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _entry_for(metadata: PackingMetadata, location: str) -> MetadataEntry | None:
    """The metadata entry describing ``location``: the one of its split, else the first (Bridge's train)."""
    picked = metadata.pick(packed_names([location]).split)
    if picked is not None:
        return picked[1]
    return metadata.entries[0] if metadata.entries else None


def recorded_entry_fingerprint(location: str) -> tuple[str, int, dict[str, Any]] | None:
    """The fingerprint ``bridgepack pack`` recorded for ``location``: (sidecar path, entry index, record), if
    there is one; the set checked as every reader checks it (:func:`check_run_ids`), and a record this
    bridgepack cannot check refused (:func:`files_recorded_fingerprint`)."""
    # the location first (a legacy .npy is its own file): what it is not is said before any sidecar
    files = [location] if location.lower().endswith(LEGACY_SUFFIX) else resolve_packed_paths(location)
    meta_path = find_metadata(files)
    if meta_path is None:
        return None
    metadata = PackingMetadata.read(meta_path)
    check_run_ids(files, meta_path, metadata)
    found = files_recorded_fingerprint(files, metadata, meta_path)
    return None if found is None else (os.fspath(meta_path), *found)


def unlike_record_error(report: Mapping[str, Any]) -> DataError | None:
    """The error every reader raises for packs unlike their record (exit 1), for the first side of a
    packed :func:`diff_packed` report that no longer matches what ``bridgepack pack`` recorded; ``None``."""
    for label in ("a", "b"):
        unlike = report.get("unlike_record", {}).get(label)
        if unlike is not None:
            location = report[label]["path"]
            return not_as_recorded(location, unlike["metadata"], unlike["entry"], unlike["differs"])
    return None


def _open_side(location: str) -> tuple[PackedSource, str | None, PackingMetadata | None]:
    source = PackedSource(location)
    meta_path = find_metadata(source.paths)
    metadata = PackingMetadata.read(meta_path) if meta_path is not None else None
    check_run_ids(source.paths, meta_path, metadata)
    return source, None if meta_path is None else os.fspath(meta_path), metadata


def _scan(
    label: str,
    source: PackedSource,
    meta: PackingMetadata | None,
    path: str | None,
    eos: int,
    on_packs: ProgressHook,
) -> _Side:
    scanner = scan_blocks(source.blocks(), eos_id=eos, keep_sequences=True, on_packs=on_packs)
    found = scanner.result()
    recorded = files_recorded_fingerprint(source.paths, meta, path) if path is not None else None
    if recorded is not None and recorded[1]["algorithm"] != found.algorithm:  # an earlier algorithm's record
        then = scan_blocks(source.blocks(), eos_id=-1, algorithm=recorded[1]["algorithm"]).result()
        what = mismatch(recorded[1], then)
    else:
        what = None if recorded is None else mismatch(recorded[1], found)
    unlike = None
    if what is not None and path is not None and recorded is not None:  # reported, then refused (the CLI)
        unlike = {"metadata": path, "entry": recorded[0], "differs": what}
    seqs, packs = scanner.tables()
    return _Side(label, source, path, meta, seqs, packs, found.to_dict(), unlike)


def _excerpt(tokens: npt.NDArray[Any], mask: npt.NDArray[Any], start: int = 0) -> dict[str, Any]:
    """A readable window of ``EXCERPT_TOKENS`` tokens and their mask bits from ``start``."""
    end = min(len(tokens), start + EXCERPT_TOKENS)
    return {
        "from": int(start),
        "tokens": [int(t) for t in tokens[start:end]],
        "loss_mask": [int(m) for m in mask[start:end]],
        "length": len(tokens),
    }


def _sequence(side: _Side, index: int) -> tuple[int, int, npt.NDArray[Any], npt.NDArray[Any]]:
    """(pack, position in pack, tokens, mask) of global sequence ``index``."""
    offsets = side.seq_offsets
    pack = int(np.searchsorted(offsets, index, side="right") - 1)
    row = side.source.row(pack)
    k = index - int(offsets[pack])
    starts = row.seq_start_id
    a = int(starts[k])
    b = int(starts[k + 1]) if k + 1 < len(starts) else len(row.input_ids)
    return pack, k, row.input_ids[a:b], row.loss_mask[a:b]


def _examples(side: _Side, indices: npt.NDArray[np.int64]) -> list[dict[str, Any]]:
    out = []
    for index in indices[:EXAMPLES]:
        pack, k, tokens, mask = _sequence(side, int(index))
        out.append(
            {
                "pack": pack,
                "sequence": k,
                "hash": f"{int(side.seqs.tok[index]):016x}",
                **_excerpt(tokens, mask),
            }
        )
    return out


def _efficiency(side: _Side, pack_size: int | None) -> float | None:
    """Bridge's packing efficiency: runtime tokens (one less per sequence) over packs x pack size."""
    if not pack_size or len(side.packs.nseq) == 0:
        return None
    runtime = int(side.seqs.length.sum()) - len(side.seqs.length)
    return packing_efficiency(runtime, len(side.packs.nseq), pack_size)


def _pack_summary(side: _Side, entry: MetadataEntry | None, location: str) -> dict[str, Any]:
    pack_size = entry.pack_size if entry else packed_names([location]).pack_size
    return {
        "count": len(side.packs.nseq),
        "sequences": len(side.seqs.length),
        "tokens": int(side.packs.length.sum()),
        "pack_size": pack_size,
        "efficiency": _efficiency(side, pack_size if isinstance(pack_size, int) else None),
        "max_sequences_per_pack": int(side.packs.nseq.max()) if len(side.packs.nseq) else 0,
    }


def _metadata_section(
    a: _Side, b: _Side, meta_a: MetadataEntry | None, meta_b: MetadataEntry | None
) -> dict[str, Any]:
    diffs: dict[str, list[Any]] = {}
    record_only_in: str | None = None
    entry_a = None if meta_a is None else meta_a.to_dict()
    entry_b = None if meta_b is None else meta_b.to_dict()
    if entry_a is not None and entry_b is not None:
        # A file written by Bridge (or another tool) has no bridgepack record: compare Bridge's keys only.
        has_a, has_b = BRIDGEPACK_KEY in entry_a, BRIDGEPACK_KEY in entry_b
        if has_a != has_b:
            record_only_in = "a" if has_a else "b"
            entry_a = {k: v for k, v in entry_a.items() if k != BRIDGEPACK_KEY}
            entry_b = {k: v for k, v in entry_b.items() if k != BRIDGEPACK_KEY}
        flat_a, flat_b = _flatten(entry_a), _flatten(entry_b)
        for key in sorted(set(flat_a) | set(flat_b)):
            if key.startswith(f"{BRIDGEPACK_KEY}.") and key.split(".")[1] in IGNORED_RECORD_KEYS:
                continue
            if flat_a.get(key) != flat_b.get(key):
                diffs[key] = [flat_a.get(key), flat_b.get(key)]
    if (entry_a is None) != (entry_b is None):  # a sidecar (or its split's entry) on one side only
        diffs["(metadata entry)"] = ["present" if entry_a else None, "present" if entry_b else None]
    return {
        "a": a.metadata_path,
        "b": b.metadata_path,
        "compared": entry_a is not None and entry_b is not None,
        "bridgepack_record_only_in": record_only_in,
        "differences": diffs,
        "not_compared": sorted(f"{BRIDGEPACK_KEY}.{key}" for key in IGNORED_RECORD_KEYS),
    }


def _mask_section(
    a: _Side, b: _Side, changed_a: npt.NDArray[np.int64], changed_b: npt.NDArray[np.int64]
) -> dict[str, Any]:
    delta = b.seqs.kinds[changed_b].astype(np.int64) - a.seqs.kinds[changed_a]
    kinds: dict[str, Any] = {}
    for column, kind in enumerate(MASK_KINDS):
        d = delta[:, column]
        gained, lost = int(d[d > 0].sum()), int(-d[d < 0].sum())
        if gained or lost:
            kinds[kind] = {
                "label": KIND_LABELS[kind],
                "supervised_in_b_not_a": gained,
                "supervised_in_a_not_b": lost,
                "sequences": int(np.count_nonzero(d)),
            }
    example = None
    if len(changed_a):
        pack_a, k_a, tok, mask_a = _sequence(a, int(changed_a[0]))
        pack_b, k_b, _tok, mask_b = _sequence(b, int(changed_b[0]))
        first = int(np.flatnonzero(mask_a != mask_b)[0])
        start = max(0, first - EXCERPT_TOKENS // 2)
        example = {
            "first_position": first,
            "a": {"pack": pack_a, "sequence": k_a, **_excerpt(tok, mask_a, start)},
            "b": {"pack": pack_b, "sequence": k_b, **_excerpt(tok, mask_b, start)},
        }
    return {"sequences": len(changed_a), "kinds": kinds, "example": example}


def _first_difference(ra: PackedRow, rb: PackedRow) -> tuple[str, int]:
    """What differs first between two packs (field, position); ``("", -1)`` when equal."""
    for field in ("input_ids", "loss_mask", "seq_start_id"):
        x, y = getattr(ra, field), getattr(rb, field)
        n = min(len(x), len(y))
        diff = np.flatnonzero(np.asarray(x[:n], np.int64) != np.asarray(y[:n], np.int64))
        if diff.size:
            return field, int(diff[0])
        if len(x) != len(y):
            return field, n
    return "", -1


def _pack_sections(a: _Side, b: _Side) -> tuple[dict[str, Any], dict[str, Any] | None]:
    n = min(len(a.packs.nseq), len(b.packs.nseq))
    ha, hb = a.packs.hashes[:n], b.packs.hashes[:n]
    same_tokens = ha[:, 0] == hb[:, 0]
    differs = np.any(ha != hb, axis=1)
    sorted_a = np.sort(
        a.packs.hashes.view([("t", "u8"), ("m", "u8"), ("s", "u8")]).ravel(), order=["t", "m", "s"]
    )
    sorted_b = np.sort(
        b.packs.hashes.view([("t", "u8"), ("m", "u8"), ("s", "u8")]).ravel(), order=["t", "m", "s"]
    )
    boundaries = {
        "compared_packs": n,
        "differing_packs": int(np.count_nonzero(differs)) + abs(len(a.packs.nseq) - len(b.packs.nseq)),
        "tokens_differ": int(np.count_nonzero(~same_tokens)),
        "same_tokens_other_boundaries": int(np.count_nonzero(same_tokens & (ha[:, 2] != hb[:, 2]))),
        "same_tokens_other_masks": int(np.count_nonzero(same_tokens & (ha[:, 1] != hb[:, 1]))),
        "same_packs_other_order": bool(
            len(sorted_a) == len(sorted_b) and bool(np.all(sorted_a == sorted_b)) and bool(np.any(differs))
        ),
    }
    hits = np.flatnonzero(differs)
    if hits.size:
        index = int(hits[0])
    elif len(a.packs.nseq) != len(b.packs.nseq):
        index = n
    else:
        return boundaries, None
    first: dict[str, Any] = {"index": index}
    rows = {}
    for side in (a, b):
        if index < len(side.packs.nseq):
            rows[side.label] = side.source.row(index)
    if len(rows) == 2:
        field, pos = _first_difference(rows["a"], rows["b"])
        first.update(field=field, position=pos)
    else:
        first.update(field="pack count", position=-1)
        pos = 0
    for label, row in rows.items():
        start = max(0, pos - EXCERPT_TOKENS // 2) if first["field"] in ("input_ids", "loss_mask") else 0
        first[label] = {
            "seq_start_id": [int(s) for s in row.seq_start_id],
            **_excerpt(row.input_ids, row.loss_mask, start),
        }
    return boundaries, first


def diff_packed(
    spec_a: str, spec_b: str, *, eos_id: int | None = None, on_packs: ProgressHook = None
) -> dict[str, Any]:
    """Compare two packed sets; the JSON-ready report (``identical`` says whether anything differs).

    ``on_packs(n)`` is called as packs of either side are scanned (a progress bar's advance).
    """
    src_a, path_a, meta_a = _open_side(spec_a)
    try:
        src_b, path_b, meta_b = _open_side(spec_b)
    except BaseException:
        src_a.close()
        raise
    try:
        eos = eos_id if eos_id is not None else meta_a.eos_id if meta_a else None
        if eos is None and meta_b is not None:
            eos = meta_b.eos_id
        if eos is None:
            first = next(src_a.blocks(), None)
            if first is None:  # pragma: no cover - readers refuse empty files
                raise InputError(f"{spec_a}: no packs")
            eos = infer_eos_id(first)
        a = _scan("a", src_a, meta_a, path_a, eos, on_packs)
        b = _scan("b", src_b, meta_b, path_b, eos, on_packs)
        entry_a = _entry_for(meta_a, spec_a) if meta_a else None
        entry_b = _entry_for(meta_b, spec_b) if meta_b else None
        match = match_sequences(a.seqs.tok, a.seqs.mask, b.seqs.tok, b.seqs.mask)
        boundaries, first_pack = _pack_sections(a, b)
        packs_a, packs_b = _pack_summary(a, entry_a, spec_a), _pack_summary(b, entry_b, spec_b)
        metadata = _metadata_section(a, b, entry_a, entry_b)
        same_tokens = len(match.only_a) == 0 and len(match.only_b) == 0
        same_content = same_tokens and len(match.changed_a) == 0
        identical = same_content and first_pack is None and not metadata["differences"]
        if identical:
            verdict = "identical"
        elif first_pack is None:
            verdict = "same packs; metadata differs"
        elif same_content and boundaries["same_packs_other_order"]:
            verdict = "same packs in another order"
        elif same_content:
            verdict = "same sequences and masks, packed differently (only the assignment differs)"
        elif same_tokens:
            verdict = "same sequences, different loss masks"
        else:
            verdict = "different sequences"
        return {
            "kind": "packed",
            "identical": identical,
            "verdict": verdict,
            "eos_id": eos,
            "a": {"path": spec_a, "files": src_a.paths, "fingerprint": a.fingerprint},
            "b": {"path": spec_b, "files": src_b.paths, "fingerprint": b.fingerprint},
            "metadata": metadata,
            "packs": {
                "a": packs_a,
                "b": packs_b,
                "pack_size_differs": None not in (packs_a["pack_size"], packs_b["pack_size"])
                and packs_a["pack_size"] != packs_b["pack_size"],
            },
            "sequences": {
                "a": len(a.seqs.tok),
                "b": len(b.seqs.tok),
                "identical": len(match.identical_a),
                "same_tokens_other_mask": len(match.changed_a),
                "only_in_a": len(match.only_a),
                "only_in_b": len(match.only_b),
                "only_in_a_examples": _examples(a, match.only_a),
                "only_in_b_examples": _examples(b, match.only_b),
            },
            "loss_mask": _mask_section(a, b, match.changed_a, match.changed_b),
            "boundaries": boundaries,
            "first_differing_pack": first_pack,
            # a side edited after it was packed: the diff says what changed, and which side it was
            "unlike_record": {"a": a.unlike_record, "b": b.unlike_record},
        }
    finally:
        src_a.close()
        src_b.close()
