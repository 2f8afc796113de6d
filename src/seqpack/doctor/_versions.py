"""Release numbers of the training stack and the half-open ranges a known defect covers.

A defect is present from its first affected release up to, not including, the first release with the fix::

    first 0.3.0, fixed 0.5.1    ->   0.3.0 <= v < 0.5.1     (0.5.0 affected, 0.5.1 not)
    first None,  fixed 0.5.0    ->   every release before 0.5.0
    first 2.18,  fixed None     ->   every release from 2.18 on (no release is known to fix it)

Versions compare by their leading release numbers only (``0.18.0rc1+cu12`` -> ``(0, 18, 0)``): a release
candidate already carries what its release carries. Missing trailing parts are zeros (``2.18`` == ``2.18.0``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from seqpack.env import parse_version
from seqpack.errors import UsageError, param

#: The components a defect can live in, named as ``seqpack env`` reports them.
BRIDGE = "megatron-bridge"
MCORE = "megatron-core"
TE = "transformer-engine"
#: cuDNN decides which fused-attention kernels Transformer Engine can pick (THD with attention sinks needs
#: 9.18); read from the ``nvidia-cudnn-cu*`` distribution ``seqpack env`` reports, or given with ``--stack``.
CUDNN = "cudnn"
COMPONENTS = (BRIDGE, MCORE, TE, CUDNN)

Release = tuple[int, ...]

#: A version as PEP 440 spells one (its separators and spellings included: ``1.0-rc1``, ``1.0.post2``,
#: ``2.6.0+cu124``): epoch, release, pre-, post- and dev-release, local label. A typed version must be one
#: whole: ``0.6.2garbage`` used to be read as 0.6.2.
PEP440 = re.compile(
    r"""v?(\d+!)?\d+(\.\d+)*
        ([-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?\d*)?
        (-\d+|[-_.]?(post|rev|r)[-_.]?\d*)?
        ([-_.]?dev[-_.]?\d*)?
        (\+[a-z0-9]+([-_.][a-z0-9]+)*)?""",
    re.IGNORECASE | re.VERBOSE | re.ASCII,
)


def is_version(text: str) -> bool:
    """Whether ``text`` (surrounding spaces allowed) is a version PEP 440 accepts."""
    return PEP440.fullmatch(text.strip()) is not None


def release(text: str) -> Release | None:
    """``"0.16.1rc2+cu12"`` -> ``(0, 16, 1)`` (``seqpack env``'s reading); ``None`` when the text does not
    start with a number."""
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


def known_versions(packages: Mapping[str, str | None]) -> dict[str, str]:
    """The atlas components among ``packages`` (as ``seqpack env`` reads them) that are installed."""
    return {name: version for name, version in packages.items() if name in COMPONENTS and version}
