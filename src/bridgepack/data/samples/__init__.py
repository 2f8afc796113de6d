"""Reading samples: input files in bounded chunks (one table of input formats: JSONL, Parquet,
``datasets`` folders), the numba JSON scanner, stored examples (token ids + loss mask as flat arrays) and
the workers that convert chunks in order; text records go through :mod:`bridgepack.data.samples.text`.
"""

from bridgepack.data.samples._example_data import EXAMPLE_EOS_ID, example_dataset_path
from bridgepack.data.samples._examples import IDS_FIELD, Examples
from bridgepack.data.samples._formats import (
    INPUT_FORMATS,
    InputFormat,
    formats_help,
    input_columns,
    iter_chunks,
    known_rows,
)
from bridgepack.data.samples._ingest import (
    ChunkToExamples,
    as_paths,
    chunk_rows_for,
    convert_all,
    default_workers,
    text_fields,
)
from bridgepack.data.samples._readers import RawChunk

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
    "input_columns",
    "iter_chunks",
    "known_rows",
    "text_fields",
]
