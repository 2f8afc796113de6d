"""Batch dumps: the first K collated batches of a packed set, as plain arrays in one ``.npz``.

``bridgepack inspect DATA --dump-batches K --out F.npz`` writes them; ``bridgepack diff A.npz B.npz`` compares
two. Keys are ``batch{i}.{key}`` for every array the collator returns (``tokens``, ``labels``,
``loss_mask``, ``position_ids``, ``cu_seqlens_q``, ...; ``token_count`` as an int array; ``None`` values
left out), plus ``eos_id`` (0-d) so the diff can name EOS positions. Arrays only, never pickles: the file
loads with ``allow_pickle=False``.

Batches are cut from the packs in stored order, ``batch_size`` packs each (the rows one DP rank's collate
receives), so two dumps of the same data with two collators (e.g. Bridge 0.6.2 vs main) line up.
"""

from __future__ import annotations

import os
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from bridgepack._io import atomic_path
from bridgepack.batching.collate import VARIANTS, PackedCollator, Variant
from bridgepack.batching.dataset import PackedDataset
from bridgepack.data.packed import PackedSource, infer_eos_id
from bridgepack.data.packset import MetadataEntry
from bridgepack.errors import UsageError, param

#: The key under which a dump stores the EOS id it was collated with (``bridgepack diff`` reads it).
EOS_KEY = "eos_id"


def _as_array(value: Any) -> npt.NDArray[Any] | None:
    if value is None:
        return None
    if hasattr(value, "detach"):  # a torch tensor
        return np.asarray(value.detach().cpu().numpy())
    return np.asarray(value)


def _settings(entry: MetadataEntry | None, location: str) -> tuple[int, int]:
    """(pad_seq_to_mult, eos id) from bridgepack's metadata record; the EOS id is inferred when absent."""
    pad = (entry.pad_seq_to_mult if entry else None) or 1
    eos = entry.eos_id if entry else None
    if eos is not None:
        return pad, eos
    source = PackedSource(location)
    try:
        return pad, infer_eos_id(next(source.blocks()))
    finally:
        source.close()


def dump_batches(
    location: str,
    out: str | os.PathLike[str] | None,
    count: int,
    *,
    pack_size: int | None,
    metadata: MetadataEntry | None = None,
    batch_size: int = 1,
    variant: str = "0.6.2",
    overwrite: bool = False,
) -> int:
    """Collate the first ``count`` batches of ``location`` and write them to ``out``; returns batches written.

    ``metadata`` is the split's sidecar entry: bridgepack's record there gives the pre-padding multiple and
    the EOS id (else P = 1 and the EOS id is inferred from the sequences' last tokens).
    """
    if count < 1 or batch_size < 1:
        raise UsageError(f"{param('count')} and {param('batch_size')} must be >= 1")
    if out is None or not os.fspath(out).lower().endswith(".npz"):
        raise UsageError(f"{param('count')} needs {param('out')} F.npz (a batch dump is an .npz file)")
    if pack_size is None:
        raise UsageError(
            f"{location}: pack size unknown (no metadata sidecar, no _N in the name): pass "
            f"{param('metadata')}"
        )
    if variant not in VARIANTS:
        raise UsageError(f"{param('variant')} must be one of {', '.join(VARIANTS)}, got {variant!r}")
    pad, eos_id = _settings(metadata, location)
    dataset = PackedDataset(location)
    collate = PackedCollator(eos_id, pack_size, pad_seq_to_mult=pad, variant=cast(Variant, variant))
    arrays: dict[str, npt.NDArray[Any]] = {EOS_KEY: np.array(eos_id, dtype=np.int64)}
    batches = min(count, -(-len(dataset) // batch_size))
    for b in range(batches):
        items = [dataset[i] for i in range(b * batch_size, min((b + 1) * batch_size, len(dataset)))]
        for key, value in collate(items).items():
            array = _as_array(value)
            if array is not None:
                arrays[f"batch{b}.{key}"] = array
    with atomic_path(os.fspath(out), overwrite=overwrite) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, **arrays)  # type: ignore[arg-type]
    return batches
