"""The installed stack (Python, torch, CUDA, Megatron-Core, Bridge, Transformer Engine, ...) and what follows
from it for packing and long-context training: ``bridgepack env``, and the versions ``bridgepack doctor``
checks
known defects against. Versions come from distribution metadata, never by importing the packages.
"""

from bridgepack.env._stack import (
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
    "UPSTREAM",
    "EnvReport",
    "VersionTable",
    "collect_versions",
    "env_findings",
    "env_report",
    "installed_packages",
    "parse_version",
]
