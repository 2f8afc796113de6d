"""Ending the ``bridgepack`` process without tearing the interpreter down.

After a command has returned, CPython's finalization frees every module, object and arena one by one and
shuts down what extensions hold: numba's LLVM, the tokenizer's vocabulary, transformers' import tables.
On the text path that is 0.4-1.2 s of a finished ``bridgepack pack`` process (measured on 2 cores: 1.1-1.3 s
of a 9-10 s run on 5,000 chats) spent on memory the operating system reclaims at once anyway.

:func:`exit_process` does what finalization does that anyone can observe -- waits for the threads that are
not daemons (after telling idle pool threads to leave), runs the ``atexit`` callbacks (``tempfile``'s and
``weakref.finalize``'s cleanups, multiprocessing's, coverage's), flushes standard output and error -- and
then ends the process with ``os._exit``. Every file bridgepack writes is closed and renamed before a command
returns, so nothing waits on the interpreter's teardown.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

#: CPython's exit status when flushing standard output fails at exit for another reason than a closed pipe.
FLUSH_FAILED = 120
#: 128 + SIGPIPE: what a shell reports for a tool whose reader went away (``bridgepack plan ... | head -1``).
#: Never 1, which means a finding.
BROKEN_PIPE = 141


def silence_stdout() -> int:
    """Point standard output at the null device (its reader is gone: what is still buffered, and every later
    write, goes nowhere instead of failing again) and return :data:`BROKEN_PIPE`."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real descriptor behind sys.stdout (a test's capture)
        pass
    finally:
        os.close(devnull)
    return BROKEN_PIPE


def exit_process(code: int) -> None:
    """End the process with ``code`` (see the module docstring); never returns."""
    _wait_for_threads()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BrokenPipeError:  # the reader went away before the last buffered bytes
            code = silence_stdout() if stream is sys.stdout else code
        except (OSError, ValueError):  # a closed stream
            code = code or FLUSH_FAILED
    os._exit(code)


def _wait_for_threads() -> None:
    """The interpreter's first step at exit, ``threading._shutdown``: the hooks that send idle pool threads
    home (a ``concurrent.futures`` executor never shut down) run, then the non-daemon threads are joined.
    Off the main thread, where no interpreter exit happens, the non-daemon threads are joined."""
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None and threading.current_thread() is threading.main_thread():
        shutdown()
        return
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join()
