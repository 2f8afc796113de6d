"""Project-wide pytest configuration: hypothesis profiles and paths to the shared real data."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from bridgepack.cli import GC_THRESHOLDS

REPO_ROOT = Path(__file__).resolve().parent.parent
SRC_DIR = REPO_ROOT / "src"
# The suite tests this checkout: ``src`` is first on the path (pyproject's ``pythonpath``) and on every
# child's path (the CLI run as ``python -m bridgepack`` or the console script, Ray workers, docs pages), so a
# bridgepack installed from another checkout is never what runs.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(SRC_DIR), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
)


def _imported_from_this_checkout() -> None:
    import bridgepack

    where, ours = Path(bridgepack.__file__).resolve().parent, SRC_DIR / "bridgepack"
    if where != ours:
        raise pytest.UsageError(f"bridgepack is imported from {where}, not this checkout's {ours}")


_imported_from_this_checkout()

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
# Plain progress lines (stderr is not a terminal under pytest) only where a test asks for them: a slow
# machine must not add a line to a test that reads stderr. tests/test_progress.py sets it per test.
os.environ.setdefault("BRIDGEPACK_PROGRESS_SECONDS", "1e9")

SHARED_DIR = REPO_ROOT.parent / "shared"

#: What a test run starts once and shares (a Ray cluster, with docs/scale.md's lines that run on it; the
#: child interpreters of the Bridge text peer and of the MLM/Bridge resolution peer; the docs pages' runs; the
#: skills pages' runs): the fixture that stands for it -> its group. Under pytest-xdist (``-n 2 --dist
#: loadgroup``, scripts/test) every test of a group runs on one worker, so each is started once, not once per
#: worker.
SESSION_RESOURCES = {
    "ray_cluster": "ray",
    "bridge_text": "bridge-text",
    "mlm_bridge_peer": "mlm-bridge",
    "page_runs": "doc-pages",
    "skill_page_runs": "skill-pages",
}


def _group(item: pytest.Item) -> str | None:
    """The xdist group of a test: its session resource's, else its module's when it uses a fixture made once
    per module (a peer's resolution, a packed input: made on each worker that runs a test of the module,
    unless they all run on one), else none (the test goes wherever a worker is free)."""
    used = getattr(item, "fixturenames", ())
    group = next((g for fixture, g in SESSION_RESOURCES.items() if fixture in used), None)
    if group is not None:
        return group
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(d.scope in ("module", "class") for chain in defs for d in chain):
        return item.nodeid.split("::", 1)[0]
    return None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--deep",
        action="store_true",
        help="also run the tests marked deep (a proof of the default run repeated over more inputs or at "
        "full scale); CI runs them after the default run",
    )


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the test ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("deep"):
        deep = [item for item in items if item.get_closest_marker("deep")]
        if deep:
            config.hook.pytest_deselected(items=deep)
            items[:] = [item for item in items if not item.get_closest_marker("deep")]
    for item in items:
        group = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under ``--dist loadgroup`` xdist keeps a group by writing it into each test's id; a pytest or xdist
    that loses it would spread a group's tests over the workers and start its resource once per worker,
    silently slower: refuse instead. And count the tests that use the Ray cluster (the last one stops it)."""
    _RAY_CLUSTER["users"] = sum("ray_cluster" in getattr(i, "fixturenames", ()) for i in session.items)
    _freeze_what_was_collected()
    if not getattr(session.config.option, "loadgroup", False):  # set on xdist workers only
        return
    lost = [i.nodeid for i in session.items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if lost:
        raise pytest.UsageError(
            f"xdist dropped the group of {len(lost)} tests (e.g. {lost[0]}): see the pytest pin in pyproject"
        )


def _freeze_what_was_collected() -> None:
    """Take what collection imported (torch, transformers, hypothesis, every test module) out of the cyclic
    garbage collector's walks, and let it walk less often: CPython's thresholds (700, 10, 10) gave a worker
    that loads real tokenizers (150,000-entry vocabularies) ~60 full collections of ~800,000 objects, ~12 s of
    its CPU. Everything stays as alive as before and the tests' own garbage is still collected, ten times less
    often (bridgepack's own commands use the same thresholds); the children the tests keep (the warm server,
    the peers) do the same."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` (real Megatron-LM configs, golden values, log excerpts); always present in CI."""
    if not SHARED_DIR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{SHARED_DIR} is missing in CI")
        pytest.skip(f"{SHARED_DIR} is not present")
    return SHARED_DIR


#: The Ray cluster's stop and how many tests of this run still use it: the last one stops it (its nodes idle
#: at a few percent of a core, and hold a gigabyte, for the rest of the run otherwise).
_RAY_CLUSTER: dict[str, Any] = {"stop": None, "users": 0}


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """The one Ray cluster of the test run: two simulated nodes on 127.0.0.1 (``_support/ray_cluster.py``),
    started by the first test that asks for it (the engine tests, docs/scale.md's lines) and stopped after
    the last (the ``ray`` xdist group runs them one after another). Needs the ``ray`` extra (required in
    CI)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        if os.environ.get("CI"):
            pytest.fail("the ray extra is not installed in CI")
        pytest.skip("ray is not installed (pip install bridgepack[ray])")
    from _support.ray_cluster import two_node_cluster

    stack = contextlib.ExitStack()
    cluster = stack.enter_context(two_node_cluster())
    _RAY_CLUSTER["stop"] = stack.close
    yield cluster
    _stop_ray_cluster()


def _stop_ray_cluster() -> None:
    stop, _RAY_CLUSTER["stop"] = _RAY_CLUSTER["stop"], None
    if stop is not None:
        stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """After a test's teardown (its module's fixtures included, when it is the module's last): the Ray
    cluster stopped if no test to come uses it."""
    yield
    if "ray_cluster" in getattr(item, "fixturenames", ()):
        _RAY_CLUSTER["users"] -= 1
        if _RAY_CLUSTER["users"] <= 0:
            _stop_ray_cluster()


@pytest.fixture(scope="session")
def bridge_text() -> Iterator[Any]:
    """Megatron-Bridge 0.6.2's text path in one child process, one per session (_support/bridge_text.py)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from _support.bridge_text import BridgeText

    peer = BridgeText()
    yield peer
    peer.close()


@pytest.fixture(scope="session")
def mlm_bridge_peer() -> Iterator[Any]:
    """Megatron-LM's and Megatron-Bridge's config resolution in one child process, one per session
    (_support/mlm_bridge.py)."""
    from _support.mlm_bridge import MlmBridge

    peer = MlmBridge()
    yield peer
    peer.close()


@pytest.fixture(scope="session")
def trained_tokenizers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A WordPiece (no EOS, not space-sensitive) and a SentencePiece-style BPE tokenizer directory, trained
    once per session on the generated rows' texts (``_support/trained_tokenizers.py``)."""
    pytest.importorskip("transformers")
    from _support.chat_rows import TEXTS
    from _support.text_rows import FRAGMENTS
    from _support.trained_tokenizers import build_metaspace_bpe, build_wordpiece

    texts = [*FRAGMENTS, *TEXTS] * 20
    root = tmp_path_factory.mktemp("trained-tokenizers")
    return {
        "wordpiece": build_wordpiece(texts, root / "wordpiece"),
        "metaspace": build_metaspace_bpe(texts, root / "metaspace"),
    }
