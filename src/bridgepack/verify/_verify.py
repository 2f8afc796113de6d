"""``bridgepack verify --bridge``: check bridgepack against the Megatron-Bridge that is actually installed.

Parts, each with a status ``passed`` / ``failed`` / ``skipped: <reason>`` (a part that cannot run is never
counted as passed):

1. **packing** -- a generated dataset (seeded: varied lengths, prompt/answer masks) is packed by
   ``bridgepack pack --bridge-compat`` and by Bridge's own ``prepare_gpt_sft_packed_data`` (loaded by path,
   see
   :mod:`bridgepack.verify._bridge_peer`); the two outputs are compared with ``bridgepack diff``: same packs
   in
   the same order, same masks, same six metadata values. Runs on CPU, against ``--bridge-wheel`` if given.
2. **collate** -- Bridge's ``GPTSFTPackedParquetDataset`` + ``collate_fn`` on bridgepack's packed file vs
   bridgepack's ``PackedDataset`` + ``PackedCollator``, batch for batch, every key; needs Bridge importable
   (Megatron-Core, torch). bridgepack's collate variant follows the installed release
   (:func:`collate_variant`).
3. **config** -- doctor's rule cases (:data:`bridgepack.verify._bridge_config.CASES`: per rule mirroring a
check
   Bridge makes, a config breaking it and a passing twin) built into Bridge's own config classes and run
   through ``ConfigContainer.validate`` in a child interpreter; the verdicts are compared case by case
   (agree / doctor-only / bridge-only; configs this Bridge cannot express are listed as unbuilt). Needs an
   importable Bridge, or ``--bridge-wheel`` plus a Megatron-Core with ``megatron.training``
   (``--megatron-core-wheel``); see :mod:`bridgepack.verify._bridge_config_child` for how a wheel is loaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import orjson

from bridgepack.data.packset import PackingMetadata
from bridgepack.data.pipeline import InputOptions, PackOptions, PackSize, RunSettings, pack_files
from bridgepack.diff import diff_packed
from bridgepack.env import parse_version
from bridgepack.packing import BRIDGE_DEFAULT_ALGORITHM, BRIDGE_METADATA_KEYS
from bridgepack.verify._bridge_config import config_source, run_config_part
from bridgepack.verify._bridge_peer import bridge_available, load_offline_packing, temporary_workdir

if TYPE_CHECKING:
    from bridgepack.batching.collate import Variant

#: EOS id of the generated dataset (any id works; 2 matches the worked examples of bridge-format §2).
VERIFY_EOS = 2
#: Share of generated samples that get an EOS inside the answer (a multi-turn chat): what Bridge 0.6.2's
#: collate silences and main's keeps, so the collate part sees the difference between releases.
INNER_EOS_SHARE = 0.2
#: Batches (of GBS/DP packs) the collate part compares, and their size.
COLLATE_BATCHES = 8
COLLATE_BATCH_SIZE = 4


@dataclass(frozen=True)
class VerifyOptions:
    """What ``bridgepack verify --bridge`` takes."""

    wheel: str | None = None
    megatron_core_wheel: str | None = None
    samples: int = 2000
    pack_size: int = 512
    seed: int = 0
    pad_seq_to_mult: int = 1
    keep: Path | None = None


@dataclass
class PartResult:
    """The outcome of one part: ``passed``, ``failed`` or ``skipped`` (with the reason), and details."""

    name: str
    status: str
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"part": self.name, "status": self.status, "reason": self.reason, "details": self.details}


@dataclass(frozen=True)
class VerifyReport:
    """Every part of one :func:`verify_bridge` run, in order (``bridgepack verify --bridge``)."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    parts: list[PartResult]

    @property
    def failed(self) -> bool:
        return any(part.status == "failed" for part in self.parts)

    def to_dict(self) -> dict[str, Any]:
        """``bridgepack verify --bridge --format json``'s document."""
        return {"schema_version": self.SCHEMA_VERSION, "parts": [part.to_dict() for part in self.parts]}


def generate_samples(path: Path, n: int, max_len: int, seed: int) -> None:
    """Write ``n`` pre-tokenized SFT samples as JSONL: a prompt (mask 0) and an answer (mask 1), EOS-ended.

    Lengths spread from 2 tokens to ``max_len + 1`` stored tokens (runtime ``max_len``) with many short
    ones, as real SFT data, so packs hold from one to many sequences.
    """
    rng = np.random.default_rng(seed)
    lengths = np.minimum(2 + rng.geometric(1.0 / max(2, max_len // 6), size=n), max_len + 1)
    lines = []
    for length in lengths.tolist():
        prompt = int(rng.integers(1, length))
        ids = rng.integers(VERIFY_EOS + 1, 32000, size=length).tolist()
        ids[-1] = VERIFY_EOS
        if length - prompt > 3 and rng.random() < INNER_EOS_SHARE:
            ids[int(rng.integers(prompt + 1, length - 1))] = VERIFY_EOS
        mask = [0] * prompt + [1] * (length - prompt)
        lines.append(orjson.dumps({"input_ids": ids, "loss_mask": mask}))
    path.write_bytes(b"\n".join(lines) + b"\n")


class _Tokenizer:
    """What Bridge's offline packing asks of a tokenizer once tokenization is done: the EOS id."""

    eos_id = VERIFY_EOS
    eod = VERIFY_EOS


class _TokenizedDataset:
    """Stands in for Bridge's GPT SFT dataset: the generated samples, already tokenized."""

    def __init__(self, path: Path, pad_seq_length_to_mult: int) -> None:
        self.items = [orjson.loads(line) for line in path.read_bytes().splitlines() if line]
        self.tokenizer = _Tokenizer()
        self.pad_seq_length_to_mult = pad_seq_length_to_mult

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, list[int]]:
        item = self.items[index]
        return {"input_ids": list(item["input_ids"]), "loss_mask": list(item["loss_mask"])}


def _packing_part(opts: VerifyOptions, work: Path) -> tuple[PartResult, Path]:
    bridge = load_offline_packing(opts.wheel, work)
    samples = work / "samples.jsonl"
    generate_samples(samples, opts.samples, opts.pack_size, opts.seed)
    ours = pack_files(
        PackOptions(
            InputOptions((samples,), eos_id=VERIFY_EOS),
            PackSize(opts.pack_size, opts.pad_seq_to_mult, seed=opts.seed),
            RunSettings(work / "bridgepack", overwrite=True, quiet=True),
            bridge_compat=True,
        )
    )
    theirs_dir = work / "bridge"
    theirs_dir.mkdir(exist_ok=True)
    theirs = theirs_dir / f"training_{opts.pack_size}.npy"
    theirs_meta = theirs_dir / f"{opts.pack_size}_metadata.jsonl"

    def builder(*_args: Any, **_kwargs: Any) -> _TokenizedDataset:
        return _TokenizedDataset(samples, opts.pad_seq_to_mult)

    bridge.offline.prepare_gpt_sft_packed_data(
        input_path=samples,
        output_path=theirs,
        output_metadata_path=theirs_meta,
        packed_sequence_size=opts.pack_size,
        tokenizer=_Tokenizer(),
        max_seq_length=opts.pack_size,
        seed=opts.seed,
        packing_algorithm=BRIDGE_DEFAULT_ALGORITHM,
        pad_seq_to_mult=opts.pad_seq_to_mult,
        num_tokenizer_workers=1,
        dataset_builder=builder,
    )
    report = diff_packed(os.fspath(ours.packed_path), os.fspath(theirs), eos_id=VERIFY_EOS)
    ours_meta = PackingMetadata.read(ours.metadata_path).entries[0].bridge_values()
    bridge_meta = PackingMetadata.read(theirs_meta).entries[0].bridge_values()
    meta_diff = {
        key: [ours_meta[key], bridge_meta[key]]
        for key in BRIDGE_METADATA_KEYS
        if ours_meta[key] != bridge_meta[key]
    }
    passed = report["identical"] and not meta_diff
    details = {
        "bridge_version": bridge.version,
        "bridge_origin": bridge.origin,
        "samples": opts.samples,
        "pack_size": opts.pack_size,
        "seed": opts.seed,
        "pad_seq_to_mult": opts.pad_seq_to_mult,
        "packs": [report["packs"]["a"]["count"], report["packs"]["b"]["count"]],
        "metadata_differences": meta_diff,
        "diff_verdict": report["verdict"],
        "first_differing_pack": report["first_differing_pack"],
    }
    if opts.keep is not None:
        details["files"] = {"bridgepack": os.fspath(ours.packed_path), "bridge": os.fspath(theirs)}
    return PartResult("packing", "passed" if passed else "failed", "", details), ours.packed_path


def collate_variant(version: str) -> Variant:
    """bridgepack's collate variant for a Bridge release (bridge-format §1, §5): < 0.6 legacy keys, 0.6.x EOS
    zeroing, later releases main's behaviour (masks kept as stored, ``padding_mask``)."""
    release = parse_version(version)[:2]
    if release < (0, 6):
        return "legacy"
    return "0.6.2" if release == (0, 6) else "main"


def bridge_dataset_class() -> Any:
    """The installed Bridge's packed Parquet dataset class (only called when Bridge imports)."""
    from megatron.bridge.data.packing.parquet import GPTSFTPackedParquetDataset

    return GPTSFTPackedParquetDataset


def _same(ours: Any, theirs: Any) -> bool:
    if hasattr(theirs, "detach") or isinstance(theirs, np.ndarray):
        a, b = np.asarray(ours), np.asarray(theirs)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    return bool(ours == theirs)


def _collate_part(opts: VerifyOptions, packed: Path, version: str) -> PartResult:
    """Bridge's dataset + collate_fn against bridgepack's on the same packed file, key by key."""
    from bridgepack.batching import PackedCollator, PackedDataset

    variant = collate_variant(version)
    theirs = bridge_dataset_class()(
        file_path=os.fspath(packed),
        tokenizer=_Tokenizer(),
        max_seq_length=opts.pack_size,
        pad_seq_to_mult=opts.pad_seq_to_mult,
        prompt_template="{input} {output}",
        label_key="output",
        truncation_field="input",
    )
    ours = PackedDataset(packed)
    collate = PackedCollator(
        VERIFY_EOS, opts.pack_size, pad_seq_to_mult=opts.pad_seq_to_mult, variant=variant
    )
    n = len(ours)
    mismatches: list[dict[str, Any]] = []
    for b in range(COLLATE_BATCHES):
        indices = [(b * COLLATE_BATCH_SIZE + i) % n for i in range(COLLATE_BATCH_SIZE)]
        want = theirs.collate_fn([theirs[i] for i in indices])
        got = collate([ours[i] for i in indices])
        for key in sorted(set(want) | set(got)):
            if key not in got or key not in want or not _same(got[key], want[key]):
                mismatches.append(
                    {"batch": b, "key": key, "in_bridgepack": key in got, "in_bridge": key in want}
                )
    details: dict[str, Any] = {
        "variant": variant,
        "batches": COLLATE_BATCHES,
        "batch_size": COLLATE_BATCH_SIZE,
    }
    details["mismatches"] = mismatches[:20]
    return PartResult("collate", "failed" if mismatches else "passed", "", details)


def _config_part(opts: VerifyOptions, work: Path, importable: bool, why: str) -> PartResult:
    source, reason = config_source(opts.wheel, opts.megatron_core_wheel, work, importable, why)
    if source is None:
        return PartResult("config", "skipped", reason)
    status, reason, details = run_config_part(source, work)
    return PartResult("config", status, reason, details)


def verify_bridge(opts: VerifyOptions) -> list[PartResult]:
    """Run every part; parts that cannot run here come back ``skipped`` with the reason."""
    with temporary_workdir() as tmp:
        work = opts.keep if opts.keep is not None else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        packing, packed = _packing_part(opts, work)
        results = [packing]
        importable, why = bridge_available()
        if importable:
            results.append(_collate_part(opts, packed, packing.details["bridge_version"]))
        else:
            results.append(PartResult("collate", "skipped", why))
        results.append(_config_part(opts, work, importable, why))
    return results
