"""Run the installed (or a wheel's) Megatron-Bridge offline packing, loaded by file path.

``bridgepack verify --bridge`` must run *Bridge's own* packing functions, not a re-implementation: the point
is to notice when a Bridge release changes behaviour. Importing ``megatron.bridge`` pulls in Megatron-Core,
Transformer Engine and a GPU stack; the packing code itself needs none of that. So the two files that do
the work -- ``data/packing/algorithms.py`` (histogram, bin assignment, fill) and ``data/packing/offline.py``
(pre-padding, seeding, the ``.npy`` output and the metadata sidecar) -- are loaded by path, from the
installed package or from a wheel given with ``--bridge-wheel``, with small stand-ins for the few names
they import and never call on this path (listed in :func:`load_offline_packing`).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import sys
import tempfile
import types
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridgepack.errors import InputError, UsageError, param

#: Where the packing code lives inside the ``megatron-bridge`` distribution (bridge-format §2).
PACKING_DIR = Path("megatron") / "bridge" / "data" / "packing"
PACKING_FILES = ("algorithms.py", "offline.py")


@dataclass(frozen=True)
class BridgePacking:
    """Bridge's packing modules, where they came from, and which release they are."""

    version: str
    origin: str
    offline: types.ModuleType


def _wheel_version(archive: zipfile.ZipFile, wheel: Path) -> str:
    for name in archive.namelist():
        if name.endswith(".dist-info/METADATA"):
            for line in archive.read(name).decode("utf-8", "replace").splitlines():
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
    parts = wheel.name.split("-")
    return parts[1] if len(parts) > 2 else "unknown"


@contextlib.contextmanager
def _open_wheel(wheel: Path) -> Iterator[zipfile.ZipFile]:
    """Open a wheel; a missing file or a non-zip is unreadable input (exit 2)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            yield archive
    except FileNotFoundError:
        raise InputError(f"{wheel}: no such file") from None
    except zipfile.BadZipFile:
        raise InputError(f"{wheel}: not a wheel (zip) file") from None


def _extract_wheel(wheel: Path, into: Path) -> str:
    """Unpack the packing files of a Bridge wheel into ``into``; returns the wheel's version."""
    with _open_wheel(wheel) as archive:
        for name in PACKING_FILES:
            member = (PACKING_DIR / name).as_posix()
            try:
                data = archive.read(member)
            except KeyError:
                raise InputError(f"{wheel}: not a megatron-bridge wheel (no {member})") from None
            target = into / PACKING_DIR / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return _wheel_version(archive, wheel)


def unpack_wheel(wheel: Path, into: Path, must_hold: str) -> str:
    """Unpack a whole wheel into ``into`` (``zipfile`` drops absolute and ``..`` parts of member names);
    ``must_hold`` is a file the wheel must contain (else it is the wrong wheel). Returns its version."""
    with _open_wheel(wheel) as archive:
        if must_hold not in archive.namelist():
            raise InputError(f"{wheel}: not the expected wheel (no {must_hold})")
        archive.extractall(into)
        return _wheel_version(archive, wheel)


def _installed_root() -> tuple[Path, str] | None:
    """The directory holding the installed ``megatron/bridge`` and its version, without importing it."""
    try:
        version = importlib.metadata.version("megatron-bridge")
    except importlib.metadata.PackageNotFoundError:
        return None
    dist = importlib.metadata.distribution("megatron-bridge")
    for file in dist.files or []:
        if Path(str(file)).as_posix().endswith((PACKING_DIR / "algorithms.py").as_posix()):
            located = Path(str(dist.locate_file(file)))
            return located.parents[len(PACKING_DIR.parts)], version
    return None


def bridge_available() -> tuple[bool, str]:
    """Whether ``megatron.bridge`` is really importable here, and why not (for skip reasons)."""
    try:
        importlib.metadata.version("megatron-bridge")
    except importlib.metadata.PackageNotFoundError:
        return False, "megatron-bridge is not installed in this Python environment"
    try:
        import megatron.bridge  # noqa: F401
    except Exception as exc:  # any import failure means the parts that need Bridge cannot run
        return False, f"megatron-bridge is installed but does not import ({exc.__class__.__name__}: {exc})"
    return True, ""


@contextlib.contextmanager
def _stand_ins(modules: Mapping[str, types.ModuleType]) -> Iterator[None]:
    """Put ``modules`` into ``sys.modules`` for the duration, then restore what was there before."""
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def _load(path: Path, name: str, stand_ins: Mapping[str, types.ModuleType]) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py path always has a loader
        raise InputError(f"{path}: cannot load")
    module = importlib.util.module_from_spec(spec)
    with _stand_ins(stand_ins):
        spec.loader.exec_module(module)
    return module


class _NoMultiStorage:
    """Stand-in for Megatron-Core's multi-storage client switch: off, so Bridge writes local files."""

    @staticmethod
    def is_enabled() -> bool:
        return False


def _refuse_npy(*_args: Any, **_kwargs: Any) -> Any:
    raise RuntimeError("verify never loads .npy through Bridge")


def _passthrough(iterable: Any = None, *_args: Any, **_kwargs: Any) -> Any:
    return iterable


def load_offline_packing(wheel: str | os.PathLike[str] | None, workdir: Path) -> BridgePacking:
    """Load Bridge's ``algorithms.py`` and ``offline.py`` from ``wheel`` or the installed package.

    Stand-ins, each for a name imported but not used by the offline path with a local ``.npy`` output:
    ``megatron.bridge.utils.safe_pickle.safe_load_npy`` (loading, not writing), ``megatron.core.msc_utils``
    (multi-storage client: off), ``megatron.bridge.training.tokenizers.tokenizer.MegatronTokenizer`` (a type
    hint), ``tqdm`` (progress bars: verify's output stays clean) and -- only when not installed -- ``torch``
    (used only by the multi-process tokenizer path, which verify does not take).
    """
    if wheel is not None:
        root = workdir / "bridge-wheel"
        version = _extract_wheel(Path(wheel), root)
        origin = f"wheel {os.fspath(wheel)}"
    else:
        found = _installed_root()
        if found is None:
            raise UsageError(
                f"megatron-bridge is not installed here; pass {param('bridge_wheel')} PATH (a .whl file)"
            )
        root, version = found
        origin = f"installed at {root}"
    stand_ins = {
        "megatron.bridge.utils.safe_pickle": _module("safe_pickle", safe_load_npy=_refuse_npy),
        "tqdm": _module("tqdm", tqdm=_passthrough),
    }
    algorithms = _load(root / PACKING_DIR / "algorithms.py", "_bridgepack_bridge_algorithms", stand_ins)
    stand_ins.update(
        {
            "megatron.bridge.data.packing.algorithms": algorithms,
            "megatron.core.msc_utils": _module("msc_utils", MultiStorageClientFeature=_NoMultiStorage),
            "megatron.bridge.training.tokenizers.tokenizer": _module("tokenizer", MegatronTokenizer=object),
        }
    )
    if importlib.util.find_spec("torch") is None:
        stand_ins["torch"] = _module("torch")
    offline = _load(root / PACKING_DIR / "offline.py", "_bridgepack_bridge_offline", stand_ins)
    return BridgePacking(version=version, origin=origin, offline=offline)


def temporary_workdir() -> tempfile.TemporaryDirectory[str]:
    """A scratch directory for the generated dataset and both packings."""
    return tempfile.TemporaryDirectory(prefix="bridgepack-verify-")
