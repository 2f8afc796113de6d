"""Reading samples: input files in bounded chunks (one table of input formats: JSONL, Parquet,
``datasets`` folders), the numba JSON scanner, stored examples (token ids + loss mask as flat arrays) and
the workers that convert chunks in order; text records go through :mod:`seqpack.data.samples.text`.
"""

from seqpack.data.samples._example_data import EXAMPLE_EOS_ID, example_dataset_path
from seqpack.data.samples._examples import IDS_FIELD, Examples
from seqpack.data.samples._formats import INPUT_FORMATS, InputFormat, formats_help, iter_chunks, known_rows
from seqpack.data.samples._ingest import (
    ChunkToExamples,
    as_paths,
    chunk_rows_for,
    convert_all,
    default_workers,
    text_fields,
)
from seqpack.data.samples._readers import RawChunk

__all__ = [
    "EXAMPLE_EOS_ID",
    "IDS_FIELD",
    "INPUT_FORMATS",
    "ChunkToExamples",
    "Examples",
    "InputFormat",
    "RawChunk",
    "as_paths",
    "chunk_rows_for",
    "convert_all",
    "default_workers",
    "example_dataset_path",
    "formats_help",
    "iter_chunks",
    "known_rows",
    "text_fields",
]
