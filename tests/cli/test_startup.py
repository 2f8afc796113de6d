"""Starting a ``bridgepack`` command imports what that command needs and nothing else: not torch (2 s of
CPU; only the commands that train import it), not pandas (pyarrow's ``pa.array`` on numpy pulls it in,
~0.35 s), not the other commands' modules (~0.5 s)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from _support.pack_inputs import random_examples, write_jsonl
from bridgepack.cli import _commands

#: Imported by a fresh process: prints ``{"rc": exit code, "modules": [...]}`` after running ``argv``.
_RUN = """
import json, sys
from bridgepack.cli import main
rc = main(json.loads(sys.argv[1]))
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""


def _fresh(argv: list[str]) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(argv)], capture_output=True, text=True, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return int(result["rc"]), set(result["modules"])


def _commands_imported(modules: set[str]) -> set[str]:
    return {name for name in _commands.COMMAND_MODULES if f"bridgepack.cli.{name}" in modules}


def test_the_cli_does_not_import_torch() -> None:
    code = (
        "import sys, bridgepack.cli; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_pack_imports_its_own_command_only_and_not_pandas(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "ids.jsonl", random_examples(np.random.default_rng(0), 40, 30))
    argv = ["--debug", "pack", str(source), "--out", str(tmp_path / "out"), "--pack-size", "64", "--quiet"]
    rc, modules = _fresh(argv)
    assert rc == 0
    assert (tmp_path / "out" / "training_64.idx.parquet").is_file()
    assert _commands_imported(modules) == {"pack"}
    assert not {"pandas", "torch", "transformers"} & modules


def test_root_help_and_unknown_commands_see_every_command() -> None:
    rc, modules = _fresh(["--help"])
    assert rc == 0
    assert _commands_imported(modules) == set(_commands.COMMAND_MODULES)
    rc, _ = _fresh(["pak"])
    assert rc == 2


def test_commands_for_reads_the_root_options_then_the_command() -> None:
    every = _commands.COMMAND_MODULES
    assert _commands.commands_for(["--debug", "doctor", "x.yaml"]) == ("doctor",)
    assert _commands.commands_for(["curves", "compare", "--version"]) == ("curves",)  # the command's options
    assert _commands.commands_for(["pak", "pack"]) == every
    assert _commands.commands_for([]) == every
    assert _commands.commands_for(["--debug", "--version", "pack"]) == ()
    assert _commands.commands_for(["--help", "--version"]) == every  # eager options act in the order given


def test_version_imports_no_command_and_no_kernel() -> None:
    """``--version`` answers before any command is looked at: 0.1 s instead of the commands' 0.9 s."""
    rc, modules = _fresh(["--version"])
    assert rc == 0
    assert _commands_imported(modules) == set()
    assert not {"numba", "pyarrow", "torch"} & modules


def test_demo_default_threads_agree() -> None:
    from bridgepack.cli import demo as cli_demo
    from bridgepack.demo import DEFAULT_THREADS

    assert cli_demo.DEFAULT_THREADS == DEFAULT_THREADS
