"""``bridgepack plan`` suggests a ``bridgepack pack`` command that repeats the options both take: each such
option
must be the same option in both commands (flags, help text with its range, default)."""

from __future__ import annotations

from typing import Any

import typer

from bridgepack.cli import app

#: What both commands take and what they mean alike (``--overwrite`` is not one: pack's replaces a pack
#: set, plan's the --plot file; ``--format`` / ``--quiet`` are every command's).
SHARED = {
    "--tokenizer",
    "--prompt-field",
    "--completion-field",
    "--messages-field",
    "--chat-template",
    "--tool-schemas",
    "--eos-id",
    "--tp",
    "--cp",
    "--sequence-parallel",
    "--model",
    "--workers",
}


def _options(name: str) -> dict[str, Any]:
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {
        next(o for o in p.opts if o.startswith("--")): p for p in command.params if p.opts[0].startswith("-")
    }


def test_common_options_are_one_definition() -> None:
    pack, plan = _options("pack"), _options("plan")
    common = set(pack) & set(plan)
    assert common - {"--overwrite", "--format", "--quiet", "--help"} == SHARED
    for flag in SHARED:
        a, b = pack[flag], plan[flag]
        assert (a.opts, a.secondary_opts, a.help, a.default) == (
            b.opts,
            b.secondary_opts,
            b.help,
            b.default,
        ), flag
    assert pack["--model"].help.startswith("hidden,layers,heads,ffn,vocab[,query_groups]:")
    assert pack["--eos-id"].help.endswith("[0<=x<=4294967295]")
