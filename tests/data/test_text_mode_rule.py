"""The text mode (chat vs prompt-completion vs token ids) is decided by one rule for every row: a row that
could be either, or a file that mixes kinds, gets the same answer wherever the row stands (#29).

Sweep: every variant row built from real generated rows (one kind; both kinds; one kind's field null;
token ids beside text) inserted first, in the middle and last into a chat file and into a prompt-completion
file, as JSONL and as Parquet. The outcome -- the exit code and, when it packs, the multiset of packed
sequences -- must not depend on the position; files whose rows are all of the first row's kind pack.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _support.chat_rows import chat_rows
from _support.pack_inputs import write_jsonl
from _support.text_rows import prompt_completion_rows
from bridgepack.cli import main
from bridgepack.demo import build_tokenizer

pytest.importorskip("transformers")

POSITIONS = (0, 2, 4)


def _chat_base() -> list[dict[str, Any]]:
    rows = chat_rows(seed=41, n=30, reasoning=False, tools=False)
    return [{"messages": row["messages"]} for row in rows if "messages" in row][:4]


def _pc_base() -> list[dict[str, Any]]:
    rows = prompt_completion_rows(12, seed=41, long_every=100)
    return [{"input": row["input"], "output": row["output"]} for row in rows if "input" in row][:4]


def _variants() -> dict[str, dict[str, Any]]:
    """Rows of one kind, of both, or with one kind's field null, made from rows the bases do not hold."""
    answer = _chat_base()[0]["messages"][-1]["content"]
    messages = [{"role": "user", "content": "one more"}, {"role": "assistant", "content": answer}]
    prompt, completion = "one more prompt", _pc_base()[-1]["output"]
    sharegpt = [{"from": "human", "value": "one more"}, {"from": "gpt", "value": "an answer"}]
    return {
        "chat": {"messages": messages},
        "conversation": {"conversation": messages},
        "sharegpt": {"conversations": sharegpt, "system": "be brief"},
        "prompt-completion": {"input": prompt, "output": completion},
        "canonical": {"prompt": prompt, "completion": completion},
        "chat+pc": {"messages": messages, "input": prompt, "output": completion},
        "null-chat+pc": {"messages": None, "input": prompt, "output": completion},
        "chat+null-pc": {"messages": messages, "input": None, "output": None},
        "ids+chat": {"input_ids": [5, 6, 2], "messages": messages},
        "ids+pc": {"input_ids": [5, 6, 2], "input": prompt, "output": completion},
    }


#: Variants of the base's own kind: with them the file holds one kind and packs, at every position.
PACKS = {
    "chat": {"chat", "conversation", "sharegpt", "chat+pc", "chat+null-pc"},
    "pc": {"prompt-completion", "canonical", "null-chat+pc"},
}
BASES: dict[str, Callable[[], list[dict[str, Any]]]] = {"chat": _chat_base, "pc": _pc_base}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts = [str(v) for row in _chat_base() + _pc_base() for v in row.values()]
    texts += [str(v) for row in _variants().values() for v in row.values()]
    return build_tokenizer(texts, tmp_path_factory.mktemp("tok") / "toy")


def _write(path: Path, rows: list[dict[str, Any]], table: bool) -> Path:
    if not table:
        return write_jsonl(path.with_suffix(".jsonl"), rows)
    names = sorted({key for row in rows for key in row})
    columns = {name: [row.get(name) for row in rows] for name in names}
    target = path.with_suffix(".parquet")
    pq.write_table(pa.table(columns), target)
    return target


def _outcome(source: Path, tokenizer: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    args = [str(source), "--tokenizer", str(tokenizer), "--out", str(out), "-n", "4096", "--workers", "1"]
    code = main(["pack", "--quiet", *args])
    err = capsys.readouterr().err
    if code != 0:
        assert err.count("\n") == 1, err
        return code
    sequences = []
    for pack in pq.read_table(out / "training_4096.idx.parquet").to_pylist():
        bounds = [*pack["seq_start_id"], len(pack["input_ids"])]
        for a, b in itertools.pairwise(bounds):
            sequences.append((tuple(pack["input_ids"][a:b]), tuple(pack["loss_mask"][a:b])))
    return code, sorted(sequences)


@pytest.mark.parametrize("table", [False, True], ids=["jsonl", "parquet"])
@pytest.mark.parametrize("base", sorted(BASES))
def test_a_row_gets_the_same_answer_wherever_it_stands(
    tmp_path: Path, tokenizer: Path, capsys: pytest.CaptureFixture[str], base: str, table: bool
) -> None:
    rows = BASES[base]()
    answers = {}
    for name, variant in _variants().items():
        if table and name in ("sharegpt", "ids+chat", "ids+pc"):
            continue  # a column of mixed types (a struct list beside ids) is no Parquet a user has
        outcomes = []
        for at in POSITIONS:
            mixed = [*rows[:at], variant, *rows[at:]]
            source = _write(tmp_path / f"{name}-{at}", mixed, table)
            outcomes.append(_outcome(source, tokenizer, tmp_path / f"out-{name}-{at}", capsys))
        assert all(o == outcomes[0] for o in outcomes), (
            name,
            [o if isinstance(o, int) else 0 for o in outcomes],
        )
        answers[name] = outcomes[0]
    packed = {name for name, outcome in answers.items() if not isinstance(outcome, int)}
    assert packed == PACKS[base] & set(answers)
    assert all(answers[name] == 1 for name in set(answers) - packed)  # mixed kinds: invalid data, exit 1
