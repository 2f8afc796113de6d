"""The public API of ``import bridgepack``: every documented name resolves (for a type checker too), every
public function's worked example runs (its doctest), ``bridgepack.pack``'s keywords are typed and are the
options' fields, and what the CLI refuses the library refuses, with the same error class (exit code): the
doctor's here, pack's with the other option errors (``tests/data/test_pack_options.py``)."""

from __future__ import annotations

import ast
import dataclasses
import doctest
import importlib
import inspect
import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import bridgepack
from _support.pack_inputs import write_jsonl
from bridgepack.cli import main
from bridgepack.data.pipeline import InputOptions, LengthPolicy, PackSize, RunSettings
from bridgepack.data.samples.text import TextOptions
from bridgepack.doctor import DoctorOptions
from bridgepack.errors import UsageError


@pytest.mark.parametrize("name", [n for n in bridgepack.__all__ if not n.startswith("__")])
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(bridgepack, name) is not None


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'packk'"):
        bridgepack.packk  # noqa: B018


@pytest.mark.parametrize("function", ["pack", "inspect", "check_config", "compare_curves"])
def test_worked_example_runs(function: str) -> None:
    """Each public function carries an example; run it as the doctest it is (a failure prints the diff)."""
    obj = getattr(importlib.import_module(bridgepack._PUBLIC[function]), function)
    assert obj is getattr(bridgepack, function)
    tests = doctest.DocTestFinder().find(obj, function, globs={})
    assert tests and tests[0].examples, f"bridgepack.{function} has no worked example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_import_stays_light() -> None:
    """``import bridgepack`` loads none of the jobs (every CLI command starts from it)."""
    code = "import sys, bridgepack; print(sorted(m for m in sys.modules if m.startswith('bridgepack')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['bridgepack', 'bridgepack.errors']"


def test_pack_refuses_an_unknown_option(tmp_path) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'pack_sise'"):
        bridgepack.pack(tmp_path / "x.jsonl", tmp_path / "out", 64, pack_sise=3)


def test_type_checkers_see_every_lazy_name() -> None:
    """The root's ``TYPE_CHECKING`` imports (what mypy and an IDE read) name the lazy names' modules exactly
    as ``_PUBLIC`` (what runs) does."""
    tree = ast.parse(Path(bridgepack.__file__).read_text())
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"
    )
    declared = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        for alias in node.names:
            assert alias.asname == alias.name, "re-export explicitly: `import X as X`"
            declared[alias.name] = node.module
    assert declared == bridgepack._PUBLIC


#: ``bridgepack.pack``'s keywords that are no field of PackOptions' groups: what it derives or runs on.
_NOT_FIELDS = {"cp", "tp", "sequence_parallel", "engine", "ray_address", "shards", "bridge_compat"}


def test_pack_keywords_are_typed_and_are_the_options_fields() -> None:
    """Every option of ``bridgepack.pack`` is keyword-only and annotated (an IDE completes it, mypy checks
    it), is a field of one of PackOptions' groups with the same default, and each field is a keyword."""
    signature = inspect.signature(bridgepack.pack)
    keywords = {n: p for n, p in signature.parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert [n for n in signature.parameters if n not in keywords] == ["inputs", "out_dir", "pack_size"]
    hints = typing.get_type_hints(bridgepack.pack)
    assert set(hints) == set(signature.parameters) | {"return"}
    fields = {
        f.name: f
        for group in (InputOptions, TextOptions, PackSize, LengthPolicy, RunSettings)
        for f in dataclasses.fields(group)
        if f.name not in ("paths", "text", "pack_size", "out_dir")
    }
    assert set(keywords) - _NOT_FIELDS == set(fields)
    differ = {
        name: (keywords[name].default, f.default)
        for name, f in fields.items()
        if keywords[name].default != f.default and name != "quiet"  # the API is quiet unless asked
    }
    assert differ == {"pad_seq_to_mult": (None, 1)}  # None: derived from cp/tp/sequence_parallel, else 1


def test_the_doctor_refuses_world_size_beside_dp(capsys: pytest.CaptureFixture[str]) -> None:
    """Which one was meant is unknown: the library used to let DP win, the CLI refused both."""
    with pytest.raises(UsageError) as caught:
        bridgepack.check_config(
            overrides=["model.context_parallel_size=2"], doctor=DoctorOptions(world_size=8, dp=2)
        )
    assert (str(caught.value), caught.value.exit_code) == ("give world_size or dp, not both", 2)
    assert main(["doctor", "--cp", "2", "--world-size", "8", "--dp", "2"]) == 2
    assert capsys.readouterr().err == "error: give --world-size or --dp, not both\n"


def test_the_library_fills_the_overrides_the_cli_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pad multiple derived from CP/TP/SP, and the overrides that train on the result with them, are
    the same through ``bridgepack.pack`` and ``bridgepack pack``."""
    source = write_jsonl(tmp_path / "in.jsonl", [{"input_ids": [5, 6, 7, 2]}, {"input_ids": [5, 2]}])
    result = bridgepack.pack(source, tmp_path / "api", 16, cp=2, tp=3, sequence_parallel=True, eos_id=2)
    flags = ["--cp", "2", "--tp", "3", "--sequence-parallel", "--eos-id", "2", "--format", "json"]
    code = main(["pack", "--quiet", str(source), "--out", str(tmp_path / "cli"), "--pack-size", "16", *flags])
    printed = json.loads(capsys.readouterr().out)
    assert code == 0
    assert result.record.pad_seq_to_mult == 12  # lcm(2 CP, CP TP)
    assert [o.replace("/api/", "/cli/") for o in result.overrides] == printed["overrides"]
    assert "dataset.offline_packing_specs.pad_seq_to_mult=12" in result.overrides
    assert {"model.context_parallel_size=2", "model.tensor_model_parallel_size=3"} <= set(result.overrides)
