"""bridgepack diff on real Parquet / legacy .npy / .npz files: assignment-only, mask kinds, missing
samples."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _support.diff_samples import EOS, chat, packs_of, write_packed
from bridgepack.cli import main
from bridgepack.data.packed import not_as_recorded
from bridgepack.data.packset import write_metadata_entry
from bridgepack.diff import diff_paths

SAMPLES = [chat([10 + i, 11, 12], [20 + i] * (1 + i % 4)) for i in range(12)]
BRIDGE_META = {
    "dataset_max_seqlen": 6,
    "max_samples_per_bin": 3,
    "packing_factor": 3.0,
    "packing_efficiency": 50.0,
    "pack_size": 32,
    "min_packed_seqlen": 10,
}


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["diff", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_identical_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_packed(tmp_path / "a" / "training_32.idx.parquet", packs_of(SAMPLES, [3, 3, 3, 3]))
    b = write_packed(tmp_path / "b" / "training_32.idx.parquet", packs_of(SAMPLES, [3, 3, 3, 3]), 2)
    code, report = run_json(capsys, str(a), str(b))
    assert code == 0 and report["identical"] and report["verdict"] == "identical"
    assert report["first_differing_pack"] is None


def test_same_samples_packed_differently(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_packed(tmp_path / "a.parquet", packs_of(SAMPLES, [3, 3, 3, 3]))
    b = write_packed(tmp_path / "b.parquet", packs_of(SAMPLES[::-1], [2, 4, 1, 5]))
    code, report = run_json(capsys, str(a), str(b))
    assert code == 1
    assert report["verdict"].startswith("same sequences and masks, packed differently")
    seqs = report["sequences"]
    assert (seqs["identical"], seqs["only_in_a"], seqs["only_in_b"], seqs["same_tokens_other_mask"]) == (
        12,
        0,
        0,
        0,
    )
    assert report["a"]["fingerprint"]["content"] == report["b"]["fingerprint"]["content"]
    first = report["first_differing_pack"]
    assert first["index"] == 0 and first["field"] == "input_ids"
    assert first["a"]["seq_start_id"] == [0, 5, 11] and first["b"]["seq_start_id"] == [0, 8]


def test_same_packs_other_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    packs = packs_of(SAMPLES, [3, 3, 3, 3])
    a = write_packed(tmp_path / "a.parquet", packs)
    b = write_packed(tmp_path / "b.parquet", [packs[1], packs[0], *packs[2:]])
    code, report = run_json(capsys, str(a), str(b))
    assert code == 1 and report["verdict"] == "same packs in another order"
    assert report["boundaries"]["differing_packs"] == 2


def test_eos_mask_change_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two-turn sequences with an EOS inside: B supervises the label after the inner EOS, A does not."""
    turns = [([10 + i, 20, EOS, 30, 31 + i, EOS], [0, 1, 0, 1, 1, 0]) for i in range(6)]
    eos_on = [(t, [0, 1, 1, 1, 1, 0]) for t, _ in turns]
    a = write_packed(tmp_path / "a.parquet", packs_of(turns, [2, 2, 2]))
    b = write_packed(tmp_path / "b.parquet", packs_of(eos_on[::-1], [3, 3]))
    code, report = run_json(capsys, str(a), str(b))
    assert code == 1 and report["verdict"] == "same sequences, different loss masks"
    assert report["eos_id"] == EOS  # inferred from the last tokens
    masks = report["loss_mask"]
    assert masks["sequences"] == 6
    assert masks["kinds"] == {
        "eos_input": {
            "label": "EOS positions (input token is EOS)",
            "supervised_in_b_not_a": 6,
            "supervised_in_a_not_b": 0,
            "sequences": 6,
        }
    }
    assert masks["example"]["first_position"] == 2
    main(["diff", str(a), str(b)])
    assert "EOS positions (input token is EOS) supervised in B, not in A: 6 tokens" in capsys.readouterr().out


def test_missing_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_packed(tmp_path / "a.parquet", packs_of(SAMPLES, [3, 3, 3, 3]))
    b = write_packed(tmp_path / "b.parquet", packs_of(SAMPLES[:5] + SAMPLES[6:], [3, 3, 3, 2]))
    code, report = run_json(capsys, str(a), str(b))
    assert code == 1 and report["verdict"] == "different sequences"
    seqs = report["sequences"]
    assert (seqs["only_in_a"], seqs["only_in_b"], seqs["identical"]) == (1, 0, 11)
    example = seqs["only_in_a_examples"][0]
    assert example["tokens"] == list(SAMPLES[5][0]) and (example["pack"], example["sequence"]) == (1, 2)


def test_duplicate_dropped_counts_as_multiset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    twice = [*SAMPLES, SAMPLES[0]]
    a = write_packed(tmp_path / "a.parquet", packs_of(twice, [13]))
    b = write_packed(tmp_path / "b.parquet", packs_of(SAMPLES, [12]))
    _, report = run_json(capsys, str(a), str(b))
    assert report["sequences"]["only_in_a"] == 1


def test_parquet_vs_legacy_npy_by_content(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    packs = packs_of(SAMPLES, [4, 4, 4])
    a = write_packed(tmp_path / "a.parquet", packs)
    rows = []
    for pack in packs:
        ids = [t for s in pack for t in s[0]]
        mask = [m for s in pack for m in s[1]]
        starts = list(np.cumsum([0] + [len(s[0]) for s in pack[:-1]]))
        rows.append({"input_ids": ids, "loss_mask": mask, "seq_start_id": [int(x) for x in starts]})
    legacy = tmp_path / "training_32.npy"
    np.save(legacy, np.array(rows, dtype=object), allow_pickle=True)
    code, report = run_json(capsys, str(a), str(legacy))
    assert code == 0 and report["identical"]


def test_pack_sizes_differ_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_packed(tmp_path / "a" / "training_32.idx.parquet", packs_of(SAMPLES, [3, 3, 3, 3]))
    b = write_packed(tmp_path / "b" / "training_64.idx.parquet", packs_of(SAMPLES, [6, 6]))
    write_metadata_entry(tmp_path / "a" / "32_metadata.jsonl", BRIDGE_META)
    write_metadata_entry(tmp_path / "b" / "64_metadata.jsonl", {**BRIDGE_META, "pack_size": 64})
    code, report = run_json(capsys, str(a), str(b))
    assert code == 1
    assert report["packs"]["pack_size_differs"]
    assert report["metadata"]["differences"] == {"pack_size": [32, 64]}
    assert (report["packs"]["a"]["count"], report["packs"]["b"]["count"]) == (4, 2)
    runtime = sum(len(t) - 1 for t, _ in SAMPLES)
    assert report["packs"]["a"]["efficiency"] == round(runtime / 4 / 32 * 100, 2)
    assert report["sequences"]["identical"] == 12


def test_many_row_groups_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    samples = [chat(rng.integers(3, 99, 4).tolist(), rng.integers(3, 99, 3).tolist()) for _ in range(600)]
    a = write_packed(tmp_path / "a.parquet", packs_of(samples, [3] * 200), row_group_size=16)
    order = rng.permutation(600)
    b = write_packed(
        tmp_path / "b.parquet", packs_of([samples[i] for i in order], [2] * 300), row_group_size=7
    )
    _, report = run_json(capsys, str(a), str(b))
    assert report["sequences"]["identical"] == 600
    assert report["verdict"].startswith("same sequences and masks")


def test_unreadable_exits_2(tmp_path: Path) -> None:
    a = write_packed(tmp_path / "a.parquet", packs_of(SAMPLES, [12]))
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 nonsense")
    assert main(["diff", str(a), str(bad)]) == 2
    assert main(["diff", str(a), str(tmp_path / "nope.parquet")]) == 2


#: A pickle that calls ``builtins.print`` when loaded, spelled as its opcodes (protocol 0 GLOBAL, then STOP):
#: ``pickle.dumps(print)`` would name whatever ``builtins.print`` is at the time (a Ray driver swaps in its
#: own).
PRINT_PICKLE = b"cbuiltins\nprint\n."


def test_evil_pickle_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    a = write_packed(tmp_path / "a.parquet", packs_of(SAMPLES, [12]))
    evil = tmp_path / "training_32.npy"
    header = b"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
    header += b" " * (63 - len(header) % 64) + b"\n"
    evil.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + PRINT_PICKLE)
    called: list[object] = []
    monkeypatch.setattr("builtins.print", lambda *args, **kwargs: called.append(args))
    assert main(["diff", str(a), str(evil)]) == 1
    err = capsys.readouterr().err
    assert "refused to load 'builtins.print'" in err and str(evil) in err
    assert called == []  # the global was never resolved, let alone called


# --- batch dumps -------------------------------------------------------------------------------------------


def dump(path: Path, **arrays: Any) -> Path:
    np.savez(path, **arrays)
    return path


def test_batch_dumps_key_by_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokens = np.array([[10, 11, 2, 20, 2, 2]])
    silenced = np.array([[1, 1, 0, 1, 0, 0]])
    kept = np.array([[1, 1, 1, 1, 1, 0]])
    cu = np.array([[0, 3, 5, 6]], dtype=np.int32)
    a = dump(
        tmp_path / "a.npz",
        **{
            "batch0.tokens": tokens,
            "batch0.loss_mask": silenced,
            "batch0.cu_seqlens_q": cu,
            "eos_id": np.array(2),
        },
    )
    b = dump(
        tmp_path / "b.npz",
        **{
            "batch0.tokens": tokens,
            "batch0.loss_mask": kept,
            "batch0.cu_seqlens_q": cu[:, :3],
            "batch0.padding_mask": tokens == 2,
        },
    )
    code, report = run_json(capsys, str(a), str(b))
    assert code == 1 and report["kind"] == "batches"
    assert report["only_in_a"] == ["eos_id"] and report["only_in_b"] == ["batch0.padding_mask"]
    assert report["differences"]["batch0.loss_mask"] == {
        "differing_elements": 2,
        "first_index": [0, 2],
        "a_value": 0,
        "b_value": 1,
    }
    assert report["differences"]["batch0.cu_seqlens_q"] == {"shape": [[1, 4], [1, 3]]}
    assert report["loss_mask_kinds"] == {
        "eos_input": {"supervised_in_b_not_a": 2, "supervised_in_a_not_b": 0}
    }
    assert main(["diff", str(a), str(a)]) == 0


def test_batch_dump_with_pickle_is_unreadable(tmp_path: Path) -> None:
    a = dump(tmp_path / "a.npz", x=np.arange(3))
    b = dump(tmp_path / "b.npz", x=np.array([{"evil": 1}], dtype=object))
    assert main(["diff", str(a), str(b)]) == 2


def test_dump_vs_packed_is_usage_error(tmp_path: Path) -> None:
    a = dump(tmp_path / "a.npz", x=np.arange(3))
    b = write_packed(tmp_path / "b.parquet", packs_of(SAMPLES, [12]))
    assert main(["diff", str(a), str(b)]) == 2
    with pytest.raises(Exception, match="batch dump"):
        diff_paths(a, b)


def test_pack_size_from_file_name_when_a_sidecar_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_packed(tmp_path / "a" / "training_32.idx.parquet", packs_of(SAMPLES, [3, 3, 3, 3]))
    b = write_packed(tmp_path / "b" / "training_32.idx.parquet", packs_of(SAMPLES, [3, 3, 3, 3]))
    write_metadata_entry(tmp_path / "a" / "32_metadata.jsonl", BRIDGE_META)
    code, report = run_json(capsys, str(a), str(b))
    assert code == 1 and not report["metadata"]["compared"]
    assert report["verdict"] == "same packs; metadata differs"
    assert report["metadata"]["differences"] == {"(metadata entry)": ["present", None]}
    assert report["packs"]["b"]["pack_size"] == 32 and not report["packs"]["pack_size_differs"]


seq_strategy = st.lists(st.integers(3, 9), min_size=1, max_size=6).map(
    lambda body: ([*body, EOS], [*[1] * len(body), 0])
)


@settings(max_examples=25)
@given(st.lists(seq_strategy, min_size=2, max_size=14), st.randoms(use_true_random=False), st.data())
def test_any_two_packings_of_one_multiset_match(samples: list, rnd: Any, data: st.DataObject) -> None:
    """Any shuffle and any cut into packs keep the multiset; dropping one sample leaves exactly it in A."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shuffled = samples.copy()
        rnd.shuffle(shuffled)
        cuts = sorted(set(data.draw(st.lists(st.integers(1, len(samples) - 1), max_size=4))))
        sizes = [b - a for a, b in zip([0, *cuts], [*cuts, len(samples)], strict=True)]
        a = write_packed(root / "a.parquet", packs_of(samples, [len(samples)]))
        b = write_packed(root / "b.parquet", packs_of(shuffled, sizes))
        report = diff_paths(a, b, eos_id=EOS)
        assert report["sequences"]["identical"] == len(samples)
        assert report["a"]["fingerprint"]["content"] == report["b"]["fingerprint"]["content"]
        dropped = data.draw(st.integers(0, len(samples) - 1))
        rest = shuffled[:dropped] + shuffled[dropped + 1 :]
        c = write_packed(root / "c.parquet", packs_of(rest, [len(rest)]))
        report = diff_paths(a, c, eos_id=EOS)
        assert (report["sequences"]["only_in_a"], report["sequences"]["only_in_b"]) == (1, 0)
        assert report["sequences"]["only_in_a_examples"][0]["tokens"] == list(shuffled[dropped][0])


@pytest.mark.parametrize("algorithm", [[], ["--bridge-compat"]])
def test_two_runs_of_one_packing_are_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], algorithm: list[str]
) -> None:
    """A reproducibility check: the same data packed twice into two folders is ``identical`` (exit 0).
    The run ids (and other keys that describe the run) differ and are listed as not compared."""
    for name in ("a", "b"):
        argv = ["pack", "-q", "--example", "--out", str(tmp_path / name), "--pack-size", "512", *algorithm]
        assert main(argv) == 0
    capsys.readouterr()
    files = [str(tmp_path / name / "training_512.idx.parquet") for name in ("a", "b")]
    assert main(["diff", *files, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "identical" and report["metadata"]["differences"] == {}
    assert {"bridgepack.run_id", "bridgepack.version", "bridgepack.inputs"} <= set(
        report["metadata"]["not_compared"]
    )
    ids = [
        json.loads((tmp_path / n / "512_metadata.jsonl").read_text())[0]["bridgepack"]["run_id"] for n in "ab"
    ]
    assert ids[0] != ids[1]  # the runs really differ in what is left out
    assert main(["diff", *files]) == 0
    assert "not compared: what describes the run" in capsys.readouterr().out


def test_an_edited_packing_is_reported_and_the_side_unlike_its_record_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """B packs A's samples as A does, then its masks are edited (the EOS inside each sequence supervised):
    the diff reports what changed, counted by kind as for any two packings, and says B no longer matches
    its record; then exits 1 with the line every reader prints for such a set. Before, it printed that line
    and nothing else."""
    rows = [{"input_ids": [10 + i, 20, EOS, 30, 31, EOS], "loss_mask": [0, 1, 0, 0, 1, 0]} for i in range(40)]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for side in ("a", "b"):
        args = ["pack", "-q", str(source), "-o", str(tmp_path / side), "-n", "32", "--eos-id", str(EOS)]
        assert main(args) == 0
    capsys.readouterr()  # the packs' reports
    a, b = (str(tmp_path / side / "training_32.idx.parquet") for side in ("a", "b"))
    table = pq.read_table(b)
    columns = (table.column(c).to_pylist() for c in ("input_ids", "loss_mask", "seq_start_id"))
    masks, flipped = [], 0
    for ids, mask, starts in zip(*columns, strict=True):
        ends = {s - 1 for s in starts[1:]} | {len(ids) - 1}  # each sequence's last position
        edited = [1 if ids[p] == EOS and p not in ends else m for p, m in enumerate(mask)]
        flipped += sum(e != m for e, m in zip(edited, mask, strict=True))
        masks.append(edited)
    column = pa.array(masks, type=table.schema.field("loss_mask").type)
    pq.write_table(table.set_column(1, "loss_mask", column), b)  # the schema's run id kept
    assert flipped == 40
    code = main(["diff", a, b, "--format", "json"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert code == 1 and report["verdict"] == "same sequences, different loss masks"
    assert report["loss_mask"]["kinds"]["eos_input"]["supervised_in_b_not_a"] == flipped
    unlike = report["unlike_record"]
    assert unlike["a"] is None
    assert unlike["b"] == {
        "metadata": str(tmp_path / "b" / "32_metadata.jsonl"),
        "entry": 0,
        "differs": "content fingerprint differs: a token or a mask value changed",
    }
    expected = not_as_recorded(b, unlike["b"]["metadata"], 0, unlike["b"]["differs"])
    assert captured.err.strip().splitlines()[-1] == f"error: {expected}"
    assert main(["diff", a, b]) == 1
    out = capsys.readouterr().out
    assert f"EOS positions (input token is EOS) supervised in B, not in A: {flipped} tokens" in out
    assert f"B no longer matches its record in {unlike['b']['metadata']} entry 0" in out
