"""The console entry point ends the process without the interpreter's teardown, but only after what that
teardown does visibly: non-daemon threads finished, ``atexit`` callbacks run, standard streams flushed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bridgepack.cli._exit import BROKEN_PIPE

#: Buffered standard output, as a user's shell gives a piped ``bridgepack`` (whatever this test runner has).
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=BUFFERED,
        timeout=120,
    )


def test_threads_atexit_and_buffered_output_complete_before_exit() -> None:
    result = _run(
        """
        import atexit, sys, threading, time
        from bridgepack.cli._exit import exit_process

        atexit.register(lambda: print("atexit ran"))
        def late():
            time.sleep(0.3)
            print("thread finished")
        threading.Thread(target=late).start()
        sys.stdout.write("x" * 200_000)  # larger than any buffer: flushed in part, the rest at exit
        sys.stdout.write("\\n")
        exit_process(3)
        """
    )
    assert result.returncode == 3
    lines = result.stdout.splitlines()
    assert lines == ["x" * 200_000, "thread finished", "atexit ran"]


@pytest.mark.parametrize("code", [0, 1, 2])
def test_exit_code_passes_through(code: int) -> None:
    result = _run(f"from bridgepack.cli._exit import exit_process; print('out'); exit_process({code})")
    assert (result.returncode, result.stdout) == (code, "out\n")


def test_stdout_without_reader_is_a_broken_pipe_141() -> None:
    """``bridgepack ... | head``: the reader is gone when the buffered output is flushed at exit."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    code = "import sys; from bridgepack.cli._exit import exit_process; print('pending'); exit_process(0)"
    with os.fdopen(write_end, "wb") as stdout:
        result = subprocess.run(
            [sys.executable, "-c", code], stdout=stdout, stderr=subprocess.PIPE, env=BUFFERED, timeout=120
        )
    assert (result.returncode, result.stderr) == (BROKEN_PIPE, b"")


def test_console_entry_keeps_exit_codes_and_output(tmp_path: Path) -> None:
    ok = subprocess.run([sys.executable, "-m", "bridgepack", "--version"], capture_output=True, text=True)
    assert (ok.returncode, ok.stdout.startswith("bridgepack ")) == (0, True)
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "bridgepack",
            "pack",
            "/no/such/file.jsonl",
            "-n",
            "128",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert "/no/such/file.jsonl" in bad.stderr


def test_an_executor_left_open_does_not_hold_the_exit() -> None:
    """Its idle worker thread is told to leave, as at an ordinary interpreter exit (not joined forever)."""
    result = _run(
        """
        from concurrent.futures import ThreadPoolExecutor
        from bridgepack.cli._exit import exit_process

        pool = ThreadPoolExecutor(1)
        print(pool.submit(lambda: "done").result())
        exit_process(0)
        """
    )
    assert (result.returncode, result.stdout) == (0, "done\n")
