"""The pack pipeline behind ``bridgepack pack``: options, length policy and CP/SP pre-padding, the scratch
store and its lock, pass 1 / plan / pass 2 / commit, the Parquet writer with its parallel row groups, and
the sharded run an engine maps (two phases around one plan).
"""

from bridgepack.data.pipeline._lengths import read_lengths
from bridgepack.data.pipeline._options import (
    InputOptions,
    LengthPolicy,
    PackOptions,
    PackSize,
    Parallelism,
    RunSettings,
)
from bridgepack.data.pipeline._pipeline import pack_files
from bridgepack.data.pipeline._result import PackResult, overrides_for_result
from bridgepack.data.pipeline._shape import TooLong
from bridgepack.data.pipeline._shard_tasks import FAILED_CHUNK, read_slice, spool_is_intact, write_shard
from bridgepack.data.pipeline._sharded import (
    GlobalPlan,
    ShardedRun,
    check_sharded,
    commit_sharded,
    plan_sharded,
    prepare_sharded,
    slice_inputs,
)
from bridgepack.data.pipeline._staging import (
    STAGING_OPTIONS,
    OutputShard,
    ShardJob,
    ShardOutcome,
    ShardSlice,
    SliceOutcome,
    StagingPaths,
)

__all__ = [
    "FAILED_CHUNK",
    "STAGING_OPTIONS",
    "GlobalPlan",
    "InputOptions",
    "LengthPolicy",
    "OutputShard",
    "PackOptions",
    "PackResult",
    "PackSize",
    "Parallelism",
    "RunSettings",
    "ShardJob",
    "ShardOutcome",
    "ShardSlice",
    "ShardedRun",
    "SliceOutcome",
    "StagingPaths",
    "TooLong",
    "check_sharded",
    "commit_sharded",
    "overrides_for_result",
    "pack_files",
    "plan_sharded",
    "prepare_sharded",
    "read_lengths",
    "read_slice",
    "slice_inputs",
    "spool_is_intact",
    "write_shard",
]
