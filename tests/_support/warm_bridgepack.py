"""A warm ``bridgepack`` for the pages' commands: each command a fresh fork of one process that imported it
all.

The docs and skills pages run ~150 ``bridgepack`` commands and ~30 ``python`` blocks, each in a new
interpreter
that imports bridgepack, numba, and for the training commands torch and transformers: 0.7-2.7 s of CPU a
command before it does anything. A :class:`WarmBridgepack` is one server process that has imported all of that
once; the page's command still runs through ``bash`` as written (pipes, ``&``, ``kill -INT $pid``, globs,
redirections), but the ``bridgepack`` it finds first on ``PATH`` is a small client (:data:`CLIENT`) that hands
its arguments, working directory, environment, signal dispositions and its own standard input, output and
error to the server. The server forks a helper per command, the helper forks the command; the command sets
all of that up and runs ``bridgepack.cli.console_main`` (a page's python block: the block's code as
``__main__``), so each command gets a fresh process -- no state carries from one command to the next --
without paying for the imports. The client forwards signals to the command and ends with its exit status
(killed by a signal: the same signal), so the shell sees what it would see from the real script.

What differs from a cold start, and why it does not matter to a page: the process was forked (its parent
is the server's helper, not the shell; ``$!`` and ``kill`` address the client, which forwards); modules
are imported before the command's environment is set (bridgepack reads its environment at run time; torch's
thread count and rich's console size are set per command, see :data:`_READ_AT_IMPORT`); the server ran a few
commands once (:data:`WARM_UP`), so what a process does on its first command only (numba loading its kernels,
torch its first step) is done (``test_warm_and_cold_runs_of_a_page_are_the_same`` holds cold runs equal).

It is test-only infrastructure, and must never be what makes a test hang or leak:

- every wait is bounded: the server's start (:meth:`WarmBridgepack.wait_ready`), the client's connection and
  the command's start (:data:`CONNECT_TIMEOUT_S`), the server's stop (:meth:`WarmBridgepack.close`). A command
  runs as long as its client does: a client that goes away (killed by a test's timeout,
  ``fenced_blocks.run`` kills the whole command line) takes its command and everything the command started
  with it (each command is a process group of its own);
- a server that died is reported, not waited for: the client says so on stderr and exits
  :data:`SERVER_GONE`; :meth:`WarmBridgepack.check` raises with the end of the server's log;
- nothing is left behind: the server, its socket and its clients live in a folder of their own (``mkdtemp``,
  so test runs side by side on one machine never share one); :meth:`close` stops the server (at the latest
  when the test process exits), and a server whose test process is gone (killed) stops by itself; a stopping
  server ends the commands still running and removes its folder.

``WarmBridgepack`` is used by :func:`_support.fenced_blocks.run`, and by tests that start a trainer whose
start-up is not their subject (:func:`python`, :func:`bridgepack`); anything else (``python -m bridgepack``,
tests
of process behaviour) starts the real interpreter. ``BRIDGEPACK_PAGES_COLD=1`` turns it off.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import pkgutil
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

#: What the server imports before it forks a command: every module of bridgepack (``pkg.*``: a command's
#: lazy imports too, the doctor's atlas, the trainer -- a fork then imports nothing of ours), the text stack
#: and what the pages' python blocks import.
PRELOAD = ("bridgepack.*", "transformers", "pyarrow.parquet", "datasets")
#: What the server runs once after :data:`PRELOAD`, in a scratch folder, output discarded: a command's first
#: run in a process loads the numba kernels from their cache and starts Arrow (0.6 s of a 0.7 s pack of the
#: example), a first training step sets up torch's kernels (2.7 s of 2.9 s); a fork of a process that did it
#: once starts with all of that done. Torch runs it on one thread: the server starts no OpenMP team, which a
#: fork could not use.
WARM_UP = (
    ("pack", "--example", "--out", "a", "--pack-size", "1024", "-q"),
    ("pack", "--example", "--out", "b", "--pack-size", "1024", "--bridge-compat", "-q"),
    ("inspect", "a", "-q"),
    ("diff", "a/training_1024.idx.parquet", "b/training_1024.idx.parquet"),
    ("train", "--data", "a/training_1024.idx.parquet", "--steps", "1", "--gbs", "1", "--log", "a.log", "-q"),
    ("curves", "compare", "a.log", "a.log", "--plot", "a.png"),
)
#: What ``scripts/test`` runs before the suite (:func:`warm_up_kernels`): every command that compiles numba
#: kernels, so that each is compiled once, here, and the suite's interpreters load it from numba's cache (a
#: kernel none has written yet is compiled by every process that needs it). Beyond :data:`WARM_UP`'s packs:
#: JSONL token ids (their scanner: ~5 s of compiling) and the curves of a log in every format they read (the
#: fuzz seed; no training: torch compiles no kernel, and the suite's collection imports it anyway).
SUITE_WARM_UP = (
    *WARM_UP[:4],
    ("pack", "ids.jsonl", "--out", "c", "--pack-size", "1024", "--eos-id", "2", "-q"),
    ("curves", "compare", "m.log", "m.log"),
)
#: The signals the client passes on to the command (what ``kill`` or a terminal sends).
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: The client's exit status when there is no server to run its command (none listening, or it went away
#: before the command ended): what ``docker run`` uses for "the runner failed", never a bridgepack exit code.
SERVER_GONE = 125
#: How long the client waits to connect and for its command to start (a loaded machine: seconds at most).
CONNECT_TIMEOUT_S = 60.0
#: How long the server may take to import :data:`PRELOAD` and listen; and to stop.
START_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 10.0
#: Set to 1 to run the pages' commands in new interpreters, as before (to compare, or to debug a page).
COLD_ENV = "BRIDGEPACK_PAGES_COLD"
#: A command's request: a length-prefixed JSON document, the client's descriptors 0, 1 and 2 beside it.
_LENGTH = 8

#: The client, the ``bridgepack`` (and ``bridgepack-py``, which is ``python``: ``-`` or a script file) on the
#: pages' ``PATH``: standard library only, started with ``-IS`` so it costs ~15 ms. ``{python}``,
#: ``{kind}``, its server's ``{socket}`` and ``{log}`` are filled in when it is written.
CLIENT = '''#!{python} -IS
"""A page's `{kind}`: runs in a fork of the warm server (tests/_support/warm_bridgepack.py)."""
import json, os, signal, socket, sys

FORWARDED = {forwarded}


def gone(why):
    print(f"{kind} (warm test server {socket}): {{why}}; its log: {log}", file=sys.stderr)
    sys.exit({gone})


conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.settimeout({timeout})
ignored = [int(s) for s in FORWARDED if signal.getsignal(s) == signal.SIG_IGN]
request = json.dumps({{"kind": "{kind}", "argv": sys.argv[1:], "cwd": os.getcwd(),
                      "env": dict(os.environ), "ignored": ignored}}).encode()
try:
    conn.connect("{socket}")
    socket.send_fds(conn, [len(request).to_bytes({length}, "little")], [0, 1, 2])
    conn.sendall(request)
    replies = conn.makefile("r")
    started = replies.readline()
except OSError as exc:
    gone(f"no server to run the command ({{exc}})")
if not started:
    gone("the server went away before the command started")
pid = int(started)
conn.settimeout(None)  # the command runs as long as it runs; whoever started this client bounds it
for number in FORWARDED:  # ignored here too: the command starts ignoring it, as this process did
    signal.signal(number, lambda n, _f: os.kill(pid, n))
line = replies.readline()
if not line:
    gone("the server went away while the command ran")
code = int(line)
if code < 0:  # ended by a signal: end the same way (SIGKILL's disposition cannot be set, nor needs it)
    if -code != signal.SIGKILL:
        signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
'''


class WarmBridgepack:
    """The server process and the folder of clients to put first on ``PATH``; ``close()`` stops both."""

    def __init__(self, env: Mapping[str, str], preload: Sequence[str] = PRELOAD) -> None:
        # /tmp, not a long TMPDIR: a socket's path must stay under the kernel's 107 bytes
        self.home = Path(tempfile.mkdtemp(prefix="sp-warm-", dir="/tmp" if os.path.isdir("/tmp") else None))
        self.socket = str(self.home / "s")
        self.log = self.home / "server.log"
        self.bin = self.home / "bin"
        self.bin.mkdir()
        for kind in ("bridgepack", "bridgepack-py"):
            path = self.bin / kind
            path.write_text(
                CLIENT.format(
                    python=sys.executable,
                    kind=kind,
                    forwarded=tuple(int(s) for s in FORWARDED),
                    length=_LENGTH,
                    socket=self.socket,
                    log=self.log,
                    timeout=CONNECT_TIMEOUT_S,
                    gone=SERVER_GONE,
                )
            )
            path.chmod(0o755)
        self._ready = self.home / "ready"
        with open(self.log, "wb") as log:
            self._server = subprocess.Popen(
                [sys.executable, __file__, str(self.home), str(os.getpid()), *preload],
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self._server.pid

    def _log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return "(no log)"

    def check(self) -> None:
        """Raise if the server is not running (it crashed, or was stopped), with the end of its log."""
        code = self._server.poll()
        if code is not None:
            raise RuntimeError(f"the warm bridgepack server ended (exit {code}):\n{self._log_tail()}")

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Block until the server has imported everything and listens (or raise with its log)."""
        with self._lock:
            deadline = time.monotonic() + timeout
            while not self._ready.exists():
                self.check()
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the warm bridgepack server did not start in {timeout:g} s")
                time.sleep(0.05)
            self.check()

    def environ(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with the clients first on ``PATH``: its ``bridgepack`` runs in a fork of the server."""
        self.wait_ready()
        return {**env, "PATH": str(self.bin) + os.pathsep + env.get("PATH", "")}

    def command(self, kind: str = "bridgepack") -> str:
        """The path of a client, to start as a program: ``bridgepack`` (the CLI) or ``bridgepack-py``
        (``python``
        for ``-`` or a script file, as ``python FILE ARGS`` runs it)."""
        self.wait_ready()
        return str(self.bin / kind)

    def close(self) -> None:
        """Stop the server (it ends the commands still running) and remove its folder."""
        if self._server.poll() is None:
            self._server.terminate()
            try:
                self._server.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait(STOP_TIMEOUT_S)
        shutil.rmtree(self.home, ignore_errors=True)


_shared: list[WarmBridgepack] = []
_shared_lock = threading.Lock()


def shared() -> WarmBridgepack | None:
    """This test process's server, started on first use and stopped when the process exits; ``None`` when
    :data:`COLD_ENV` asks for new interpreters."""
    if os.environ.get(COLD_ENV) == "1":
        return None
    with _shared_lock:
        if not _shared:
            _shared.append(WarmBridgepack(os.environ))
            atexit.register(_shared[0].close)
        return _shared[0]


def python() -> str:
    """The ``python`` a test starts a script with: the warm server's (``bridgepack-py``), or this interpreter
    when :data:`COLD_ENV` asks for new interpreters."""
    server = shared()
    return sys.executable if server is None else server.command("bridgepack-py")


def bridgepack() -> list[str]:
    """The ``bridgepack`` a test starts as a program: the warm server's, or ``python -m bridgepack`` cold."""
    server = shared()
    return [sys.executable, "-m", "bridgepack"] if server is None else [server.command()]


# --- the server (this file run as a script) -----------------------------------------------------------


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    head, fds, _flags, _addr = socket.recv_fds(conn, _LENGTH, 3)
    while len(head) < _LENGTH:
        chunk = conn.recv(_LENGTH - len(head))
        if not chunk:
            raise EOFError("the client went away")
        head += chunk
    size = int.from_bytes(head, "little")
    body = bytearray()
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise EOFError("the client went away")
        body += chunk
    return json.loads(body), fds


def _run_request(request: dict[str, Any], fds: list[int]) -> NoReturn:
    """In the command's process: become the command the client stands for, then end the process with its
    exit code."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for number in FORWARDED:
        ignored = int(number) in request["ignored"]
        default = signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL
        signal.signal(number, signal.SIG_IGN if ignored else default)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    _torch_threads_from_environment()
    from bridgepack.cli._exit import exit_process

    if request["kind"] == "bridgepack":
        from bridgepack.cli import console_main

        sys.argv = ["bridgepack", *request["argv"]]
        console_main()
    exit_process(_run_python(request["argv"]))
    raise AssertionError("unreachable")  # exit_process never returns


def _run_python(argv: list[str]) -> int:
    """``python -`` (the process's standard input: a page's python block) or ``python FILE ARGS``: the code
    as a fresh ``__main__``, ``sys.argv`` and ``sys.path[0]`` as ``python`` sets them; the exit code
    ``python`` would end with."""
    import traceback
    import types

    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    script = argv[0] if argv else "-"
    sys.argv = [script, *argv[1:]]
    if script == "-":
        sys.path[0], name, source = "", "<stdin>", sys.stdin.read()
    else:
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        name, source = script, Path(script).read_text(encoding="utf-8")
        main.__file__ = script
    try:
        exec(compile(source, name, "exec"), main.__dict__)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException as exc:  # as python prints it: from the script's frames, not this function's
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
        return 1
    return 0


#: torch's thread count in a new process: ``OMP_NUM_THREADS`` when set, else its default (read by the
#: server at start, where the variable is unset); torch reads the variable once, at import.
_TORCH_DEFAULT_THREADS: list[int] = []


def _torch_threads_from_environment() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and _TORCH_DEFAULT_THREADS:
        wanted = os.environ.get("OMP_NUM_THREADS", "")
        given = int(wanted) if wanted.isdigit() else 0
        torch.set_num_threads(given if given > 0 else _TORCH_DEFAULT_THREADS[0])


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _wait_or_kill(pid: int, conn: socket.socket, wakeup: int) -> int | None:
    """Wait for the command ``pid``: its exit status (negative: the signal that ended it), or ``None`` when
    the client went away first -- then the command's process group is killed, so nothing it started runs
    on unattended. SIGCHLD wakes the wait (``wakeup`` is its pipe), so no polling."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        readable, _, _ = select.select([conn, wakeup], [], [])
        if wakeup in readable:
            os.read(wakeup, 512)
        if conn in readable and not conn.recv(1):  # the client sends nothing more: readable is its end
            _kill_group(pid)
            os.waitpid(pid, 0)
            return None


def _serve_one(conn: socket.socket) -> NoReturn:
    """The per-command helper (a fork of the server): fork the command as a process group of its own, tell
    the client its pid, wait for it and send its exit status. Never returns: whatever happens, the helper
    ends here, and takes its command's group with it (SIGTERM from a stopping server included)."""
    pid = 0
    try:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        wakeup, notify = os.pipe()
        os.set_blocking(notify, False)
        signal.set_wakeup_fd(notify)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        conn.settimeout(CONNECT_TIMEOUT_S)
        request, fds = _receive(conn)
        conn.settimeout(None)
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.close(wakeup)
                os.close(notify)
                conn.close()
                _run_request(request, fds)
            except BaseException:  # a fault of the server's own (the command's errors end in exit_process)
                import traceback

                traceback.print_exc()
            os._exit(1)
        with contextlib.suppress(PermissionError, ProcessLookupError):  # the child may have done it already
            os.setpgid(pid, pid)
        for fd in fds:
            os.close(fd)
        conn.sendall(f"{pid}\n".encode())
        code = _wait_or_kill(pid, conn, wakeup)
        pid = 0
        if code is not None:
            with contextlib.suppress(OSError):  # the client was killed at the last moment
                conn.sendall(f"{code}\n".encode())
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        if pid:
            _kill_group(pid)
        os._exit(0)


#: Read once, when a module is imported, where a command's own value must count: torch's thread count
#: (set again per command) and rich's console size (left unset, rich reads it on every print).
_READ_AT_IMPORT = ("OMP_NUM_THREADS", "COLUMNS", "LINES")


def _stop_helpers(helpers: set[int]) -> None:
    """SIGTERM every helper still running (each kills its command's group), then SIGKILL what is left."""
    for pid in helpers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S / 2
    while helpers and time.monotonic() < deadline:
        _reap(helpers)
        time.sleep(0.02)
    for pid in helpers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _reap(helpers: set[int]) -> None:
    """Collect the helpers that ended (their CPU, and their commands', counts as this process's)."""
    for pid in list(helpers):
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == 0:
                continue
        helpers.discard(pid)


def _expanded(preload: Sequence[str]) -> list[str]:
    """``preload`` with each ``pkg.*`` replaced by the package and every module under it (never its
    ``__main__``, which runs a command)."""
    names: list[str] = []
    for name in preload:
        if not name.endswith(".*"):
            names.append(name)
            continue
        package = importlib.import_module(name[:-2])
        names.append(package.__name__)
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not module.name.endswith(".__main__"):
                names.append(module.name)
    return names


def warm_up(commands: Sequence[Sequence[str]] = WARM_UP, inputs: bool = False) -> None:
    """Run ``commands`` (:data:`WARM_UP`: see there) in this process, in a scratch folder that goes with
    their files; ``inputs``: first write the files :data:`SUITE_WARM_UP` reads."""
    from bridgepack.cli import main

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch, open(os.devnull, "w") as null:
        os.chdir(scratch)
        try:
            if inputs:
                _write_suite_inputs(Path(scratch))
            with contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
                for argv in commands:
                    main(list(argv))
        finally:
            os.chdir(cwd)


def warm_up_kernels() -> None:
    """What ``scripts/test`` runs before the suite: :data:`SUITE_WARM_UP`, so numba's cache of compiled
    kernels is filled once instead of in every interpreter that starts before one has written it (a fresh
    clone's first pack: ~10 s)."""
    warm_up(SUITE_WARM_UP, inputs=True)


def _write_suite_inputs(scratch: Path) -> None:
    """``ids.jsonl`` (the example's token ids as JSONL) and ``m.log`` (the curves fuzz seed). Only
    ``scripts/test`` calls it, with tests/ on the path (the warm server runs without it)."""
    import pyarrow.parquet as pq

    from _support.fuzz_targets import LOG_SEED
    from bridgepack.data.samples import example_dataset_path

    with open(scratch / "ids.jsonl", "w") as out:
        for row in pq.read_table(example_dataset_path()).to_pylist():
            out.write(json.dumps(row) + "\n")
    (scratch / "m.log").write_bytes(LOG_SEED)


def serve(home: Path, parent: int, preload: Sequence[str]) -> None:
    """Import ``preload``, listen on ``home/s``, fork a helper per connection; stop on SIGTERM, or when
    ``parent`` (the test process) is gone. Either way: the helpers' commands ended, ``home`` removed."""
    helpers: set[int] = set()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        for name in _READ_AT_IMPORT:
            os.environ.pop(name, None)
        for name in _expanded(preload):
            with contextlib.suppress(ImportError):  # an extra not installed: its commands import it
                importlib.import_module(name)
        if "torch" in sys.modules:
            _TORCH_DEFAULT_THREADS.append(sys.modules["torch"].get_num_threads())
        if "bridgepack.cli" in sys.modules:  # a server for bridgepack's commands (not a test's small one)
            warm_up()
        # Every fork starts with this heap: frozen, a command's collections no longer walk it (nor write
        # its objects' headers, which copied each page they sit on into the fork); thresholds as in
        # tests/conftest.py.
        gc.freeze()
        gc.set_threshold(10_000, 10, 10)  # bridgepack.cli.GC_THRESHOLDS (small servers lack bridgepack)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(home / "s"))
        listener.listen(64)
        listener.settimeout(1.0)
        (home / "ready").touch()
        while os.getppid() == parent:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                conn = None
            if conn is not None:
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    _serve_one(conn)
                helpers.add(pid)
                conn.close()
            _reap(helpers)
        print(f"warm server: the test process {parent} is gone; stopping", file=sys.stderr)
    finally:
        _stop_helpers(helpers)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    # sys.path[0] is this file's folder, whose modules (tokenizers.py ...) would shadow packages; a console
    # script's is the folder of the script, python -'s the working directory (set per python block)
    sys.path[0] = os.path.dirname(sys.executable)
    with contextlib.suppress(SystemExit):  # SIGTERM
        serve(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])
    # stopped (its helpers ended, its folder removed): the test process waits for this exit, which the
    # interpreter's own shutdown of everything preloaded (torch, transformers ...) would delay by seconds
    sys.stderr.flush()
    os._exit(0)
