"""The warm server (``_support/warm_bridgepack.py``) runs a page's commands as new interpreters would: the
same
output, exit codes, signals, environment, working directory and standard input, command for command. And it
is never what makes a test run hang or leak: a client that goes away takes its command with it, a timed-out
command line ends whole, a dead server is reported, a stopped server (or one whose test process died) leaves
no process and no file, and two servers on one machine (two test runs) never answer each other's clients."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from _support import doc_pages, fenced_blocks, warm_bridgepack
from _support.warm_bridgepack import SERVER_GONE, WarmBridgepack

# Each form the pages use: bridgepack's exit codes and output, a pipe, a variable set for one command
# (progress
# lines every 0 s), files in the working directory, python blocks (exit codes, __main__ and argv, an
# uncaught exception, a process killed by a signal, standard input), and docs/train.md's Ctrl-C: a
# background job stopped by SIGINT, which a non-interactive shell starts with SIGINT ignored.
PAGE = """
```bash
bridgepack --version
bridgepack nope   # exit 2
bridgepack doctor model.seq_length=8192 dataset.seq_length=4096   # exit 1
bridgepack env --format json | head -c 1
printf '{"input_ids": [5, 6, 2]}\\n' > one.jsonl
BRIDGEPACK_PROGRESS_SECONDS=0 bridgepack pack one.jsonl --out out --pack-size 8 2> progress.txt > /dev/null
head -1 progress.txt | cut -c1-16
ls out
```

```python
# exit 3
import sys
print(__name__, sys.argv, sys.path[0] == "", sys.stdin.read() == "")
sys.exit(3)
```

```python
# exit 1
raise ValueError("a python block that fails")
```

```python
# exit 137
import os, signal
os.kill(os.getpid(), signal.SIGKILL)
```

```python file=stoppable.py
import signal, sys, time

def stop(signum, frame):
    print("stopped by", signum)
    sys.exit(130)

signal.signal(signal.SIGINT, stop)
open("ready", "w").close()
time.sleep(60)
```

```bash
PYTHON stoppable.py & pid=$!; until [ -e ready ]; do sleep 0.05; done; kill -INT $pid; wait $pid   # exit 130
```
"""


_BASH_JOB = re.compile(r"\d+ +Killed +")


def _run(tmp: Path, warm: bool) -> list[tuple[int, str]]:
    python = "bridgepack-py" if warm else "python"  # what the runner makes of a python block, for a script
    cmds = doc_pages.commands_of(PAGE.replace("PYTHON", python), "warm.md")
    results = fenced_blocks.run(cmds, tmp, warm=warm)
    assert [p for r in results for p in r.problems] == []
    # bash reports a killed job with its pid and the command line it ran (a python block's, written so)
    return [
        (r.returncode, _BASH_JOB.sub("PID Killed ", r.output).replace("bridgepack-py", "python"))
        for r in results
    ]


def test_warm_and_cold_runs_of_a_page_are_the_same(tmp_path: Path) -> None:
    (tmp_path / "cold").mkdir()
    (tmp_path / "warm").mkdir()
    cold = _run(tmp_path / "cold", warm=False)
    warm = _run(tmp_path / "warm", warm=True)
    assert warm == cold
    outputs = [output.strip() for _, output in warm]
    assert outputs[6] == "bridgepack: read"
    assert outputs[7].split() == ["8_metadata.jsonl", "rejects_training_8.jsonl", "training_8.idx.parquet"]
    assert outputs[8] == "__main__ ['-'] True True"
    assert "ValueError: a python block that fails" in outputs[9]
    assert outputs[-1] == "stopped by 2"


# --- robustness: servers of the test's own, importing next to nothing (a command imports what it needs) ---

#: A script that records its pid and that of a child it starts, then waits to be stopped.
STALL = """import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "120"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(120)
"""
SMALL = ("json",)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its reaper is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    if not Path("/proc/self/stat").exists():  # not Linux: kill(pid, 0) said it runs
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:  # it ended while the file was read
        return False


def _within(seconds: float, condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _stall_pids(path: Path) -> list[int]:
    assert _within(60, path.exists), "the stalled command never started"
    return [int(p) for p in path.read_text().split()]


@pytest.fixture
def server() -> Iterator[WarmBridgepack]:
    warm = WarmBridgepack(os.environ, preload=SMALL)
    warm.wait_ready(60)
    yield warm
    warm.close()


def test_a_client_that_goes_away_takes_its_command_and_its_children(
    server: WarmBridgepack, tmp_path: Path
) -> None:
    (tmp_path / "stall.py").write_text(STALL)
    client = subprocess.Popen([server.command("bridgepack-py"), "stall.py", "pids"], cwd=tmp_path)
    pids = _stall_pids(tmp_path / "pids")
    client.kill()
    client.wait(10)
    assert _within(10, lambda: not any(_running(p) for p in pids)), f"left running: {pids}"


def test_a_timed_out_command_line_ends_whole(tmp_path: Path) -> None:
    """fenced_blocks.run's timeout kills the line's session: bash, its background job, the warm client --
    and so the command in the server, and what that started."""
    (tmp_path / "stall.py").write_text(STALL)
    line = "sleep 100 & bridgepack-py stall.py pids; wait"
    cmd = fenced_blocks.Command(line, "t.md", 1)
    server = warm_bridgepack.shared()
    if server is not None:
        server.wait_ready()  # so the 3 s are the command's, not the server's start
    started = time.monotonic()
    [result] = fenced_blocks.run([cmd], tmp_path, timeout=3)
    assert result.returncode == -1 and "timed out after 3 s" in result.output
    assert time.monotonic() - started < 30
    pids = _stall_pids(tmp_path / "pids")
    assert _within(10, lambda: not any(_running(p) for p in pids)), f"left running: {pids}"


def test_a_dead_server_is_reported_and_never_answers_for_another(tmp_path: Path) -> None:
    """Two servers (two test runs on one machine): each client talks to its own; one killed, its clients
    say so and exit SERVER_GONE at once, check() raises with the log, the other server runs on."""
    first, second = WarmBridgepack(os.environ, preload=SMALL), WarmBridgepack(os.environ, preload=SMALL)
    try:
        first.wait_ready(60)
        second.wait_ready(60)
        assert first.socket != second.socket
        (tmp_path / "hello.py").write_text("import os; print('hello', os.getcwd())\n")
        client = first.command("bridgepack-py")
        os.kill(first.pid, signal.SIGKILL)
        assert _within(10, lambda: first._server.poll() is not None)
        gone = subprocess.run([client, "hello.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert gone.returncode == SERVER_GONE
        assert "no server to run the command" in gone.stderr and first.socket in gone.stderr
        with pytest.raises(RuntimeError, match="the warm bridgepack server ended"):
            first.check()
        alive = subprocess.run(
            [second.command("bridgepack-py"), "hello.py"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (alive.returncode, alive.stdout) == (0, f"hello {tmp_path}\n")
    finally:
        first.close()
        second.close()


def test_close_ends_the_running_commands_and_leaves_no_file(server: WarmBridgepack, tmp_path: Path) -> None:
    (tmp_path / "stall.py").write_text(STALL)
    client = subprocess.Popen(
        [server.command("bridgepack-py"), "stall.py", "pids"], cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
    pids = _stall_pids(tmp_path / "pids")
    server.close()
    _, err = client.communicate(timeout=30)
    assert client.returncode == SERVER_GONE and "went away while the command ran" in err
    assert not any(_running(p) for p in [server.pid, *pids])
    assert not server.home.exists()


def test_a_server_whose_test_process_died_stops_and_cleans_up() -> None:
    """A test process killed outright runs no atexit: its server notices within a second or two."""
    tests = Path(__file__).resolve().parents[1]
    script = (
        "import os, sys; from _support.warm_bridgepack import WarmBridgepack\n"
        f"w = WarmBridgepack(os.environ, preload={SMALL!r}); w.wait_ready(60)\n"
        "print(w.pid, w.home, flush=True); os._exit(0)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    pid, home = out.stdout.split()
    assert _within(15, lambda: not _running(int(pid)) and not Path(home).exists()), out.stderr


def test_the_shared_server_is_this_process_s_and_cold_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    warm = warm_bridgepack.shared()
    assert warm is not None and warm is warm_bridgepack.shared()
    assert warm_bridgepack.bridgepack() == [str(warm.bin / "bridgepack")]
    monkeypatch.setenv(warm_bridgepack.COLD_ENV, "1")
    assert warm_bridgepack.shared() is None
    assert warm_bridgepack.bridgepack() == [sys.executable, "-m", "bridgepack"]
    assert warm_bridgepack.python() == sys.executable
