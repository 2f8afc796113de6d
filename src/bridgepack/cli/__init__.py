"""The ``bridgepack`` command line: one Typer app, one module per command under ``bridgepack.cli``.

Exit codes are decided here and nowhere else: 0 ok; 1 a finding, a mismatch or invalid data
(:class:`~bridgepack.errors.DataError`); 2 unreadable input or wrong usage
(:class:`~bridgepack.errors.InputError`, :class:`~bridgepack.errors.UsageError`, click usage errors, and an
``OSError`` no command turned into one: a full disk, a permission). A traceback is shown only with
``--debug``; every error is one line on stderr.
"""

from __future__ import annotations

import errno
import gc
import os
import select
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import typer
from typer.core import MarkupMode

from bridgepack import __version__
from bridgepack._console import styled
from bridgepack._io import TEMP_PREFIX
from bridgepack.cli import _commands
from bridgepack.cli._common import ClickException, err_console, flag, state, stdout_is_terminal
from bridgepack.cli._exit import exit_process, silence_stdout
from bridgepack.cli._paths import check_path_kinds
from bridgepack.cli._repeats import refuse_repeated
from bridgepack.errors import BridgepackError

__all__ = ["build_app", "console_main", "main"]


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"bridgepack {__version__}")
        raise typer.Exit(0)


def _root(
    debug: bool = typer.Option(False, "--debug", help="Show a traceback for errors (for bug reports)."),
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Sequence packing and long-context training checks for Megatron-Bridge users."""
    state.debug = debug


#: The width of ``--help`` when stdout is not a terminal: wide enough that click wraps no line, so an option
#: name, its help and an example command each stay whole on one line whatever ``COLUMNS`` says.
PLAIN_HELP_WIDTH = 10_000


class _App(typer.Typer):
    """The ``bridgepack`` Typer app. Its help is Rich's panels on a terminal only: Rich draws them to the
    width
    of ``COLUMNS`` (80 in most CI jobs and agents' shells, or less) and cuts what does not fit, an option
    name included (``--max-seq-leng…``). Anywhere else the help is click's plain text, unwrapped
    (:data:`PLAIN_HELP_WIDTH`).

    Typer copies ``rich_markup_mode`` into the click commands it builds, so reading stdout here decides the
    help of the commands built for that kind of stdout (:func:`_click_root`), subcommands and command groups
    alike."""

    @property
    def rich_markup_mode(self) -> MarkupMode:
        return "rich" if stdout_is_terminal() else None

    @rich_markup_mode.setter
    def rich_markup_mode(self, value: MarkupMode) -> None:
        """Typer's constructor sets it; the terminal decides instead."""


_APPS: dict[tuple[str, ...], typer.Typer] = {}


def build_app(commands: tuple[str, ...] = _commands.COMMAND_MODULES) -> typer.Typer:
    """The ``bridgepack`` app with ``commands`` registered (built once per set: registering imports them)."""
    if commands not in _APPS:
        built = _App(
            name="bridgepack",
            help="Sequence packing and long-context training checks for Megatron-Bridge users.",
            no_args_is_help=True,
            add_completion=False,
            pretty_exceptions_enable=False,
            context_settings={
                "help_option_names": ["-h", "--help"],
                "terminal_width": PLAIN_HELP_WIDTH,
                "max_content_width": PLAIN_HELP_WIDTH,
            },
        )
        built.callback()(_root)
        _commands.register(built, commands)
        _APPS[commands] = built
    return _APPS[commands]


#: The click command (typer's vendored click or click itself: ``_common._click_exception_type``) per key.
_ROOTS: dict[tuple[tuple[str, ...], bool], Any] = {}


def _click_root(commands: tuple[str, ...], terminal: bool) -> Any:
    """The click command a run of the app with ``commands`` parses with, every path parameter checked for
    its kind (a named pipe, a file for a folder: exit 2, :func:`check_path_kinds`). Built once per command
    set and kind of stdout (``terminal``: typer copies the help's markup, :attr:`_App.rich_markup_mode`, into
    what it builds), not per run: building the whole app's commands takes ~25 ms, a process that runs many
    commands (the tests, a warm server's forks) would pay it each time."""
    key = (commands, terminal)
    if key not in _ROOTS:
        root = typer.main.get_command(build_app(commands))
        check_path_kinds(root)
        _ROOTS[key] = root
    return _ROOTS[key]


def __getattr__(name: str) -> typer.Typer:
    """``bridgepack.cli.app``: the app with every command (built on first use)."""
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Terminated(KeyboardInterrupt):
    """SIGTERM (Slurm's ``scancel``, a preemption, ``docker stop``) raised in the main thread like Ctrl-C,
    so every ``finally`` cleans up as it does for SIGINT; the exit code is 143 (128 + SIGTERM).

    typer turns a ``KeyboardInterrupt`` into exit code 130 without a trace of which one it was, so the
    handler also notes that it fired."""


_terminated: list[bool] = []


def _terminate(signum: int, frame: FrameType | None) -> None:
    _terminated.append(True)
    raise Terminated


def _file_in_the_way(name: str) -> str | None:
    """The path itself or its nearest ancestor that exists and is not a folder (``--out`` names a file)."""
    for candidate in (Path(name), *Path(name).parents):
        if candidate.exists():
            return None if candidate.is_dir() else os.fspath(candidate)
    return None


def os_error_message(exc: OSError) -> str:
    """One line for an OS error no command turned into one, in the user's terms.

    ``mkdir`` under a file says "File exists" or "Not a directory" about a path the user may never have
    typed: the file in the way is named instead. A temp file's name (``.bridgepack-tmp-...``) is internal:
    its folder is named.
    """
    name = None if exc.filename is None else os.fspath(exc.filename)
    if name is not None and exc.errno in (errno.EEXIST, errno.ENOTDIR):
        blocker = _file_in_the_way(name)
        if blocker is not None:
            return f"{blocker}: is a file, expected a directory"
    if name is not None and os.path.basename(name).startswith(TEMP_PREFIX):
        name = os.path.dirname(name) or "."
    return f"{name or 'bridgepack'}: {exc.strerror or exc}"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (the console script ends the process with it)."""
    args, state.debug = _debug_anywhere(sys.argv[1:] if argv is None else list(argv))
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main else None
    _terminated.clear()
    try:
        code = _run(args)
        if _terminated:
            err_console.print("Terminated.")
            return 143
        return code
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)


def usage_line(exc: Exception) -> str:
    """click's usage error (four lines: ``Usage:``, ``Try ...``, a blank, ``Error: ...``) as the one line
    every bridgepack error is, the help hint on it: ``No such option: --nope (see 'bridgepack plan
    --help')``."""
    message = " ".join(str(exc.format_message()).split())  # type: ignore[attr-defined]
    ctx = getattr(exc, "ctx", None)
    return message if ctx is None else f"{message} (see '{ctx.command_path} --help')"


def _debug_anywhere(args: list[str]) -> tuple[list[str], bool]:
    """``--debug`` is a root option; given after the command name too (``bridgepack curves --debug ...``), it
    moves to the front. Arguments after ``--`` are left as they are."""
    end = args.index("--") if "--" in args else len(args)
    if "--debug" not in args[:end]:
        return args, False
    return ["--debug", *(a for a in args[:end] if a != "--debug"), *args[end:]], True


def _print_error(message: str) -> None:
    """The one-line error: the message holds user text (paths, values), printed as it is."""
    err_console.print(styled(("error:", "bold red"), " ", message), soft_wrap=True)


def _run_command(args: list[str]) -> int:
    try:
        root = _click_root(_commands.commands_for(args), stdout_is_terminal())
        refuse_repeated(root, args)
        result = root.main(args=args, prog_name="bridgepack", standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        err_console.print("Aborted.")
        return 130
    except ClickException as exc:
        if (
            type(exc).__name__ == "NoArgsIsHelpError"
        ):  # `bridgepack`, `bridgepack curves`: the help was the answer
            exc.show(file=sys.stderr)  # type: ignore[attr-defined]
        else:
            _print_error(usage_line(exc))
        return 2
    except BridgepackError as exc:
        if state.debug:
            raise
        _print_error(exc.render(flag))
        return exc.exit_code
    except BrokenPipeError:
        raise  # handled by _run, never an error line
    except OSError as exc:  # the environment, not the input (a full disk, a permission): still one line
        if state.debug:
            raise
        _print_error(os_error_message(exc))
        return 2
    except KeyboardInterrupt:
        err_console.print("Interrupted.")
        return 130
    return int(result) if isinstance(result, int) else 0


def _run(args: list[str]) -> int:
    """:func:`_run_command`, with a reader that went away (``bridgepack plan ... | head -1``) ending quietly
    with 141, as a shell tool killed by SIGPIPE does; never 1, which means a finding. Both rich (it points
    stdout at the null device first) and typer (around any command) turn a broken pipe into
    ``SystemExit(1)``."""
    try:
        return _run_command(args)
    except BrokenPipeError:
        return silence_stdout()
    except SystemExit as exc:
        if exc.code == 1 and _reader_gone():
            return silence_stdout()
        raise


def _reader_gone() -> bool:
    """Whether standard output's reader went away: rich pointed it at the null device, or it is a pipe
    whose read end is closed (``poll`` reports an error on the write end)."""
    try:
        fd = sys.stdout.fileno()
        if os.path.samestat(os.fstat(fd), os.stat(os.devnull)):
            return True
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no descriptor behind stdout; no poll (Windows)
        return False


#: The cyclic garbage collector's thresholds in a ``bridgepack`` process. A command imports numba, Arrow,
#: torch or transformers (hundreds of thousands of objects that live until it exits) and keeps its data in
#: arrays: CPython's (700, 10, 10) walked those imports again and again, ~8 % of a small pack's CPU.
GC_THRESHOLDS = (10_000, 10, 10)


def console_main() -> None:
    """Entry point of the ``bridgepack`` console script (and ``python -m bridgepack``): the command's exit
    code, without the interpreter's teardown (:mod:`bridgepack.cli._exit`)."""
    gc.set_threshold(*GC_THRESHOLDS)
    exit_process(main())
