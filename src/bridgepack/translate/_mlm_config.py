"""Read Megatron-LM launch configs: functional-test ``model_config.yaml`` files and argument strings.

A functional-test case holds its ``pretrain_gpt.py`` flags under ``MODEL_ARGS`` as a mapping
(``--seq-length: 1024``, ``--bf16: true`` for switches); ``--mlm-args "..."`` is a shell-like string.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from bridgepack._yaml import load_yaml
from bridgepack.errors import InputError, UsageError, param
from bridgepack.translate._convert import mlm_to_bridge


def load_model_args(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``MODEL_ARGS`` mapping of a Megatron-LM ``model_config.yaml`` (``True`` = switch)."""
    document, lines = load_yaml(path)
    if not isinstance(document, dict) or "MODEL_ARGS" not in document:
        raise InputError(
            f"{os.fspath(path)}: expected a mapping with a 'MODEL_ARGS' key (Megatron-LM model_config)"
        )
    args = document["MODEL_ARGS"]
    if not isinstance(args, dict):
        raise InputError(
            f"{os.fspath(path)}:{lines.get('MODEL_ARGS', 1)}: MODEL_ARGS must be a mapping of flags"
        )
    for flag in args:
        if not isinstance(flag, str) or not flag.startswith("--"):
            line = lines.get(f"MODEL_ARGS.{flag}", lines.get("MODEL_ARGS", 1))
            raise InputError(f"{os.fspath(path)}:{line}: MODEL_ARGS key {flag!r} is not a '--flag'")
        try:  # a value of the wrong type is named with the file and line it was written on
            mlm_to_bridge({flag: args[flag]})
        except UsageError as exc:
            line = lines.get(f"MODEL_ARGS.{flag}", lines.get("MODEL_ARGS", 1))
            raise UsageError(f"{os.fspath(path)}:{line}: {exc}") from None
    return dict(args)


def split_mlm_args(text: str) -> list[str]:
    """Split a Megatron-LM argument string as a POSIX shell would (quotes kept together)."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"{param('mlm_args')}: cannot split the argument string ({exc})") from None
