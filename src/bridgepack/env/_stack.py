"""The environment report: which versions of the training stack are installed, and what follows from them.

Versions are read from installed distribution metadata (``importlib.metadata``), never by importing the
package: importing megatron-core or transformer-engine to read a version string costs seconds and may fail
on a machine without a GPU. The one exception is torch, imported (when installed) to ask whether CUDA is
available and which CUDA it was built for.

What follows from the versions is a short list of rules (:data:`ENV_RULES`), each a pure function of a
:class:`VersionTable`, so tests feed faked tables and ``bridgepack doctor --env`` shows the same findings::

    megatron-core 0.16.1  ->  ENV001 warning: THD context-parallel partitioning needs megatron-core >= 0.18
    Python 3.11 + megatron-bridge 0.6.2  ->  ENV002 error: megatron-bridge >= 0.4 needs Python >= 3.12
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from packaging.version import InvalidVersion, Version

from bridgepack.findings import SEVERITIES, Finding, Severity

#: Distributions the report lists, in order: (display name, distribution names to try).
#: Transformer Engine ships under several distribution names depending on how it was installed.
REPORTED_PACKAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("torch", ("torch",)),
    ("transformers", ("transformers",)),
    ("megatron-core", ("megatron-core", "megatron_core")),
    ("megatron-bridge", ("megatron-bridge", "megatron_bridge")),
    ("transformer-engine", ("transformer-engine", "transformer_engine", "transformer-engine-torch")),
    ("flash-attn", ("flash-attn", "flash_attn")),
    ("cudnn", ("nvidia-cudnn-cu12", "nvidia-cudnn-cu13", "nvidia-cudnn-cu11")),
    ("numba", ("numba",)),
    ("pyarrow", ("pyarrow",)),
)

#: THD (packed) context-parallel partitioning of a batch is available from this megatron-core on.
MCORE_THD_CP_MIN = (0, 18)
#: megatron-core from this release on requires Python >= 3.12 (bridge-format §1 target stack).
MCORE_PY312_FROM = (0, 17)
#: megatron-bridge from this release on requires Python >= 3.12 (tests/_support/peers.py).
BRIDGE_PY312_FROM = (0, 4)
#: The Python those releases need.
PY_REQUIRED = (3, 12)
#: Bridge renamed the packing switches in this release (bridge-format §1 "Names by release").
BRIDGE_OFFLINE_NAMES_FROM = (0, 6)


def parse_version(text: str) -> tuple[int, ...]:
    """The release numbers of a PEP 440 version string: ``"0.16.1rc2+cu12"`` -> ``(0, 16, 1)``; ``()`` for
    text PEP 440 does not read (``"dev"``).

    Only the release numbers matter for the rules here, so pre-release and local tags are dropped
    (``0.18.0rc1`` counts as 0.18: a release candidate already carries the feature).
    """
    try:
        return Version(text.strip()).release
    except InvalidVersion:
        return ()


def _fmt(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


@dataclass(frozen=True)
class VersionTable:
    """What is installed: Python, the reported packages (``None`` = absent) and torch's CUDA view."""

    python: str
    packages: Mapping[str, str | None]
    cuda_available: bool | None = None
    cuda_version: str | None = None
    gpu_names: tuple[str, ...] = ()

    def version(self, name: str) -> tuple[int, ...] | None:
        """The parsed version of an installed package, ``None`` when absent."""
        text = self.packages.get(name)
        return None if text is None else parse_version(text)


#: What every finding of ``bridgepack env`` reports as its upstream: the versions installed here.
UPSTREAM = "installed versions (bridgepack env)"


def _finding(rule_id: str, severity: Severity, message: str, why: str, fix: str) -> Finding:
    return Finding(rule_id, severity, message, why, [fix], upstream=UPSTREAM)


@dataclass(frozen=True)
class EnvReport:
    """The versions and the findings, as ``bridgepack env`` prints them."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`); 2: findings in the
    #: shape
    #: every finding has (:class:`bridgepack.findings.Finding`: a ``fix`` list, ``fields``, ``upstream``,
    #: ``allowed``), not one string.
    SCHEMA_VERSION: ClassVar[int] = 2

    versions: VersionTable
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """``bridgepack env --format json``'s document."""
        table = self.versions
        return {
            "schema_version": self.SCHEMA_VERSION,
            "python": table.python,
            "platform": platform.platform(),
            "packages": dict(table.packages),
            "cuda": {
                "available": table.cuda_available,
                "version": table.cuda_version,
                "devices": list(table.gpu_names),
            },
            "findings": [f.to_dict() for f in self.findings],
        }


def _installed_version(names: tuple[str, ...]) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def installed_packages() -> dict[str, str | None]:
    """The version of every package ``bridgepack env`` reports (``None``: not installed), from distribution
    metadata alone: nothing is imported, so this is cheap enough for every ``bridgepack doctor`` run."""
    return {display: _installed_version(names) for display, names in REPORTED_PACKAGES}


def collect_versions() -> VersionTable:
    """Read the installed versions; import torch (only torch, only if installed) for the CUDA view."""
    packages = installed_packages()
    cuda_available: bool | None = None
    cuda_version: str | None = None
    gpu_names: tuple[str, ...] = ()
    if packages["torch"] is not None and importlib.util.find_spec("torch") is not None:
        import torch

        cuda_version = torch.version.cuda
        cuda_available = bool(torch.cuda.is_available())
        if cuda_available:
            gpu_names = tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    python = ".".join(str(part) for part in sys.version_info[:3])
    return VersionTable(python, packages, cuda_available, cuda_version, gpu_names)


# --- rules: each takes the table and returns a finding or None ------------------------------------------


def _rule_thd_cp(table: VersionTable) -> Finding | None:
    mcore = table.version("megatron-core")
    if mcore is None or mcore >= MCORE_THD_CP_MIN:
        return None
    return _finding(
        "ENV001",
        "warning",
        f"megatron-core {table.packages['megatron-core']} cannot partition packed (THD) batches for context "
        f"parallelism: that needs megatron-core >= {_fmt(MCORE_THD_CP_MIN)}",
        "packed sequences with context_parallel_size > 1 go through Megatron-Core's THD CP partitioning, "
        f"which first shipped in {_fmt(MCORE_THD_CP_MIN)}",
        f"upgrade megatron-core to >= {_fmt(MCORE_THD_CP_MIN)} before training packed data with CP > 1 "
        "(CP = 1 is unaffected)",
    )


def _rule_python(table: VersionTable) -> Finding | None:
    py = parse_version(table.python)
    if py[:2] >= PY_REQUIRED:
        return None
    needing = []
    mcore = table.version("megatron-core")
    bridge = table.version("megatron-bridge")
    if mcore is not None and mcore >= MCORE_PY312_FROM:
        needing.append(f"megatron-core {table.packages['megatron-core']} (>= {_fmt(MCORE_PY312_FROM)})")
    if bridge is not None and bridge >= BRIDGE_PY312_FROM:
        needing.append(f"megatron-bridge {table.packages['megatron-bridge']} (>= {_fmt(BRIDGE_PY312_FROM)})")
    required = _fmt(PY_REQUIRED)
    if needing:
        return _finding(
            "ENV002",
            "error",
            f"Python {table.python} is too old for the installed {' and '.join(needing)}: they need "
            f"Python >= {required}",
            "these releases use Python 3.12 syntax and standard-library features; imports fail or behave "
            "differently on older interpreters",
            f"use a Python >= {required} environment for training",
        )
    return _finding(
        "ENV003",
        "info",
        f"Python {table.python} can only run megatron-core < {_fmt(MCORE_PY312_FROM)} and "
        f"megatron-bridge < {_fmt(BRIDGE_PY312_FROM)}",
        f"megatron-core >= {_fmt(MCORE_PY312_FROM)} and megatron-bridge >= {_fmt(BRIDGE_PY312_FROM)} "
        f"require Python >= {required}",
        f"train in a Python >= {required} environment to use current Megatron-Bridge releases",
    )


def _rule_bridge_names(table: VersionTable) -> Finding | None:
    bridge = table.version("megatron-bridge")
    if bridge is None:
        return None
    version = table.packages["megatron-bridge"]
    if bridge >= BRIDGE_OFFLINE_NAMES_FROM:
        return _finding(
            "ENV004",
            "info",
            f"megatron-bridge {version} uses the v0.6 packing names: dataset.enable_offline_packing=True "
            "with dataset.offline_packing_specs (and dataset.enable_in_batch_packing for VLMs)",
            f"Bridge {_fmt(BRIDGE_OFFLINE_NAMES_FROM)} renamed the switches; configs that set "
            "dataset.packed_sequence_specs alone no longer turn packing on",
            "write configs in the v0.6 names (bridgepack doctor says which era a config is in)",
        )
    return _finding(
        "ENV004",
        "info",
        f"megatron-bridge {version} uses the pre-v0.6 packing names: dataset.packed_sequence_specs "
        "(and dataset.pack_sequences_in_batch for VLMs)",
        f"the enable_offline_packing / offline_packing_specs names only exist from Bridge "
        f"{_fmt(BRIDGE_OFFLINE_NAMES_FROM)} on",
        "write configs in the pre-v0.6 names for this Bridge, or upgrade Bridge",
    )


def _rule_cuda(table: VersionTable) -> Finding | None:
    if table.packages.get("torch") is None or table.cuda_available is not False:
        return None
    build = f"built for CUDA {table.cuda_version}" if table.cuda_version else "a CPU-only build"
    return _finding(
        "ENV005",
        "info",
        f"torch {table.packages['torch']} ({build}) sees no GPU on this machine",
        "Megatron training, Transformer Engine and flash-attention need a CUDA device",
        "run `bridgepack env` and `bridgepack verify --bridge` on the training machine for its real picture",
    )


#: The rules, in report order.
ENV_RULES: tuple[Callable[[VersionTable], Finding | None], ...] = (
    _rule_python,
    _rule_thd_cp,
    _rule_bridge_names,
    _rule_cuda,
)


def env_findings(table: VersionTable | None = None) -> list[Finding]:
    """The findings for ``table`` (default: this machine), errors first; what ``doctor --env`` shows."""
    table = collect_versions() if table is None else table
    found = [finding for rule in ENV_RULES if (finding := rule(table)) is not None]
    return sorted(found, key=lambda f: SEVERITIES.index(f.severity))


def env_report(table: VersionTable | None = None) -> EnvReport:
    """Versions plus findings for ``table`` (default: this machine)."""
    table = collect_versions() if table is None else table
    return EnvReport(table, env_findings(table))
