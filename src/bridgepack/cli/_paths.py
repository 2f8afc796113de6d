"""Every path a command takes is what it must be, checked before the command runs: one line, exit 2.

A named pipe given as input (``mkfifo f.jsonl; cat in.jsonl > f.jsonl & bridgepack pack f.jsonl``) was read
twice, by the input hash and by the scanner, and reported as empty or malformed; a file where a folder
was wanted (``--tokenizer tokenizer.json``) said "tokenizer directory does not exist". Each parameter that
names a path is listed here with the kind it must be; a path that exists and is another kind is refused
with what it is (``f.jsonl: is a named pipe (FIFO), expected a file``), before anything opens it. A path
that does not exist (a glob, an output to create) is left to the command, which says why it cannot be read.
``tests/hardening/test_wrong_kind.py`` walks the app: a path parameter missing here fails it.
"""

from __future__ import annotations

import functools
from typing import Any

from bridgepack._io import DIRECTORY, FILE, FILE_OR_DIRECTORY, TOKENIZER_DIRECTORY, wrong_kind

#: What a command's tokenizer option names, as the library words it (``load_tokenizer``).
_TOKENIZER = (DIRECTORY, TOKENIZER_DIRECTORY)
_FILE, _DIR, _EITHER = (FILE, None), (DIRECTORY, None), (FILE_OR_DIRECTORY, None)

#: ``(command path, parameter name) -> (kind, what it is called)``: every parameter of the app that names
#: a path, inputs and outputs alike (an output must not exist as another kind either: a folder where a
#: report goes, a file where a folder goes).
PATH_PARAMETERS: dict[tuple[str, str], tuple[str, str | None]] = {
    ("pack", "inputs"): _EITHER,  # JSONL / Parquet files or datasets directories
    ("pack", "out"): _DIR,
    ("pack", "tokenizer"): _TOKENIZER,
    ("pack", "chat_template"): _FILE,
    ("pack", "tool_schemas"): _FILE,
    ("pack", "scratch_dir"): _DIR,
    ("inspect", "path"): _EITHER,  # a packed file, a set's folder (or a glob: not a path, left alone)
    ("inspect", "metadata"): _FILE,
    ("inspect", "out"): _FILE,
    ("inspect", "tokenizer"): _TOKENIZER,
    ("plan", "inputs"): _EITHER,
    ("plan", "tokenizer"): _TOKENIZER,
    ("plan", "chat_template"): _FILE,
    ("plan", "tool_schemas"): _FILE,
    ("plan", "plot"): _FILE,
    ("doctor", "config"): _FILE,
    ("doctor", "model_config"): _FILE,
    ("doctor", "overrides"): _FILE,  # KEY=VALUE overrides or more CONFIG files: a path given is a file
    ("doctor", "write_config"): _FILE,
    ("doctor", "packed"): _EITHER,
    ("train", "data"): _EITHER,
    ("train", "padded_from"): _EITHER,
    ("train", "log"): _FILE,
    ("train", "tensorboard"): _DIR,
    ("diff", "a"): _EITHER,
    ("diff", "b"): _EITHER,
    ("fingerprint", "path"): _EITHER,
    ("verify", "bridge_wheel"): _FILE,
    ("verify", "megatron_core_wheel"): _FILE,
    ("verify", "keep"): _DIR,
    ("clean", "dirs"): _DIR,
    ("demo", "out"): _DIR,
    ("demo", "tokenizer"): _TOKENIZER,
    ("translate mlm-to-bridge", "model_config"): _FILE,
    ("translate bridge-to-mlm", "config"): _FILE,
    ("curves compare", "runs"): _EITHER,  # logs, metric files or TensorBoard folders
    ("curves compare", "plot"): _FILE,
    ("curves compare", "html_out"): _FILE,
    ("curves show", "logs"): _EITHER,
    ("curves show", "plot"): _FILE,
    ("curves export", "log"): _EITHER,
    ("curves export", "golden"): _FILE,
    ("correlate plan", "spec"): _FILE,
    ("correlate plan", "out"): _DIR,
    ("correlate run", "spec"): _FILE,
    ("correlate run", "out"): _DIR,
}


def check_path_kinds(root: Any) -> None:
    """Wrap the callback of every command of the click app ``root`` that takes a path, so that each path
    given is checked (:func:`bridgepack._io.wrong_kind`) before the command runs."""
    _walk(root, ())


def _walk(command: Any, path: tuple[str, ...]) -> None:
    for name, sub in (getattr(command, "commands", None) or {}).items():
        _walk(sub, (*path, name))
    if getattr(command, "commands", None) is not None or command.callback is None:
        return
    kinds = {
        param.name: PATH_PARAMETERS[(" ".join(path), param.name)]
        for param in command.params
        if (" ".join(path), param.name) in PATH_PARAMETERS
    }
    if kinds:
        command.callback = _checked(command.callback, kinds)


def _checked(callback: Any, kinds: dict[str, tuple[str, str | None]]) -> Any:
    @functools.wraps(callback)
    def run(**given: Any) -> Any:
        for name, (kind, what) in kinds.items():
            value = given.get(name)
            for item in value if isinstance(value, (list, tuple)) else (value,):
                error = None if item is None else wrong_kind(item, kind, what)
                if error is not None:
                    raise error
        return callback(**given)

    return run
