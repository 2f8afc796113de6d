"""What of bridgepack's own outputs a path is, so that one command's output given to another as input is
named for what it is instead of being read as something else.

``bridgepack pack packed/training_512.idx.parquet`` used to read each pack as one pre-tokenized sample
(``seq_start_id`` ignored: the sequences of a pack merged into one), exit 0; a rejects file or a sidecar
given to ``pack``, or samples given to ``inspect``, failed deep in a reader with a message about a field.
Each reader asks :func:`bridgepack_output` first and refuses (exit 2) what is not its input::

    packed/training_512.idx.parquet   packed data (one pack a row: input_ids, loss_mask, seq_start_id)
    packed/training_512/              a sharded pack set (a directory of shards)
    packed/                           the output directory of bridgepack pack
    packed/rejects_training_512.jsonl a rejects file of bridgepack pack
    packed/512_metadata.jsonl         a packing metadata sidecar
    batches.npz                       a batch dump (bridgepack inspect --dump-batches)

The kinds are told by content (a Parquet footer's columns, a JSON line's keys, a zip's members), never by
name alone: a sample file may be called anything.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path

import orjson

from bridgepack._io import compression_of, open_input
from bridgepack._parquet import open_parquet
from bridgepack.data.packset._metadata import RUN_ID
from bridgepack.data.packset._names import HF_METADATA
from bridgepack.data.packset._schema import HF_SCHEMA, PACKED_SCHEMA, PARQUET_SUFFIXES
from bridgepack.data.packset._sets import is_sharded
from bridgepack.errors import BridgepackError

PACKED_DATA = "packed data (one pack a row: input_ids, loss_mask, seq_start_id)"
HF_PACKED_DATA = "packed data of the Hugging Face layout (one pack a row)"
SHARDED_SET = "a sharded pack set (a directory of shards)"
OUTPUT_DIRECTORY = "the output directory of bridgepack pack"
REJECTS_FILE = "a rejects file of bridgepack pack (samples not packed, with the reason)"
METADATA_SIDECAR = "a packing metadata sidecar"
BATCH_DUMP = "a batch dump (bridgepack inspect --dump-batches)"
#: The kinds that are packed data: what ``inspect``, ``doctor --packed``, ``train``, ``diff`` and
#: ``fingerprint`` read.
PACKED_KINDS = frozenset({PACKED_DATA, HF_PACKED_DATA, SHARDED_SET})

_SIDECAR_NAME = re.compile(r"^\d+_metadata\.jsonl$")
#: The first line of a file is read up to this many bytes to tell what it is.
_PEEK_BYTES = 1 << 20


def bridgepack_output(path: str | os.PathLike[str]) -> str | None:
    """The kind of bridgepack output ``path`` is (one of this module's constants), or ``None`` when it is
    none of them (samples, logs, another tool's file) or cannot be read (its reader says why)."""
    location = Path(path)
    try:
        if location.is_dir():
            return _directory_kind(location)
        if not location.is_file():
            return None
        name = location.name.lower()
        if name.endswith(PARQUET_SUFFIXES):
            return _parquet_kind(location)
        if name.endswith(".npz"):
            return _npz_kind(location)
        return _json_kind(location)
    except (BridgepackError, OSError, ValueError):
        return None


def _directory_kind(directory: Path) -> str | None:
    """A folder of shards, or one holding a sidecar (by its content: a sample file may have its name)."""
    if is_sharded([directory]):
        return SHARDED_SET
    sidecars = [p for p in directory.glob("*_metadata.jsonl") if _SIDECAR_NAME.match(p.name)]
    sidecars += [p for p in (directory / HF_METADATA,) if p.is_file()]
    return OUTPUT_DIRECTORY if any(_json_kind(p) == METADATA_SIDECAR for p in sidecars) else None


def packed_columns(names: Iterable[str]) -> str | None:
    """The packed data a table of these columns is (:data:`PACKED_DATA` or :data:`HF_PACKED_DATA`),
    whichever file holds it: a packed set converted to Arrow IPC, JSON Lines or a ``datasets`` folder is
    still one pack a row, and read as samples it would merge each pack's sequences into one."""
    columns = set(names)
    if set(PACKED_SCHEMA.names) <= columns:
        return PACKED_DATA
    if set(HF_SCHEMA.names) <= columns:
        return HF_PACKED_DATA
    return None


def _parquet_kind(path: Path) -> str | None:
    return packed_columns(open_parquet(path).schema_arrow.names)


def _npz_kind(path: Path) -> str | None:
    with zipfile.ZipFile(path) as archive:  # the member names only: nothing is unpickled or loaded
        names = archive.namelist()
    return BATCH_DUMP if any(n.startswith("batch0.") for n in names) else None


def _json_kind(path: Path) -> str | None:
    """A sidecar is one JSON array of objects holding Bridge's keys; a rejects file's lines are objects
    with a reason and a run id."""
    if compression_of(path) is not None:
        return None
    with open_input(path) as handle:
        first = handle.readline(_PEEK_BYTES).strip()
    if first.startswith(b"["):
        try:
            doc = orjson.loads(first)
        except orjson.JSONDecodeError:
            return None
        is_entry = bool(doc) and isinstance(doc[0], dict) and "max_samples_per_bin" in doc[0]
        return METADATA_SIDECAR if is_entry else None
    try:
        record = orjson.loads(first)
    except orjson.JSONDecodeError:
        return None
    if isinstance(record, dict) and "reason" in record and RUN_ID in record:
        return REJECTS_FILE
    return None
