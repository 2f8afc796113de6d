"""A tokenizer directory bridgepack cannot prove real is refused where it is loaded, before anything is
written
(issue #29 item 1): no vocabulary, a vocabulary far smaller than the ids its files declare, added tokens
beyond it. The variants are made from the real Qwen3 and Llama 3.2 tokenizer directories."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from _support.pack_inputs import write_jsonl
from _support.tokenizers import TOKENIZER_WHEELS, llama32_tokenizer_dir, qwen3_tokenizer_dir
from bridgepack.cli import main
from bridgepack.data.samples.text import load_tokenizer
from bridgepack.doctor import DoctorOptions, check, load_config
from bridgepack.errors import InputError

pytestmark = pytest.mark.network
pytest.importorskip("transformers")

REAL = {"qwen3": qwen3_tokenizer_dir, "llama32": llama32_tokenizer_dir}
PROBE = "hello world <|im_end|> 1234 naïve café <|eot_id|>"
CHAT = [{"messages": [{"role": "user", "content": "hello world"}, {"role": "assistant", "content": "good"}]}]


def _copy(source: Path, out: Path, files: tuple[str, ...]) -> Path:
    out.mkdir(parents=True)
    for name in files:
        shutil.copy(source / name, out / name)
    return out


def _encoding(directory: Path) -> tuple[list[int], dict[int, str]]:
    tok = load_tokenizer(directory)
    added = {i: str(token) for i, token in tok.added_tokens_decoder.items()}
    return tok.encode(PROBE, add_special_tokens=False), added


@pytest.mark.parametrize("name", sorted(REAL))
def test_every_subset_of_a_real_directory_is_refused_or_the_same_tokenizer(name: str, tmp_path: Path) -> None:
    """Each subset of the tokenizer's files: refused with one line naming the directory, or a tokenizer
    that encodes like the whole directory (never a different one, silently)."""
    source = REAL[name]()
    files = TOKENIZER_WHEELS[name][3]
    want = _encoding(source)
    refused, same = [], []
    for k in range(1, len(files)):
        for subset in itertools.combinations(files, k):
            directory = _copy(source, tmp_path / "-".join(subset), subset)
            try:
                got = _encoding(directory)
            except InputError as exc:
                message = str(exc)
                assert message.startswith(f"{directory}: ") and "\n" not in message, message
                refused.append(subset)
                continue
            assert got == want, subset
            same.append(subset)
    assert ("tokenizer_config.json",) in refused  # the case: transformers built 26 tokens from it
    assert any("tokenizer.json" in subset for subset in same)


def _truncated_vocabulary(source: Path, out: Path, keep: int) -> Path:
    """The real tokenizer.json with only the first ``keep`` vocabulary entries (and the merges they make)."""
    data = json.loads((source / "tokenizer.json").read_text())
    model = data["model"]
    model["vocab"] = {piece: i for piece, i in model["vocab"].items() if i < keep}
    merges = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
    model["merges"] = [m for m in merges if m[0] in model["vocab"] and m[1] in model["vocab"]]
    model["merges"] = [m for m in model["merges"] if "".join(m) in model["vocab"]]
    out.mkdir()
    (out / "tokenizer.json").write_text(json.dumps(data))
    shutil.copy(source / "tokenizer_config.json", out)
    return out


def _added_beyond(source: Path, out: Path, file: str) -> Path:
    """The whole real directory, with one more added token declared in ``file`` far past its vocabulary."""
    shutil.copytree(source, out)
    data = json.loads((out / file).read_text())
    token = {"content": "<|beyond|>", "lstrip": False, "normalized": False, "rstrip": False}
    token.update(single_word=False, special=True)
    if file == "tokenizer_config.json":
        data["added_tokens_decoder"]["300000"] = token
    else:
        data["added_tokens"].append({"id": 300000, **token})
    (out / file).write_text(json.dumps(data))
    return out


def _other_vocabulary(source: Path, out: Path) -> Path:
    """This tokenizer's config beside the other real tokenizer's tokenizer.json."""
    other = REAL["llama32" if source == REAL["qwen3"]() else "qwen3"]()
    out.mkdir()
    shutil.copy(source / "tokenizer_config.json", out)
    shutil.copy(other / "tokenizer.json", out)
    return out


BROKEN: dict[str, Callable[[Path, Path], Path]] = {
    "vocab-256": lambda s, o: _truncated_vocabulary(s, o, 256),
    "vocab-5000": lambda s, o: _truncated_vocabulary(s, o, 5000),
    "vocab-half": lambda s, o: _truncated_vocabulary(s, o, 64000),
    "added-beyond-config": lambda s, o: _added_beyond(s, o, "tokenizer_config.json"),
    "added-beyond-json": lambda s, o: _added_beyond(s, o, "tokenizer.json"),
    "other-vocabulary": _other_vocabulary,
}


#: Each damage on both real directories; Llama 3.2's truncated vocabularies (refused as Qwen3's are) only with
#: --deep.
VOCABULARY_CASES = [
    pytest.param(name, variant, marks=pytest.mark.deep)
    if name == "llama32" and variant.startswith("vocab-")
    else (name, variant)
    for name in sorted(REAL)
    for variant in sorted(BROKEN)
]


@pytest.mark.parametrize(("name", "variant"), VOCABULARY_CASES)
def test_vocabulary_smaller_than_the_declared_ids_is_refused(name: str, variant: str, tmp_path: Path) -> None:
    directory = BROKEN[variant](REAL[name](), tmp_path / "tok")
    with pytest.raises(InputError) as refused:
        load_tokenizer(directory)
    message = str(refused.value)
    assert message.startswith(f"{directory}: ") and "\n" not in message
    assert " id " in message and ("far smaller" in message or "not the one" in message)


def _model_vocabulary(source: Path, out: Path, model: dict[str, object] | None) -> Path:
    """The real tokenizer.json with its model's vocabulary replaced (its added tokens kept)."""
    data = json.loads((source / "tokenizer.json").read_text())
    data["model"] = model if model is not None else {**data["model"], "vocab": {}, "merges": []}
    out.mkdir()
    (out / "tokenizer.json").write_text(json.dumps(data))
    shutil.copy(source / "tokenizer_config.json", out)
    return out


NO_VOCABULARY: dict[str, Callable[[Path, Path], Path]] = {
    "config-only": lambda s, o: _copy(s, o, ("tokenizer_config.json",)),
    "empty-model": lambda s, o: _model_vocabulary(s, o, None),
    "unknown-only": lambda s, o: _model_vocabulary(
        s, o, {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}
    ),
}


@pytest.mark.parametrize("variant", sorted(NO_VOCABULARY))
@pytest.mark.parametrize("name", sorted(REAL))
def test_no_vocabulary_is_refused(name: str, variant: str, tmp_path: Path) -> None:
    """A directory whose model holds no token but the added ones and its unknown token: refused as having
    no vocabulary, or not loadable at all -- never a tokenizer that encodes text as nothing."""
    directory = NO_VOCABULARY[variant](REAL[name](), tmp_path / "tok")
    with pytest.raises(InputError) as refused:
        load_tokenizer(directory)
    message = str(refused.value)
    assert message.startswith(f"{directory}: ") and "\n" not in message
    assert "no vocabulary" in message or "cannot load a tokenizer" in message or " id " in message


def _config_only(tmp_path: Path) -> Path:
    return _copy(qwen3_tokenizer_dir(), tmp_path / "tok", ("tokenizer_config.json",))


def test_pack_refuses_a_config_without_vocabulary_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's command: a directory holding only Qwen3's tokenizer_config.json."""
    tok = _config_only(tmp_path)
    rows = write_jsonl(tmp_path / "c.jsonl", CHAT)
    out = tmp_path / "o"
    code = main(["pack", "--quiet", str(rows), "--tokenizer", str(tok), "--out", str(out), "--pack-size=512"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and not out.exists()
    assert err.count("\n") == 0 and err == (
        f"error: {tok}: no vocabulary (it holds only tokenizer_config.json): transformers would build a "
        "26-token tokenizer that has no token for any word; a tokenizer directory needs tokenizer.json or "
        "the vocabulary files of its class (e.g. vocab.json and merges.txt)"
    )


def test_plan_inspect_and_doctor_never_use_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tok = _config_only(tmp_path)
    rows = write_jsonl(tmp_path / "c.jsonl", CHAT)
    packed = tmp_path / "packed"
    good = str(qwen3_tokenizer_dir())
    args = ["pack", "--quiet", str(rows), "--tokenizer", good, "--out", str(packed), "--pack-size=64"]
    assert main(args) == 0
    capsys.readouterr()
    for args in (
        ["plan", "--quiet", str(rows), "--tokenizer", str(tok), "--pack-sizes", "64"],
        ["inspect", str(packed), "--tokenizer", str(tok)],
        ["inspect", str(packed), "--tokenizer", str(tok), "--decode", "1"],
    ):
        code = main(args)
        err = capsys.readouterr().err.strip()
        assert code == 2, args
        assert err.startswith(f"error: {tok}: no vocabulary") and "\n" not in err, args
    # doctor compares the EOS the packs record (151645) with the config's tokenizer's: not with this one's
    # (transformers renumbered <|im_end|> to 2 there, a false mismatch), while the real one still agrees
    for directory, found in ((tok, set()), (good, set())):
        overrides = ["dataset.seq_length=64", "model.seq_length=64", "train.micro_batch_size=1"]
        overrides += ["dataset.enable_offline_packing=true", f"tokenizer.tokenizer_model={directory}"]
        overrides.append("dataset.offline_packing_specs.packed_sequence_size=64")
        report = check(load_config(overrides=overrides), DoctorOptions(packed=str(packed)))
        assert {f.id for f in report.findings} & {"SP044"} == found
    bad_eos = tmp_path / "bad-eos"
    args = ["pack", "--quiet", str(rows), "--tokenizer", good, "--out", str(bad_eos), "--pack-size=64"]
    assert main([*args, "--eos-id", "2"]) == 0
    overrides[-2] = f"tokenizer.tokenizer_model={good}"
    assert "SP044" in {
        f.id for f in check(load_config(overrides=overrides), DoctorOptions(packed=str(bad_eos))).findings
    }
