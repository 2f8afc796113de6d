"""PackOptions: frozen groups built from flat keywords; errors name the library's parameters, and the CLI the
same errors with its flags."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import pytest

import bridgepack
from _support.pack_inputs import run, write_jsonl
from bridgepack.cli._common import flag
from bridgepack.data.pipeline import InputOptions, LengthPolicy, PackOptions, PackSize, RunSettings, TooLong
from bridgepack.data.samples.text import TextOptions
from bridgepack.errors import DataError, UsageError, param
from bridgepack.packing import CostModel


def test_flat_keywords_land_in_their_groups(tmp_path: Path) -> None:
    flat = PackOptions.from_flat(
        [tmp_path / "a.jsonl"],
        tmp_path / "out",
        64,
        max_seq_length=32,
        too_long=TooLong.split,
        pad_seq_to_mult=4,
        seed=7,
        tokenizer=tmp_path / "tok",
        prompt_field="q",
        completion_field="a",
        separator="\n",
        workers=2,
        layout="hf",
        bridge_compat=False,
    )
    grouped = PackOptions(
        InputOptions(
            (tmp_path / "a.jsonl",),
            tokenizer=tmp_path / "tok",
            text=TextOptions(prompt_field="q", completion_field="a", separator="\n"),
        ),
        PackSize(64, pad_seq_to_mult=4, seed=7),
        RunSettings(tmp_path / "out", workers=2, layout="hf"),
        LengthPolicy(32, TooLong.split),
    )
    assert flat == grouped
    assert (flat.max_seq_length, flat.too_long, flat.packing_seed, flat.algorithm) == (
        32,
        TooLong.split,
        7,
        "balanced",
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        flat.size.pack_size = 8  # type: ignore[misc]
    for name in ("paths", "text", "pack_sise"):
        with pytest.raises(TypeError, match=f"unexpected option '{name}'"):
            PackOptions.from_flat([tmp_path / "a.jsonl"], tmp_path / "out", 64, **{name: None})


def test_defaults_follow_the_mode(tmp_path: Path) -> None:
    compat = PackOptions.from_flat([tmp_path / "a"], tmp_path / "o", 64, bridge_compat=True)
    default = PackOptions.from_flat([tmp_path / "a"], tmp_path / "o", 64)
    assert (compat.algorithm, compat.packing_seed) == ("first_fit_shuffle", 5678)
    assert (default.algorithm, default.packing_seed, default.max_seq_length) == ("balanced", 0, 64)


# (library keywords, the same on the command line, the library's message, the CLI's message)
CASES: list[tuple[dict[str, Any], list[str], str, str]] = [
    (
        {"max_seq_length": 9},
        ["--max-seq-length", "9"],
        "max_seq_length 9 is larger than pack_size 8",
        "--max-seq-length 9 is larger than --pack-size 8",
    ),
    (
        {"cost_model": CostModel.default(), "algorithm": "best_fit_decreasing"},
        ["--model", "4096,32,32,11008,32000", "--algorithm", "best_fit_decreasing"],
        "cost_model sets the cost model of the balanced algorithm, not of best_fit_decreasing",
        "--model sets the cost model of the balanced algorithm, not of best_fit_decreasing",
    ),
    (
        {"bridge_compat": True, "too_long": TooLong.split},
        ["--bridge-compat", "--too-long", "split"],
        "too_long cannot be combined with bridge_compat (compat decides long samples)",
        "--too-long cannot be combined with --bridge-compat (compat decides long samples)",
    ),
    (
        {"bridge_compat": True, "layout": "hf"},
        ["--bridge-compat", "--layout", "hf"],
        "bridge_compat builds Bridge's packs; it cannot be combined with layout hf",
        "--bridge-compat builds Bridge's packs; it cannot be combined with --layout hf",
    ),
    (
        {"layout": "flat"},
        ["--layout", "flat"],
        "layout must be one of bridge, padding-free (or hf), got 'flat'",
        "--layout must be one of bridge, padding-free (or hf), got 'flat'",
    ),
    (
        {"prompt_field": "q"},
        ["--prompt-field", "q"],
        "prompt_field and completion_field go together",
        "--prompt-field and --completion-field go together",
    ),
    (
        {"split": "test"},
        ["--split", "test"],
        "split must be one of training, validation, got 'test'",
        "--split must be one of training, validation, got 'test'",
    ),
    # what the CLI used to check alone: the pad multiple's source, the engine and its settings
    (
        {"pad_seq_to_mult": 4, "cp": 2},
        ["--pad-seq-to-mult", "4", "--cp", "2"],
        "give either pad_seq_to_mult or cp/tp/sequence_parallel, not both",
        "give either --pad-seq-to-mult or --cp/--tp/--sequence-parallel, not both",
    ),
    (
        {"cp": 4096, "tp": 64, "sequence_parallel": True},
        ["--cp", "4096", "--tp", "64", "--sequence-parallel"],
        "cp 4096 tp 64 need a pre-padding multiple of 262144, larger than 65536, the largest bridgepack "
        "writes",
        "--cp 4096 --tp 64 need a pre-padding multiple of 262144, larger than 65536, the largest bridgepack "
        "writes",
    ),
    (
        {"cp": 0},
        ["--cp", "0"],
        "cp: expected an integer >= 1 and <= 1048576, found 0",
        "--cp: expected an integer >= 1 and <= 1048576, found 0",
    ),
    (
        {"engine": "spark"},
        ["--engine", "spark"],
        "engine must be one of local, ray, got 'spark'",
        "--engine must be one of local, ray, got 'spark'",
    ),
    (
        {"shards": 2},
        ["--shards", "2"],
        "ray_address and shards go with engine ray",
        "--ray-address and --shards go with --engine ray",
    ),
]


@pytest.mark.parametrize(("keywords", "flags", "library", "cli"), CASES)
def test_errors_name_parameters_in_python_and_flags_on_the_command_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    keywords: dict[str, Any],
    flags: list[str],
    library: str,
    cli: str,
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [{"input_ids": [5, 2]}])
    with pytest.raises(UsageError) as caught:
        bridgepack.pack(source, tmp_path / "out", 8, **keywords)
    assert (str(caught.value), caught.value.exit_code) == (library, 2)
    code, _, err = run([str(source), "--out", str(tmp_path / "out"), "--pack-size", "8", *flags], capsys)
    assert (code, err) == (2, f"error: {cli}\n")
    assert not (tmp_path / "out").exists()


def test_hints_name_the_parameter_to_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [{"input_ids": [5, 2]}])
    out = tmp_path / "out"
    bridgepack.pack(source, out, 8)
    packed = out / "training_8.idx.parquet"
    with pytest.raises(UsageError) as caught:
        bridgepack.pack(source, out, 8)
    assert str(caught.value) == f"{packed}: already exists (pass overwrite to replace it)"
    code, _, err = run([str(source), "--out", str(out), "--pack-size", "8"], capsys)
    assert (code, err) == (2, f"error: {packed}: already exists (pass --overwrite to replace it)\n")
    with pytest.raises(UsageError, match=r"has 1; use another out_dir directory$"):
        bridgepack.pack(source, out, 8, split="validation", seed=1)
    code, _, err = run(
        [str(source), "--out", str(out), "--pack-size", "8", "--split", "validation", "--seed", "1"], capsys
    )
    assert code == 2 and err.endswith("has 1; use another --out directory\n"), err


def test_a_parameter_survives_pickling_across_processes() -> None:
    """Workers raise in other processes: the error comes back pickled and must still render as a flag."""
    error = DataError(f"rows.jsonl:3: pass {param('eos_id')} or {param('tokenizer')}")
    back = pickle.loads(pickle.dumps(error))
    assert str(back) == "rows.jsonl:3: pass eos_id or tokenizer"
    assert back.render(flag) == "rows.jsonl:3: pass --eos-id or --tokenizer"
    assert (flag("cost_model"), flag("out_dir"), flag("pad_seq_to_mult")) == (
        "--model",
        "--out",
        "--pad-seq-to-mult",
    )
