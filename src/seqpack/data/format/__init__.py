"""The on-disk format of a pack set: the metadata record, run ids, the names of its files and splits, the
packed schema and the rules of token ids (bridge-format §3). Writers and readers both build on it.
"""

from seqpack.data.format._metadata import (
    RUN_ID,
    SEQPACK_KEY,
    MetadataEntry,
    PackingMetadata,
    as_metadata,
    combine_metadata,
    read_metadata,
    write_metadata_entry,
)
from seqpack.data.format._names import (
    HF_METADATA,
    HF_SPLITS,
    SPLITS,
    TRAINING,
    VALIDATION,
    PackedNames,
    find_metadata,
    hf_data_dir,
    hf_filename,
    hf_metadata_path,
    hf_split,
    metadata_filename,
    packed_filename,
    packed_names,
    rejects_filename,
)
from seqpack.data.format._overrides import offline_packing_overrides
from seqpack.data.format._record import RUN_KEYS, PackCounts, PackRecord
from seqpack.data.format._runs import PARQUET_RUN_ID, check_run_ids, new_run_id
from seqpack.data.format._schema import (
    COMPRESSION,
    HF_SCHEMA,
    IGNORE_INDEX,
    PACKED_SCHEMA,
    PARQUET_SUFFIXES,
    REQUIRED_COLUMNS,
    ROW_GROUP_SIZE,
    Layout,
)
from seqpack.data.format._token_ids import MAX_TOKEN_ID, check_eos_id, most_common_last_token

__all__ = [
    "COMPRESSION",
    "HF_METADATA",
    "HF_SCHEMA",
    "HF_SPLITS",
    "IGNORE_INDEX",
    "MAX_TOKEN_ID",
    "PACKED_SCHEMA",
    "PARQUET_RUN_ID",
    "PARQUET_SUFFIXES",
    "REQUIRED_COLUMNS",
    "ROW_GROUP_SIZE",
    "RUN_ID",
    "RUN_KEYS",
    "SEQPACK_KEY",
    "SPLITS",
    "TRAINING",
    "VALIDATION",
    "Layout",
    "MetadataEntry",
    "PackCounts",
    "PackRecord",
    "PackedNames",
    "PackingMetadata",
    "as_metadata",
    "check_eos_id",
    "check_run_ids",
    "combine_metadata",
    "find_metadata",
    "hf_data_dir",
    "hf_filename",
    "hf_metadata_path",
    "hf_split",
    "metadata_filename",
    "most_common_last_token",
    "new_run_id",
    "offline_packing_overrides",
    "packed_filename",
    "packed_names",
    "read_metadata",
    "rejects_filename",
    "write_metadata_entry",
]
