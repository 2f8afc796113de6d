"""``bridgepack demo --tokenizer DIR``: the packs' token ids remapped to a small vocabulary for the tiny
model.

A real tokenizer has 100k-250k ids; the demo's conversations use a few hundred of them. An embedding and
output layer of 150k rows would make the two-layer model slow and its loss start at ln(150k), so the demo
trains on a copy of the packs where every id present is replaced by its rank among the ids present::

    ids present   [198, 271, 151644, 151645]      (sorted; the EOS id is always kept)
    packed row    [151644, 271, 198, 151645]  ->  [2, 1, 0, 3]

The mapping is a bijection on the ids present, so the packs keep their structure (the same boundaries, masks
and lengths) and the run trains on the same sequences; ``vocab_remap.json`` beside the copy lists the
original id of every new id. The metadata sidecar is copied with the EOS id remapped (the trainer pads with
it) and a ``vocab_remap`` record; its content fingerprint, which was over the original ids, is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from bridgepack._arrow import numpy_array
from bridgepack._io import atomic_write_bytes
from bridgepack._parquet import read_table
from bridgepack.data.packset import ROW_GROUP_SIZE, MetadataEntry, PackingMetadata

#: The file beside the remapped packs that maps each new id back to the tokenizer's.
MAPPING_NAME = "vocab_remap.json"


@dataclass(frozen=True)
class Remap:
    """The ids kept (sorted: new id ``i`` is ``kept[i]``) and the tokenizer they came from."""

    tokenizer: str
    tokenizer_size: int
    kept: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokenizer": self.tokenizer,
            "tokenizer_size": self.tokenizer_size,
            "kept": int(self.kept.size),
        }


def _remapped(entry: MetadataEntry, kept: np.ndarray, remap: Remap) -> MetadataEntry:
    """``entry`` with its recorded EOS id remapped, the remap recorded and the (now stale) fingerprint
    dropped; an entry without bridgepack's record is kept as it is."""
    if entry.record is None:
        return entry
    record = {k: v for k, v in entry.record.items() if k != "fingerprint"}
    if entry.eos_id is not None:
        record["eos_id"] = int(np.searchsorted(kept, entry.eos_id))
    record["vocab_remap"] = {**remap.to_dict(), "mapping": MAPPING_NAME}
    return replace(entry, record=record)


def remap_packs(
    packed: Path, metadata: Path, out_dir: Path, *, tokenizer: str, tokenizer_size: int, overwrite: bool
) -> Remap:
    """Write the packs and their sidecar under ``out_dir`` (same names) with the ids remapped."""
    table = read_table(packed)
    column = table.column("input_ids").combine_chunks()
    offsets = column.offsets
    values = column.values.to_numpy(zero_copy_only=False)
    sidecar = PackingMetadata.read(metadata)
    eos_ids = np.asarray([e.eos_id for e in sidecar.entries if e.eos_id is not None], dtype=values.dtype)
    kept, new_values = np.unique(np.concatenate([values, eos_ids]), return_inverse=True)
    remapped = pa.ListArray.from_arrays(offsets, numpy_array(new_values[: values.size], np.int64))
    table = table.set_column(table.schema.get_field_index("input_ids"), "input_ids", remapped)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=ROW_GROUP_SIZE, compression="snappy")
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out_dir / packed.name, sink.getvalue().to_pybytes(), overwrite=overwrite)
    remap = Remap(tokenizer, tokenizer_size, kept)
    PackingMetadata(tuple(_remapped(entry, kept, remap) for entry in sidecar.entries)).write(
        out_dir / metadata.name, overwrite=overwrite
    )
    mapping = {**remap.to_dict(), "original_id": kept.tolist()}
    atomic_write_bytes(out_dir / MAPPING_NAME, orjson.dumps(mapping), overwrite=overwrite)
    return remap
