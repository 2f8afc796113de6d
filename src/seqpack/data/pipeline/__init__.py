"""The pack pipeline behind ``seqpack pack``: options, length policy and CP/SP pre-padding, the scratch
store and its lock, pass 1 / plan / pass 2 / commit, and the Parquet writer with its parallel row groups.
"""

from seqpack.data.pipeline._lengths import read_lengths
from seqpack.data.pipeline._options import InputOptions, LengthPolicy, PackOptions, PackSize, RunSettings
from seqpack.data.pipeline._pipeline import PackResult, overrides_for_result, pack_files
from seqpack.data.pipeline._shape import TooLong
from seqpack.data.pipeline._sharded import (
    ShardedRun,
    ShardJob,
    ShardOutcome,
    ShardSlice,
    StagingPaths,
    check_sharded,
    commit_sharded,
    pack_shard,
    prepare_sharded,
    read_outcome,
    slice_inputs,
)

__all__ = [
    "InputOptions",
    "LengthPolicy",
    "PackOptions",
    "PackResult",
    "PackSize",
    "RunSettings",
    "ShardJob",
    "ShardOutcome",
    "ShardSlice",
    "ShardedRun",
    "StagingPaths",
    "TooLong",
    "check_sharded",
    "commit_sharded",
    "overrides_for_result",
    "pack_files",
    "pack_shard",
    "prepare_sharded",
    "read_lengths",
    "read_outcome",
    "slice_inputs",
]
