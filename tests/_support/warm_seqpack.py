"""A warm ``seqpack`` for the pages' commands: each command a fresh fork of one process that imported it all.

The docs and skills pages run ~150 ``seqpack`` commands and ~30 ``python`` blocks, each in a new interpreter
that imports seqpack, numba, and for the training commands torch and transformers: 0.7-2.7 s of CPU a
command before it does anything, about 40 % of what the pages cost. A :class:`WarmSeqpack` is one server
process that has imported all of that once; the page's command still runs through ``bash`` as written
(pipes, ``&``, ``kill -INT $pid``, globs, redirections), but the ``seqpack`` it finds first on ``PATH`` is
a small client (:data:`CLIENT`) that hands its arguments, working directory, environment, signal
dispositions and its own standard input, output and error to the server. The server forks; the fork sets
all of that up and runs ``seqpack.cli.console_main`` (a page's python block: the block's code as
``__main__``), so each command gets a fresh process -- no state carries from one command to the next --
without paying for the imports. The client forwards signals to the fork and ends with its exit status
(killed by a signal: the same signal), so the shell sees what it would see from the real script.

What differs from a cold start, and why it does not matter to a page: the process was forked (its parent
is the server's helper, not the shell; ``$!`` and ``kill`` address the client, which forwards); modules
are imported before the command's environment is set (seqpack reads its environment at run time; torch's
thread count comes from the server's ``OMP_NUM_THREADS``, which the pages set for every command alike).
``WarmSeqpack`` is used by :func:`_support.fenced_blocks.run`; anything else (``python -m seqpack``,
``torchrun``, tests of process behaviour) starts the real interpreter.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
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
from typing import Any

#: What the server imports before it forks a command: the CLI with every command, the text stack and the
#: trainer (the pages' heaviest imports), and what the pages' python blocks import.
PRELOAD = (
    "seqpack",
    "seqpack.cli",
    *(f"seqpack.cli.{name}" for name in ("pack", "inspect", "plan", "doctor", "translate", "curves")),
    *(f"seqpack.cli.{name}" for name in ("correlate", "train", "diff", "fingerprint", "env", "verify")),
    "seqpack.cli.clean",
    "seqpack.cli.demo",
    "seqpack.train",
    "seqpack.demo",
    "transformers",
    "pyarrow.parquet",
)
#: The signals the client passes on to the command (what ``kill`` or a terminal sends).
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: A command's request: a length-prefixed JSON document, the client's descriptors 0, 1 and 2 beside it.
_LENGTH = 8

#: The client, the ``seqpack`` (and ``seqpack-py``, which is ``python``: ``-`` or a script file) on the
#: pages' ``PATH``: standard library only, started with ``-IS`` so it costs ~15 ms. ``{python}``,
#: ``{kind}`` and its server's ``{socket}`` are filled in when it is written.
CLIENT = '''#!{python} -IS
"""A page's `{kind}`: runs in a fork of the warm server (tests/_support/warm_seqpack.py)."""
import json, os, signal, socket, sys

FORWARDED = {forwarded}
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect("{socket}")
ignored = [int(s) for s in FORWARDED if signal.getsignal(s) == signal.SIG_IGN]
request = json.dumps({{"kind": "{kind}", "argv": sys.argv[1:], "cwd": os.getcwd(),
                      "env": dict(os.environ), "ignored": ignored}}).encode()
socket.send_fds(conn, [len(request).to_bytes({length}, "little")], [0, 1, 2])
conn.sendall(request)
replies = conn.makefile("r")
pid = int(replies.readline())
for number in FORWARDED:  # ignored here too: the fork starts ignoring it, as this process did
    signal.signal(number, lambda n, _f: os.kill(pid, n))
line = replies.readline()
code = int(line) if line else 1
if code < 0:  # ended by a signal: end the same way (SIGKILL's disposition cannot be set, nor needs it)
    if -code != signal.SIGKILL:
        signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
'''


class WarmSeqpack:
    """The server process and the folder of clients to put first on ``PATH``; ``close()`` stops both."""

    def __init__(self, env: Mapping[str, str], preload: Sequence[str] = PRELOAD) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="sp-warm-"))
        self.socket = str(self.home / "s")
        self.bin = self.home / "bin"
        self.bin.mkdir()
        for kind in ("seqpack", "seqpack-py"):
            path = self.bin / kind
            forwarded = tuple(int(s) for s in FORWARDED)
            client = CLIENT.format(
                python=sys.executable, kind=kind, forwarded=forwarded, length=_LENGTH, socket=self.socket
            )
            path.write_text(client)
            path.chmod(0o755)
        ready = self.home / "ready"
        self._server = subprocess.Popen(
            [sys.executable, __file__, self.socket, str(ready), *preload],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(self.home / "server.log", "wb"),  # noqa: SIM115  (closed with the process)
        )
        self._lock = threading.Lock()
        self._ready = ready

    def wait_ready(self, timeout: float = 300) -> None:
        """Block until the server has imported everything and listens (or raise with its log)."""
        with self._lock:
            deadline = time.monotonic() + timeout
            while not self._ready.exists():
                if self._server.poll() is not None or time.monotonic() > deadline:
                    log = (self.home / "server.log").read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"the warm seqpack server did not start:\n{log}")
                time.sleep(0.05)

    def environ(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with the clients first on ``PATH``: its ``seqpack`` runs in a fork of the server."""
        self.wait_ready()
        return {**env, "PATH": str(self.bin) + os.pathsep + env.get("PATH", "")}

    def command(self, kind: str = "seqpack") -> str:
        """The path of a client, to start as a program: ``seqpack`` (the CLI) or ``seqpack-py`` (``python``
        for ``-`` or a script file, as ``python FILE ARGS`` runs it)."""
        self.wait_ready()
        return str(self.bin / kind)

    def close(self) -> None:
        if self._server.poll() is None:
            self._server.terminate()
            try:
                self._server.wait(30)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()
        shutil.rmtree(self.home, ignore_errors=True)


_shared: list[WarmSeqpack] = []
_shared_lock = threading.Lock()
#: Set to 1 to run the pages' commands in new interpreters, as before (to compare, or to debug a page).
COLD_ENV = "SEQPACK_PAGES_COLD"


def shared() -> WarmSeqpack | None:
    """This test process's server, started on first use and stopped when the process exits; ``None`` when
    :data:`COLD_ENV` asks for new interpreters."""
    if os.environ.get(COLD_ENV) == "1":
        return None
    with _shared_lock:
        if not _shared:
            _shared.append(WarmSeqpack(os.environ))
            atexit.register(_shared[0].close)
        return _shared[0]


def python() -> str:
    """The ``python`` a test starts a script with: the warm server's (``seqpack-py``), or this interpreter
    when :data:`COLD_ENV` asks for new interpreters."""
    server = shared()
    return sys.executable if server is None else server.command("seqpack-py")


def seqpack() -> list[str]:
    """The ``seqpack`` a test starts as a program: the warm server's, or ``python -m seqpack`` cold."""
    server = shared()
    return [sys.executable, "-m", "seqpack"] if server is None else [server.command()]


# --- the server (this file run as a script) -----------------------------------------------------------


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    head, fds, _flags, _addr = socket.recv_fds(conn, _LENGTH, 3)
    size = int.from_bytes(head, "little")
    body = bytearray()
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise EOFError("the client went away")
        body += chunk
    return json.loads(body), fds


def _run_request(request: dict[str, Any], fds: list[int]) -> None:
    """In the fork: become the command the client stands for, then end the process with its exit code."""
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
    from seqpack.cli._exit import exit_process

    if request["kind"] == "seqpack":
        from seqpack.cli import console_main

        sys.argv = ["seqpack", *request["argv"]]
        console_main()
    exit_process(_run_python(request["argv"]))


def _run_python(argv: list[str]) -> int:
    """``python -`` (the fork's standard input: a page's python block) or ``python FILE ARGS``: the code as a
    fresh ``__main__``, ``sys.argv`` and ``sys.path[0]`` as ``python`` sets them; the exit code ``python``
    would end with."""
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


def _serve_one(conn: socket.socket, listener: socket.socket) -> None:
    """The per-request helper (a fork of the server): fork the command, tell the client its pid, wait for
    it and send its exit status (negative: the signal that ended it)."""
    listener.close()
    request, fds = _receive(conn)
    pid = os.fork()
    if pid == 0:
        conn.close()
        try:
            _run_request(request, fds)
        except BaseException:  # a fault of the server's own (the command's errors end in exit_process)
            import traceback

            traceback.print_exc()
        os._exit(1)
    for fd in fds:
        os.close(fd)
    conn.sendall(f"{pid}\n".encode())
    _, status = os.waitpid(pid, 0)
    with contextlib.suppress(OSError):  # the client was killed first
        conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
    os._exit(0)


#: Read once, when a module is imported, where a command's own value must count: torch's thread count
#: (set again per command) and rich's console size (left unset, rich reads it on every print).
_READ_AT_IMPORT = ("OMP_NUM_THREADS", "COLUMNS", "LINES")


def serve(path: str, ready: str, preload: Sequence[str]) -> None:
    for name in _READ_AT_IMPORT:
        os.environ.pop(name, None)
    for name in preload:
        with contextlib.suppress(ImportError):  # an extra not installed: its commands import it themselves
            importlib.import_module(name)
    if "torch" in sys.modules:
        _TORCH_DEFAULT_THREADS.append(sys.modules["torch"].get_num_threads())
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    listener.settimeout(1.0)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    Path(ready).touch()
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            conn = None
        if conn is not None:
            conn.settimeout(None)
            if os.fork() == 0:
                _serve_one(conn, listener)
            conn.close()
        try:  # reap the finished helpers (their CPU, and their commands', counts as this process's)
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass


if __name__ == "__main__":
    # sys.path[0] is this file's folder, whose modules (tokenizers.py ...) would shadow packages; a console
    # script's is the folder of the script, python -'s the working directory (set per python block)
    sys.path[0] = os.path.dirname(sys.executable)
    serve(sys.argv[1], sys.argv[2], sys.argv[3:])
