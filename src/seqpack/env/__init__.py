"""The installed stack (Python, torch, CUDA, Megatron-Core, Bridge, Transformer Engine, ...) and what follows
from it for packing and long-context training: ``seqpack env``, and the versions ``seqpack doctor`` checks
known defects against. Versions come from distribution metadata, never by importing the packages.
"""

from seqpack.env._stack import (
    SCHEMA_VERSION,
    UPSTREAM,
    EnvReport,
    VersionTable,
    collect_versions,
    env_findings,
    env_report,
    installed_packages,
    parse_version,
)

__all__ = [
    "SCHEMA_VERSION",
    "UPSTREAM",
    "EnvReport",
    "VersionTable",
    "collect_versions",
    "env_findings",
    "env_report",
    "installed_packages",
    "parse_version",
]
