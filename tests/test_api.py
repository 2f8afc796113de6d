"""The public API of ``import seqpack``: every documented name resolves, and every public function's worked
example runs (its doctest)."""

from __future__ import annotations

import doctest
import subprocess
import sys

import pytest

import seqpack
import seqpack._api


@pytest.mark.parametrize("name", [n for n in seqpack.__all__ if not n.startswith("__")])
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(seqpack, name) is not None


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'packk'"):
        seqpack.packk  # noqa: B018


@pytest.mark.parametrize("function", ["pack", "inspect", "check_config", "compare_curves"])
def test_worked_example_runs(function: str) -> None:
    """Each public function carries an example; run it as the doctest it is (a failure prints the diff)."""
    obj = getattr(seqpack._api, function)
    assert obj is getattr(seqpack, function)
    tests = doctest.DocTestFinder().find(obj, function, globs={})
    assert tests and tests[0].examples, f"seqpack.{function} has no worked example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_import_stays_light() -> None:
    """``import seqpack`` loads none of the jobs (every CLI command starts from it)."""
    code = "import sys, seqpack; print(sorted(m for m in sys.modules if m.startswith('seqpack')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['seqpack', 'seqpack.errors']"


def test_pack_refuses_an_unknown_option(tmp_path) -> None:
    with pytest.raises(TypeError, match="unexpected option 'pack_sise'"):
        seqpack.pack(tmp_path / "x.jsonl", tmp_path / "out", 64, pack_sise=3)
