"""Reading samples: input files in bounded chunks (JSONL, Parquet, ``datasets`` folders), the numba JSON
scanner, stored examples (token ids + loss mask as flat arrays) and the workers that convert chunks in
order; text records go through :mod:`seqpack.data.samples.text`.
"""

from seqpack.data.samples._example_data import EXAMPLE_EOS_ID, example_dataset_path
from seqpack.data.samples._examples import IDS_FIELD, Examples
from seqpack.data.samples._ingest import (
    ChunkToExamples,
    as_paths,
    chunk_rows_for,
    convert_all,
    default_workers,
    text_fields,
)
from seqpack.data.samples._readers import RawChunk, iter_chunks, known_rows

__all__ = [
    "EXAMPLE_EOS_ID",
    "IDS_FIELD",
    "ChunkToExamples",
    "Examples",
    "RawChunk",
    "as_paths",
    "chunk_rows_for",
    "convert_all",
    "default_workers",
    "example_dataset_path",
    "iter_chunks",
    "known_rows",
    "text_fields",
]
