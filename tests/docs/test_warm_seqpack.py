"""The warm server (``_support/warm_seqpack.py``) runs a page's commands as new interpreters would: the same
output, exit codes, signals, environment, working directory and standard input, command for command."""

from __future__ import annotations

import re
from pathlib import Path

from _support import doc_pages, fenced_blocks

# Each form the pages use: seqpack's exit codes and output, a pipe, a variable set for one command (progress
# lines every 0 s), files in the working directory, python blocks (exit codes, __main__ and argv, an
# uncaught exception, a process killed by a signal, standard input), and docs/train.md's Ctrl-C: a
# background job stopped by SIGINT, which a non-interactive shell starts with SIGINT ignored.
PAGE = """
```bash
seqpack --version
seqpack nope   # exit 2
seqpack doctor model.seq_length=8192 dataset.seq_length=4096   # exit 1
seqpack env --format json | head -c 1
printf '{"input_ids": [5, 6, 2]}\\n' > one.jsonl
SEQPACK_PROGRESS_SECONDS=0 seqpack pack one.jsonl --out out --pack-size 8 2> progress.txt > /dev/null
head -1 progress.txt | cut -c1-13
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


_BASH_JOB = re.compile(r"(?<=:  )\d+(?= Killed)")


def _run(tmp: Path, warm: bool) -> list[tuple[int, str]]:
    python = "seqpack-py" if warm else "python"  # what the runner makes of a python block, for a script
    cmds = doc_pages.commands_of(PAGE.replace("PYTHON", python), "warm.md")
    results = fenced_blocks.run(cmds, tmp, warm=warm)
    assert [p for r in results for p in r.problems] == []
    # bash reports a killed job with its pid and the command line it ran (a python block's, written so)
    return [(r.returncode, _BASH_JOB.sub("PID", r.output).replace("seqpack-py", "python")) for r in results]


def test_warm_and_cold_runs_of_a_page_are_the_same(tmp_path: Path) -> None:
    (tmp_path / "cold").mkdir()
    (tmp_path / "warm").mkdir()
    cold = _run(tmp_path / "cold", warm=False)
    warm = _run(tmp_path / "warm", warm=True)
    assert warm == cold
    outputs = [output.strip() for _, output in warm]
    assert outputs[6] == "seqpack: read"
    assert outputs[7].split() == ["8_metadata.jsonl", "rejects_training.jsonl", "training_8.idx.parquet"]
    assert outputs[8] == "__main__ ['-'] True True"
    assert "ValueError: a python block that fails" in outputs[9]
    assert outputs[-1] == "stopped by 2"
