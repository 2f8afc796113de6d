"""Starting any ``seqpack`` command does not import torch (2 s of CPU); only the commands that train do."""

from __future__ import annotations

import subprocess
import sys


def test_the_cli_does_not_import_torch() -> None:
    code = "import sys, seqpack.cli; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_demo_default_threads_agree() -> None:
    from seqpack.cli import demo as cli_demo
    from seqpack.demo import DEFAULT_THREADS

    assert cli_demo.DEFAULT_THREADS == DEFAULT_THREADS
