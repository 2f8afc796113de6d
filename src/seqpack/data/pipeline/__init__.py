"""The pack pipeline behind ``seqpack pack``: options, length policy and CP/SP pre-padding, the scratch
store and its lock, pass 1 / plan / pass 2 / commit, and the Parquet writer with its parallel row groups.
"""

from seqpack.data.pipeline._lengths import read_lengths
from seqpack.data.pipeline._options import InputOptions, LengthPolicy, PackOptions, PackSize, RunSettings
from seqpack.data.pipeline._pipeline import PackResult, overrides_for_result, pack_files
from seqpack.data.pipeline._shape import TooLong

__all__ = [
    "InputOptions",
    "LengthPolicy",
    "PackOptions",
    "PackResult",
    "PackSize",
    "RunSettings",
    "TooLong",
    "overrides_for_result",
    "pack_files",
    "read_lengths",
]
