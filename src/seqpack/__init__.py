"""seqpack: sequence packing and long-context training checks for Megatron-Bridge users."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from seqpack.errors import DataError, InputError, SeqpackError, UsageError

try:
    __version__ = version("seqpack")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"

__all__ = ["DataError", "InputError", "SeqpackError", "UsageError", "__version__"]
