"""Release numbers of the training stack, the half-open ranges a known defect covers, and which versions (and
GPU architecture) a report assumed and where each came from.

A defect is present from its first affected release up to, not including, the first release with the fix::

    first 0.3.0, fixed 0.5.1    ->   0.3.0 <= v < 0.5.1     (0.5.0 affected, 0.5.1 not)
    first None,  fixed 0.5.0    ->   every release before 0.5.0
    first 2.18,  fixed None     ->   every release from 2.18 on (no release is known to fix it)

Versions are read as PEP 440 (``packaging``) and compare by their release numbers only (``0.18.0rc1+cu12``
-> ``(0, 18, 0)``): a release candidate already carries what its release carries. Missing trailing parts
are zeros (``2.18`` == ``2.18.0``).

Where a version comes from decides what a finding may claim, so every report names it::

    megatron-bridge 0.6.2 (--stack)    megatron-core 0.16.1 (installed)    cudnn unknown    gpu hopper (--gpu)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from bridgepack.env import parse_version
from bridgepack.errors import UsageError, param

#: The components a defect can live in, named as ``bridgepack env`` reports them.
BRIDGE = "megatron-bridge"
MCORE = "megatron-core"
TE = "transformer-engine"
#: cuDNN decides which fused-attention kernels Transformer Engine can pick (THD with attention sinks needs
#: 9.18); read from the ``nvidia-cudnn-cu*`` distribution ``bridgepack env`` reports, or given with
#: ``--stack``.
CUDNN = "cudnn"
COMPONENTS = (BRIDGE, MCORE, TE, CUDNN)
#: The GPU architecture a few kernel defects depend on (``--gpu``); never read from this machine, whose GPU
#: (if any) is rarely the training cluster's. ``blackwell`` is the data-centre part (sm_100/sm_103: B200,
#: GB200, B300), ``blackwell-rtx`` the workstation and GeForce one (sm_120/sm_121: RTX PRO 6000, RTX 5090).
GPU = "gpu"
HOPPER = "hopper"
BLACKWELL_RTX = "blackwell-rtx"
GPU_ARCHITECTURES = ("ampere", "ada", HOPPER, "blackwell", BLACKWELL_RTX)
#: What an unknown GPU is taken to be: a data-centre part. An entry only a workstation GPU hits (sm_120)
#: needs ``--gpu`` to fire; one a data-centre GPU hits fires with the architecture named.
DATACENTRE_GPUS = frozenset({"ampere", HOPPER, "blackwell"})
#: How findings name each architecture.
GPU_NAMES = {
    "ampere": "Ampere (sm_80)",
    "ada": "Ada (sm_89)",
    HOPPER: "Hopper (sm_90)",
    "blackwell": "Blackwell (sm_100)",
    BLACKWELL_RTX: "Blackwell RTX (sm_120)",
}
#: Where an assumed version came from.
GIVEN, INSTALLED, UNKNOWN = "--stack", "installed", "unknown"

Release = tuple[int, ...]


def is_version(text: str) -> bool:
    """Whether ``text`` (surrounding spaces allowed) is a version PEP 440 accepts."""
    try:
        Version(text.strip())
    except InvalidVersion:
        return False
    return True


def release(text: str) -> Release | None:
    """``"0.16.1rc2+cu12"`` -> ``(0, 16, 1)`` (``bridgepack env``'s reading); ``None`` when the text is not a
    PEP 440 version."""
    parts = list(parse_version(text))
    if not parts:
        return None
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()  # 2.18.0 and 2.18 are one release
    return tuple(parts)


@dataclass(frozen=True)
class Affected:
    """Releases ``first <= v < fixed``; ``None`` for an end nobody has established."""

    first: str | None
    fixed: str | None

    def covers(self, version: str) -> bool:
        v = release(version)
        if v is None:
            return False
        low = release(self.first) if self.first else None
        high = release(self.fixed) if self.fixed else None
        return (low is None or v >= low) and (high is None or v < high)

    def describe(self) -> str:
        """``">= 0.3.0, < 0.5.1"``, ``"< 0.5.0"``, ``">= 2.18, no fixed release"``."""
        low = f">= {self.first}" if self.first else "all releases"
        high = f"< {self.fixed}" if self.fixed else "no fixed release"
        return high if self.fixed and not self.first else f"{low}, {high}"


def parse_stack(items: Iterable[str]) -> dict[str, str]:
    """``["megatron-bridge==0.6.2,megatron-core==0.19.2"]`` -> ``{"megatron-bridge": "0.6.2", ...}``.

    Items may be repeated or comma-joined; names are normalised (``megatron_core`` -> ``megatron-core``).
    A version that is not PEP 440 (``0.6.2garbage``) and a component given twice are refused: either would
    silently check another release than the one meant.
    """
    stack: dict[str, str] = {}
    for item in items:
        for part in (p.strip() for p in item.split(",")):
            if not part:
                continue
            name, sep, version = part.partition("==")
            name = name.strip().lower().replace("_", "-")
            if not sep or name not in COMPONENTS:
                raise UsageError(
                    f"{param('stack')} {part!r}: expected NAME==VERSION with NAME one of "
                    f"{', '.join(COMPONENTS)}"
                )
            if not is_version(version):
                raise UsageError(f"{param('stack')} {part!r}: {version.strip()!r} is not a version (PEP 440)")
            if name in stack:
                raise UsageError(
                    f"{param('stack')} gives {name} twice ({name}=={stack[name]}, then {part}); give it once"
                )
            stack[name] = version.strip()
    return stack


def checked_gpu(name: str | None) -> str | None:
    """``"Hopper"`` -> ``"hopper"``; ``None`` stays unknown; any other name is a usage error."""
    if name is None:
        return None
    arch = name.strip().lower()
    if arch not in GPU_ARCHITECTURES:
        raise UsageError(f"{param('gpu')} {name!r}: expected one of {', '.join(GPU_ARCHITECTURES)}")
    return arch


def known_versions(packages: Mapping[str, str | None]) -> dict[str, str]:
    """The atlas components among ``packages`` (as ``bridgepack env`` reads them) that are installed."""
    return {name: version for name, version in packages.items() if name in COMPONENTS and version}


@dataclass(frozen=True)
class Assumed:
    """One component's version (or the GPU architecture) a report was checked against, and its source."""

    component: str
    version: str | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"component": self.component, "version": self.version, "source": self.source}

    def describe(self) -> str:
        """``megatron-core 0.16.1 (installed)``, ``cudnn unknown``."""
        if self.version is None:
            return f"{self.component} {UNKNOWN}"
        return f"{self.component} {self.version} ({self.source})"


def assumed_stack(
    given: Mapping[str, str], installed: Mapping[str, str], gpu: str | None
) -> tuple[Assumed, ...]:
    """Every component in :data:`COMPONENTS` order, then the GPU: a given version wins over an installed one;
    neither is unknown."""
    rows = []
    for component in COMPONENTS:
        if component in given:
            rows.append(Assumed(component, given[component], GIVEN))
        elif component in installed:
            rows.append(Assumed(component, installed[component], INSTALLED))
        else:
            rows.append(Assumed(component, None, UNKNOWN))
    rows.append(Assumed(GPU, gpu, "--gpu" if gpu else UNKNOWN))
    return tuple(rows)


def stack_summary(rows: Iterable[Assumed]) -> str:
    """One line for a report: ``megatron-bridge 0.6.2 (--stack), megatron-core unknown, ..., gpu unknown``."""
    return ", ".join(row.describe() for row in rows)
