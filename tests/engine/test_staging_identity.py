"""A stopped ray run is resumed only by a run of the same identity (#43 item 1), without a cluster: the
staging directory is opened by :func:`prepare_sharded` on the driver, before any task runs.

Before: the identity was the metadata record's settings, which leave out what shapes a slice without
being recorded (``--chunk-rows``, the cost model, the chat files' contents); killed after slice 0 and run
again with another ``--chunk-rows``, a run reused slice 0 and packed 975 of 1,000 samples, some twice,
exit 0. Now every option of ``pack`` is declared (:data:`bridgepack.data.pipeline.STAGING_OPTIONS`) as part of
the identity, as naming the staging directory, or as changing how the run goes only; the options are read
from ``PackOptions``, the ``pack`` command and ``bridgepack.pack``, so a new option fails here until it is
declared, and every identity option is tried against a resume.
"""

from __future__ import annotations

import inspect
import itertools
import json
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer

import bridgepack
from _support.pack_inputs import random_examples, write_jsonl
from bridgepack.cli import app
from bridgepack.data.pipeline import (
    STAGING_OPTIONS,
    InputOptions,
    LengthPolicy,
    PackOptions,
    PackSize,
    RunSettings,
    TooLong,
    prepare_sharded,
)
from bridgepack.demo import build_tokenizer
from bridgepack.errors import UsageError
from bridgepack.packing import CostModel, ModelDims

PACK = 64
#: ``pack`` flags and ``bridgepack.pack`` keywords that set another option than their own name (derived).
CLI_ALIASES = {
    "inputs": "paths",
    "out": "out_dir",
    "example": "paths",
    "cp": "pad_seq_to_mult",
    "tp": "pad_seq_to_mult",
    "sequence_parallel": "pad_seq_to_mult",
    "model": "cost_model",
    "output_format": "quiet",
}
#: Options the ray engine takes one value of (``check_sharded`` refuses others before anything is staged).
ONE_VALUE_ON_RAY = {"layout", "scratch_dir"}


def _leaves(kind: Any) -> set[str]:
    """The flat option names of a ``PackOptions`` group, nested groups opened."""
    names: set[str] = set()
    for f in fields(kind):
        nested = f.default_factory() if callable(f.default_factory) else f.default  # type: ignore[misc]
        names |= _leaves(type(nested)) if is_dataclass(nested) else {f.name}
    return names


def test_every_option_of_pack_is_declared_for_resume() -> None:
    groups = {f.name: f.type for f in fields(PackOptions)}
    flat = {"bridge_compat"} | _leaves(LengthPolicy) | _leaves(PackSize) | _leaves(RunSettings)
    flat |= _leaves(InputOptions)
    assert set(groups) == {"input", "size", "run", "length", "bridge_compat"}  # a new group: open it here
    command = typer.main.get_command(app).commands["pack"]
    cli = {p.name for p in command.params}
    api = set(inspect.signature(bridgepack.pack).parameters)  # the typed keywords of bridgepack.pack
    assert set(CLI_ALIASES) <= cli | api and set(CLI_ALIASES.values()) <= set(STAGING_OPTIONS)
    assert set(STAGING_OPTIONS) == flat | ((cli | api) - set(CLI_ALIASES))
    assert {kind for kind, _ in STAGING_OPTIONS.values()} == {"identity", "place", "run"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Pre-tokenized rows, prompt-completion rows (two pairs of fields), chat rows (two fields), two toy
    tokenizers, a chat template file and a tool schemas file."""
    from bridgepack.demo._toy_tokenizer import CHAT_TEMPLATE

    root = tmp_path_factory.mktemp("identity")
    words = ["what is two plus two ?", "it is four .", "hello there", "hi"]
    pairs = [{"input": a, "output": b, "question": b, "answer": a} for a, b in itertools.pairwise(words)]
    turns = [{"role": "user", "content": words[0]}, {"role": "assistant", "content": words[1]}]
    (root / "template.jinja").write_text(CHAT_TEMPLATE + "\n")
    (root / "tools.json").write_text(json.dumps([{"type": "function", "function": {"name": "add"}}]))
    return {
        "tokens": write_jsonl(root / "tokens.jsonl", random_examples(np.random.default_rng(1), 200, 40)),
        "prompt": write_jsonl(root / "prompt.jsonl", pairs * 20),
        "chat": write_jsonl(root / "chat.jsonl", [{"messages": turns, "turns": turns}] * 20),
        "toy": build_tokenizer(words, root / "toy"),
        "toy2": build_tokenizer([*words, "more words here"], root / "toy2"),
        "root": root,
    }


def _base(kind: str, inputs: dict[str, Any]) -> dict[str, Any]:
    if kind == "tokens":
        return {}
    if kind == "prompt":
        return {"tokenizer": inputs["toy"], "prompt_field": "input", "completion_field": "output"}
    return {"tokenizer": inputs["toy"]}


#: identity option -> (the run it is tried on, the options changed). Every identity option of
#: STAGING_OPTIONS has an entry (checked below).
CHANGES: dict[str, tuple[str, Any]] = {
    "paths": ("tokens", "rewritten"),
    "tokenizer": ("prompt", {"tokenizer": "toy2"}),
    "eos_id": ("tokens", {"eos_id": 2}),
    "chat_template": ("chat", {"chat_template": "template.jinja"}),
    "tool_schemas": ("chat", {"tool_schemas": "tools.json"}),
    "chunk_rows": ("tokens", {"chunk_rows": 7}),
    "prompt_field": ("prompt", {"prompt_field": "question"}),
    "completion_field": ("prompt", {"completion_field": "answer"}),
    "messages_field": ("chat", {"messages_field": "turns"}),
    "loss_mode": ("prompt", {"loss_mode": "full"}),
    "separator": ("prompt", {"separator": "\n"}),
    "prompt_template": ("prompt", {"prompt_template": "Q: {prompt}"}),
    "strip_whitespace": ("prompt", {"strip_whitespace": False}),
    "add_bos": ("prompt", {"add_bos": True}),
    "add_sep": ("prompt", {"add_sep": True}),
    "add_eos": ("prompt", {"add_eos": False}),
    "truncation_method": ("prompt", {"truncation_method": "left"}),
    "assistant_start": ("chat", {"assistant_start": "<|assistant|>", "assistant_end": "<eos>"}),
    "assistant_end": ("chat", {"assistant_start": "<|assistant|>", "assistant_end": "<eos>"}),
    "pad_seq_to_mult": ("tokens", {"pad_seq_to_mult": 2}),
    "algorithm": ("tokens", {"algorithm": "first_fit_decreasing"}),
    "cost_model": ("tokens", {"cost_model": CostModel.from_dims(ModelDims.parse("1024,8,8,4096,32000"))}),
    "seed": ("tokens", {"seed": 7}),
    "max_seq_length": ("tokens", {"max_seq_length": PACK // 2}),
    "too_long": ("tokens", {"too_long": TooLong.truncate}),
    "bridge_compat": ("tokens", {"bridge_compat": True}),
    "shards": ("tokens", {}),
}


def test_every_identity_option_is_tried() -> None:
    identity = {n for n, (kind, _) in STAGING_OPTIONS.items() if kind == "identity"}
    assert identity - ONE_VALUE_ON_RAY == set(CHANGES)


def _stage(data: Path, out: Path, shards: int = 2, **options: Any) -> tuple[str, bool]:
    """Open the staging directory as a run does (then let go of the output directory): (run id, resumed)."""
    sharded = prepare_sharded(PackOptions.from_flat([data], out, PACK, **{"quiet": True, **options}), shards)
    sharded.release()
    return sharded.job.run_id, sharded.resumed


def _changed(change: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """The options of ``change``, file names made paths (a tokenizer by its key in ``inputs``)."""
    paths = {"tokenizer": lambda v: inputs[v], "chat_template": inputs["root"].joinpath}
    paths["tool_schemas"] = inputs["root"].joinpath
    return {k: paths[k](v) if k in paths else v for k, v in change.items()}


@pytest.mark.parametrize("option", sorted(CHANGES))
def test_a_resume_with_another_value_of_an_identity_option_is_refused(
    option: str, inputs: dict[str, Any], tmp_path: Path
) -> None:
    kind, change = CHANGES[option]
    base = _base(kind, inputs)
    out = tmp_path / "out"
    data = tmp_path / inputs[kind].name
    data.write_bytes(inputs[kind].read_bytes())
    run_id, resumed = _stage(data, out, **base)
    assert not resumed and _stage(data, out, **base) == (run_id, True)  # the same run resumes
    manifest = (out / f".training_{PACK}.staging" / "run.json").read_bytes()
    shards = 3 if option == "shards" else 2
    if change == "rewritten":  # the input edited in place: one more row
        data.write_bytes(data.read_bytes() + data.read_bytes().splitlines(keepends=True)[0])
        changed = base
    else:
        changed = {**base, **_changed(change, inputs)}
    with pytest.raises(UsageError) as refused:
        _stage(data, out, shards, **changed)
    named = "the inputs" if option == "paths" else option
    assert named in str(refused.value) and "overwrite" in str(refused.value), str(refused.value)
    assert (out / f".training_{PACK}.staging" / "run.json").read_bytes() == manifest  # left as it was
    again, resumed = _stage(data, out, shards, overwrite=True, **changed)
    assert not resumed and again != run_id  # --overwrite starts over


def test_options_that_change_how_a_run_goes_resume_and_another_split_stages_apart(
    inputs: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run_id, _ = _stage(inputs["tokens"], out)
    assert _stage(inputs["tokens"], out, workers=1, quiet=False) == (run_id, True)
    other, resumed = _stage(inputs["tokens"], out, split="validation")
    assert not resumed and other != run_id
    assert sorted(p.name for p in out.iterdir() if p.name.endswith(".staging")) == [
        f".training_{PACK}.staging",
        f".validation_{PACK}.staging",
    ]
