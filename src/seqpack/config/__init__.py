"""Deprecated: the doctor's package is :mod:`seqpack.doctor` (this alias goes away in the next release)."""

import warnings

from seqpack.doctor import *  # noqa: F403 -- the whole public API, under its old name
from seqpack.doctor import __all__  # noqa: F401

warnings.warn(
    "seqpack.config is now seqpack.doctor; the old name goes away in the next release",
    DeprecationWarning,
    stacklevel=2,
)
