"""The pack pipeline behind ``seqpack pack``: options, length policy and CP/SP pre-padding, the scratch
store and its lock, pass 1 / plan / pass 2 / commit, the Parquet writer with its parallel row groups, and
the sharded run an engine maps (two phases around one plan).
"""

from seqpack.data.pipeline._lengths import read_lengths
from seqpack.data.pipeline._options import (
    InputOptions,
    LengthPolicy,
    PackOptions,
    PackSize,
    Parallelism,
    RunSettings,
)
from seqpack.data.pipeline._pipeline import PackResult, overrides_for_result, pack_files
from seqpack.data.pipeline._shape import TooLong
from seqpack.data.pipeline._shard_tasks import read_slice, spool_is_intact, write_shard
from seqpack.data.pipeline._sharded import (
    GlobalPlan,
    ShardedRun,
    check_sharded,
    commit_sharded,
    plan_sharded,
    prepare_sharded,
    slice_inputs,
)
from seqpack.data.pipeline._staging import (
    OutputShard,
    ShardJob,
    ShardOutcome,
    ShardSlice,
    SliceOutcome,
    StagingPaths,
)

__all__ = [
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
