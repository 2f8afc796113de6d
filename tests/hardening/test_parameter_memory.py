"""Memory sized by the data, never by a parameter: a huge pack size, ``seq_length`` or pad multiple with two
short rows costs what two short rows cost; where a parameter does size what is written (the pad multiple,
the line length), its limit is stated, checked before anything is read, and exact.

The CLI cases run in a child process under an address-space limit: on the code before the fix, a pack
size of 2^31 - 1 allocated 16 GB in the counting sort (a ``MemoryError`` traceback under the limit).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _support.pack_inputs import run, write_jsonl
from bridgepack.data.samples import _readers, iter_chunks
from bridgepack.errors import InputError
from bridgepack.packing import ALGORITHMS, MAX_PAD_MULTIPLE, pack_lengths

#: Runs argv[1:] and prints its peak resident set in KiB (ru_maxrss of this process's only child).
_PEAK_OF_CHILD = (
    "import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)"
)

#: Address space a child may map: far above what two rows need (~1 GiB with numba, pyarrow and
#: transformers imported), far below what a buffer sized by 2^31 - 1 takes.
CHILD_ADDRESS_SPACE = 3 << 30
LARGEST_PACK = 2**31 - 1
ROWS = [{"input_ids": [5, 6, 7, 2]}, {"input_ids": [8, 9, 2]}]


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE))


def _bridgepack(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridgepack", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        preexec_fn=_limited,
        timeout=300,
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_pack_lengths_with_an_astronomical_pack_size_is_sized_by_the_lengths(algorithm: str) -> None:
    lengths = [3, 9, 2, 7]
    plan = pack_lengths(lengths, 10**15, algorithm=algorithm)
    assert plan.num_packs == 1
    assert sorted(plan.pack(0).tolist()) == [0, 1, 2, 3]
    # the same packs as a pack size just large enough (same order: only the capacity slots differ)
    assert plan.to_lists() == pack_lengths(lengths, sum(lengths), algorithm=algorithm).to_lists()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_pack_with_the_largest_pack_size_stays_small(tmp_path: Path, algorithm: str) -> None:
    write_jsonl(tmp_path / "a.jsonl", ROWS)
    result = _bridgepack(
        ["pack", "a.jsonl", "--out", "o", "--pack-size", str(LARGEST_PACK), "--algorithm", algorithm, "-q"],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    rows = pq.read_table(tmp_path / "o" / f"training_{LARGEST_PACK}.idx.parquet").to_pylist()
    assert len(rows) == 1
    assert sorted(rows[0]["seq_start_id"]) == [0, 3] or sorted(rows[0]["seq_start_id"]) == [0, 4]


def test_plan_with_the_largest_pack_size_stays_small(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", ROWS)
    args = ["plan", "a.jsonl", "--pack-sizes", f"4096,{LARGEST_PACK}", "--token-slots", str(LARGEST_PACK)]
    result = _bridgepack([*args, "--format", "json"], tmp_path)
    assert result.returncode == 0, result.stderr
    sizes = [c["pack_size"] for c in json.loads(result.stdout)["candidates"]]
    assert sizes == [4096, LARGEST_PACK]


@pytest.mark.parametrize("strategy", ["bfd", "bfd_split", "wrapped"])
def test_pack_dataset_with_an_astronomical_seq_length(strategy: str) -> None:
    from datasets import Dataset

    from bridgepack.trl import pack_dataset

    ds = Dataset.from_dict({"input_ids": [[1, 2, 3, 4, 5], [6, 7], [8, 9, 10], [11]]})
    packed = pack_dataset(ds, seq_length=10**15, strategy=strategy)
    assert packed.num_rows == 1
    assert sorted(packed[0]["input_ids"]) == list(range(1, 12))


def test_pad_multiple_over_the_limit_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_jsonl(tmp_path / "a.jsonl", ROWS)
    pack = 4 * MAX_PAD_MULTIPLE  # room for both rows at the limit
    base = [str(tmp_path / "a.jsonl"), "--pack-size", str(pack), "--out", str(tmp_path / "o")]
    code, _, err = run([*base, "--pad-seq-to-mult", str(MAX_PAD_MULTIPLE + 1)], capsys)
    assert code == 2
    assert err.strip().endswith(
        f"--pad-seq-to-mult {MAX_PAD_MULTIPLE + 1} is larger than {MAX_PAD_MULTIPLE}, "
        "the largest pre-padding multiple bridgepack writes (2 x CP x TP of up to 32768 GPUs)"
    )
    assert not (tmp_path / "o").exists()
    code, _, err = run([*base, "--cp", str(MAX_PAD_MULTIPLE)], capsys)
    assert code == 2 and f"--cp {MAX_PAD_MULTIPLE} --tp 1 need a pre-padding multiple" in err
    assert not (tmp_path / "o").exists()
    # at the limit: each sample padded to exactly one multiple
    code, _, err = run([*base, "--pad-seq-to-mult", str(MAX_PAD_MULTIPLE)], capsys)
    assert code == 0, err
    (row,) = pq.read_table(tmp_path / "o" / f"training_{pack}.idx.parquet").to_pylist()
    assert len(row["input_ids"]) == 2 * (MAX_PAD_MULTIPLE + 1)


def _line_of(size: int) -> bytes:
    """A pre-tokenized sample whose JSON text is exactly ``size`` bytes (no newline)."""
    body = b'{"input_ids": [' + b"5, " * max(0, (size - 20) // 3) + b"2]}"
    assert len(body) <= size
    return body[:-1] + b" " * (size - len(body)) + b"}"


@pytest.mark.parametrize("block", [7, 16, 64, 200])
@pytest.mark.parametrize("newline", [True, False])
def test_line_limit_is_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int, newline: bool
) -> None:
    """A small limit, read with blocks smaller and larger than it: a line of the limit's bytes (its newline
    not counted) is read, one byte more is refused, whether or not it ends the file without a newline."""
    monkeypatch.setattr(_readers, "MAX_LINE_BYTES", 100)
    monkeypatch.setattr(_readers, "_READ_BLOCK", block)
    first = b'{"input_ids": [5, 2]}\n'
    end = b"\n" if newline else b""
    path = tmp_path / "in.jsonl"
    path.write_bytes(first + _line_of(100) + end)
    chunks = list(iter_chunks([path], chunk_rows=4))
    assert [loc for chunk in chunks for loc in chunk.locs.tolist()] == [1, 2]
    assert chunks[-1].lines is not None and chunks[-1].lines[-1].rstrip(b"\n") == _line_of(100)
    path.write_bytes(first + _line_of(101) + end)
    with pytest.raises(InputError, match=r"in\.jsonl:2: line longer than 100 bytes$"):
        list(iter_chunks([path], chunk_rows=4))


def test_the_real_line_limit_is_enforced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped constant itself, end to end through ``pack``: 16 MiB read, 16 MiB + 1 refused."""
    limit = _readers.MAX_LINE_BYTES
    assert limit == 16 << 20  # the limit docs/failure-behaviour.md and SECURITY.md state
    tokens = (limit - 20) // 3 + 1
    path = tmp_path / "long.jsonl"
    path.write_bytes(_line_of(limit) + b"\n")
    code, _, err = run([str(path), "--out", str(tmp_path / "o"), "--pack-size", str(tokens)], capsys)
    assert code == 0, err
    path.write_bytes(_line_of(limit + 1) + b"\n")
    code, _, err = run([str(path), "--out", str(tmp_path / "p"), "--pack-size", str(tokens)], capsys)
    assert code == 2
    assert err.strip() == f"error: {path}:1: line longer than {limit} bytes"
    assert not (tmp_path / "p").exists()


@pytest.mark.deep  # ~20 s of one core; the limit itself: test_the_real_line_limit_is_enforced, by default
@pytest.mark.network
def test_a_chat_line_at_the_limit_stays_under_4_gb_with_a_real_tokenizer(tmp_path: Path) -> None:
    """The limit is sized by what one line costs: Qwen3's tokenizer on a chat line of the limit's bytes."""
    from _support.tokenizers import qwen3_tokenizer_dir

    rng = np.random.default_rng(0)
    words = np.array(["packing", "the", "sequence", "of", "tokens", "gradient", "loss", "a", "bridge"])
    text = " ".join(rng.choice(words, size=_readers.MAX_LINE_BYTES // 6).tolist())
    row = {"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}]}
    room = _readers.MAX_LINE_BYTES - len(json.dumps(row))
    row["messages"][0]["content"] = text[: room // 2]
    row["messages"][1]["content"] = text[: room - room // 2]
    line = json.dumps(row).encode()
    assert len(line) == _readers.MAX_LINE_BYTES
    (tmp_path / "c.jsonl").write_bytes(line + b"\n")
    tok = str(qwen3_tokenizer_dir())
    args = ["pack", "c.jsonl", "--tokenizer", tok, "--out", "o", "--pack-size", str(LARGEST_PACK)]
    # The peak of this run alone: the test process's own RUSAGE_CHILDREN is the largest of every child it
    # has had (a docs page, a peer), so a parent that runs only this one reports it.
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _PEAK_OF_CHILD,
            sys.executable,
            "-m",
            "bridgepack",
            *args,
            "--workers",
            "1",
            "-q",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    peak_bytes = int(result.stdout.splitlines()[-1]) * 1024
    assert 5e8 < peak_bytes < 4e9  # the lower bound: the measure is of the run (its tokenizer alone is more)


def _text_table(layout: str, texts: list[str]) -> pa.Table:
    """Rows of the text inputs bridgepack packs, one per text, in ``layout``'s Arrow shape."""
    if layout == "prompt-completion":
        return pa.table({"prompt": ["p"] * len(texts), "completion": [t[1:] for t in texts]})
    if layout == "large strings":
        return pa.table({"prompt": pa.array(["p"] * len(texts), pa.large_string()),
                         "completion": pa.array([t[1:] for t in texts], pa.large_string())})  # fmt: skip
    if layout == "dictionary":
        return pa.table({"prompt": pa.array(["p"] * len(texts)).dictionary_encode(),
                         "completion": pa.array([t[1:] for t in texts]).dictionary_encode()})  # fmt: skip
    messages = [
        [{"role": "user", "content": "u"}, {"role": "assistant", "content": t[1 + 4 + 9 :]}] for t in texts
    ]
    return pa.table({"messages": messages})  # chat: "user" + "u" + "assistant" + content


#: Table shapes of text rows; the field each one's over-long row is named by.
TEXT_LAYOUTS = {"prompt-completion": "completion", "large strings": "completion", "dictionary": "completion",
                "chat": "messages"}  # fmt: skip


@pytest.mark.parametrize("kind", ["parquet", "datasets"])
@pytest.mark.parametrize("layout", sorted(TEXT_LAYOUTS))
def test_a_table_row_gets_the_line_limit_on_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str, kind: str
) -> None:
    """A Parquet or ``datasets`` row of text (a chat's nested contents, prompt and completion) is held to
    the JSONL line limit, exactly: the limit's bytes of text are read, one byte more is refused, naming
    the file, the row and the field, before anything is tokenized (a small limit through the same
    constant; :func:`test_the_real_row_limit_is_enforced` takes the shipped one)."""
    monkeypatch.setattr(_readers, "MAX_LINE_BYTES", 100)
    for size, refused in ((100, False), (101, True)):
        texts = ["x" * 30, "y" * 30, "z" * 30, "w" * size, "v" * 30]  # the long row: 4th, 2nd batch
        table = _text_table(layout, texts)
        assert (
            int(sum(_readers.row_text_bytes(c) for c in table.combine_chunks().to_batches()[0].columns)[3])
            == size
        )
        path = tmp_path / f"{layout}-{size}"
        if kind == "parquet":
            path = path.with_suffix(".parquet")
            pq.write_table(table, path)
        else:
            datasets = pytest.importorskip("datasets")
            datasets.Dataset(table).save_to_disk(str(path))
        if not refused:
            assert [loc for chunk in iter_chunks([path], chunk_rows=3) for loc in chunk.locs.tolist()] == [
                0,
                1,
                2,
                3,
                4,
            ]
            continue
        with pytest.raises(InputError) as caught:
            list(iter_chunks([path], chunk_rows=3))
        assert str(caught.value) == (
            f"{path} row 3: field '{TEXT_LAYOUTS[layout]}': row holds 101 bytes of text, more than 100 "
            "(the limit of a row, as of a JSONL line)"
        )


def test_the_real_row_limit_is_enforced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trained_tokenizers: dict[str, Path]
) -> None:
    """The shipped constant through ``pack``: a chat row of 16 MiB + 1 bytes of text is refused, exit 2,
    one line, before it is tokenized, and nothing is written; 16 MiB of text is read."""
    limit = _readers.MAX_LINE_BYTES
    for size, refused in ((limit, False), (limit + 1, True)):
        table = _text_table("chat", ["a" * size])
        path = tmp_path / f"chat-{size}.parquet"
        pq.write_table(table, path)
        if not refused:
            assert [chunk.locs.tolist() for chunk in iter_chunks([path])] == [[0]]
            continue
        tok = str(next(iter(trained_tokenizers.values())))
        code, _, err = run(
            [str(path), "--tokenizer", tok, "--out", str(tmp_path / "o"), "-n", "4096"], capsys
        )
        assert code == 2
        assert err.strip() == (
            f"error: {path} row 0: field 'messages': row holds {limit + 1} bytes of text, more than {limit} "
            "(the limit of a row, as of a JSONL line)"
        )
        assert not (tmp_path / "o").exists()
