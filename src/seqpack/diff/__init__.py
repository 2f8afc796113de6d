"""Regression tools: content fingerprints, packed-data and batch comparison, the environment report."""

from seqpack.diff._env import (
    EnvFinding,
    EnvReport,
    VersionTable,
    collect_versions,
    env_findings,
    env_report,
    parse_version,
)

__all__ = [
    "EnvFinding",
    "EnvReport",
    "VersionTable",
    "collect_versions",
    "env_findings",
    "env_report",
    "parse_version",
]
