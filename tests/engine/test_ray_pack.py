"""``bridgepack pack --engine ray`` on a real two-node Ray cluster: the sharded set equals the local pack,
Bridge 0.6.2's reader takes the directory, bridgepack's readers read it as they read one file."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bridgepack
from _support import doc_pages
from _support.pack_inputs import EOS, random_examples, write_jsonl
from _support.sample_files import WRITERS
from bridgepack.cli import main
from bridgepack.data.packset import PARQUET_RUN_ID, ROW_GROUP_SIZE, PackingMetadata
from bridgepack.data.pipeline import PackOptions, overrides_for_result, prepare_sharded, read_slice
from bridgepack.data.samples import INPUT_FORMATS
from bridgepack.errors import UsageError

PACK = 256
#: docs/scale.md's lines but ``ray start`` / ``ray stop``: its data, the CLI and API packs and the inspect.
SCALE_PAGE = doc_pages.pinned_by(__file__)


def sequences(files: list[Path]) -> Counter[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The multiset of (ids, mask) sequences of packed files, read with pyarrow alone."""
    found: Counter[tuple[tuple[int, ...], tuple[int, ...]]] = Counter()
    for file in files:
        for row in pq.read_table(file).to_pylist():
            bounds = [*row["seq_start_id"], len(row["input_ids"])]
            for a, b in itertools.pairwise(bounds):
                found[(tuple(row["input_ids"][a:b]), tuple(row["loss_mask"][a:b]))] += 1
    return found


def input_sha256(files: list[Path]) -> str:
    """The record's documented input hash: SHA-256 over each input's SHA-256, in input order."""
    return hashlib.sha256(b"".join(hashlib.sha256(f.read_bytes()).digest() for f in files)).hexdigest()


def rows(files: list[Path]) -> list[dict[str, Any]]:
    """Every row of packed files, in name order then row order (what Bridge numbers)."""
    return [row for file in files for row in pq.read_table(file).to_pylist()]


def rejects(path: Path) -> list[dict[str, Any]]:
    """The rejects lines in file order, without their run id (one per run)."""
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return [{k: v for k, v in line.items() if k != "run_id"} for line in lines]


def assert_same_pack(result: Any, local: Any) -> None:
    """The ray pack is the local pack: the same rows in the same order, the same metadata values and
    fingerprints (the packs fingerprint is order-dependent), the same rejects in the same order."""
    assert result.num_packs == local.num_packs
    assert_same_files(result.packed_path, result.metadata, result.rejects_path, local)


def assert_same_files(shard_dir: Path, entry: Any, rejects_path: Path, local: Any) -> None:
    assert rows(sorted(shard_dir.glob("*.parquet"))) == rows([local.packed_path])
    assert entry.recorded("fingerprint") == local.metadata.recorded("fingerprint")
    assert entry.bridge_values() == local.metadata.bridge_values()
    assert rejects(rejects_path) == rejects(local.rejects_path)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A file of pre-tokenized rows (some too long for the pack) in each file format of the input-format
    table, in its order: each shard of a run reads another format (JSON Lines, Parquet, Arrow IPC)."""
    root = tmp_path_factory.mktemp("ray-inputs")
    rng = np.random.default_rng(30)
    formats = [f for f in INPUT_FORMATS if f.suffixes]
    files = []
    for i, f in enumerate(formats):
        table = pa.Table.from_pylist(random_examples(rng, 700 if i < 2 else 600, 300))
        files.append(WRITERS[f.name][0](table, root / f"part{i}"))
    return files


@pytest.fixture(scope="module")
def local(inputs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> bridgepack.PackResult:
    return bridgepack.pack(inputs, tmp_path_factory.mktemp("local"), PACK, pad_seq_to_mult=4)


@pytest.fixture(scope="module")
def sharded(ray_cluster: Any, inputs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The inputs packed on the cluster, three shards (one file each)."""
    out = tmp_path_factory.mktemp("sharded") / "out"
    return bridgepack.pack(inputs, out, PACK, pad_seq_to_mult=4, engine="ray", shards=3)


def test_sharded_set_equals_the_local_pack(sharded: Any, inputs: list[Path], local: Any) -> None:
    result = sharded
    out = result.metadata_path.parent
    shard_dir = out / f"training_{PACK}"
    assert result.packed_path == shard_dir
    # a directory of zero-padded shards only; the sidecar and the rejects beside it; no staging left
    names = sorted(os.listdir(shard_dir))
    # three slices read the inputs; the plan's 867 packs are two row groups: two output shards
    assert names == [f"training_{PACK}-{i:05d}.idx.parquet" for i in range(2)]
    assert sorted(os.listdir(out)) == [
        f"{PACK}_metadata.jsonl",
        f"rejects_training_{PACK}.jsonl",
        f"training_{PACK}",
    ]
    files = [shard_dir / n for n in names]
    # one plan over all lengths (spread over the whole range here): exactly the local pack, row for row
    assert_same_pack(result, local)
    # one run id in every file; row groups as the local writer makes them
    run_ids = {pq.read_metadata(f).metadata[PARQUET_RUN_ID].decode() for f in files}
    entries = PackingMetadata.read(result.metadata_path).entries
    assert len(entries) == 1 and run_ids == {entries[0].run_id}
    lines = result.rejects_path.read_bytes().splitlines()
    assert {orjson.loads(x)["run_id"] for x in lines} == run_ids
    assert all(
        pq.ParquetFile(f).metadata.row_group(i).num_rows <= ROW_GROUP_SIZE
        for f in files
        for i in range(pq.ParquetFile(f).metadata.num_row_groups)
    )
    assert result.num_packs >= result.engine["packs_lower_bound"] == -(-result.runtime_tokens // PACK)
    assert result.counts.samples_in == local.counts.samples_in
    # the input hash: each shard hashed its own inputs, the driver combined them as the local pack does
    assert result.record.input_sha256 == local.record.input_sha256 == input_sha256(inputs)
    assert result.counts.rejected == local.counts.rejected > 0
    # the combined entry is what the rows say (inspect recomputes it), and its fingerprint reads back
    overrides = overrides_for_result(result)
    assert any(o.endswith(f"packed_train_data_path={shard_dir}") for o in overrides), overrides
    report = bridgepack.inspect(shard_dir)
    assert report.ok and report.metadata.status == "consistent"
    # the DP imbalance Bridge's sampler would see is one plan's (the same packs in the same order)
    ours = bridgepack.inspect(shard_dir, dp=4, gbs=32).dp_imbalance
    assert ours is not None and ours == bridgepack.inspect(local.packed_path, dp=4, gbs=32).dp_imbalance
    assert main(["fingerprint", str(shard_dir), "--check"]) == 0
    assert main(["doctor", "--packed", str(shard_dir)]) in (0, 1)
    assert main(["diff", str(local.packed_path), str(shard_dir), "--quiet"]) in (0, 1)


def _bridge_sequences(dataset: Any) -> Counter[tuple[tuple[int, ...], tuple[int, ...]]]:
    found: Counter[tuple[tuple[int, ...], tuple[int, ...]]] = Counter()
    for i in range(len(dataset)):
        item = dataset[i]
        bounds = item["seq_boundaries"]
        for a, b in itertools.pairwise(bounds):
            found[(tuple(item["input_ids"][a:b]), tuple(item["loss_mask"][a:b]))] += 1
    return found


@pytest.mark.network
def test_bridge_reads_the_training_directory_beside_a_validation_split(
    sharded: Any, inputs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both splits side by side: Bridge 0.6.2's own reader, given the training directory, yields every
    training sequence once and nothing of the validation split; the shared sidecar serves pad_cu_seqlens."""
    from _support.bridge_batching import bridge_parquet_dataset

    out = tmp_path / "out"
    shutil.copytree(sharded.metadata_path.parent, out)
    # one input file, two shards: each takes every other chunk of it; through the command line
    args = ["pack", "-q", str(inputs[2]), "-o", str(out), "-n", str(PACK), "--pad-seq-to-mult", "4"]
    args += ["--engine", "ray", "--shards", "2", "--split", "validation", "--chunk-rows", "128"]
    assert main([*args, "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    val_dir = out / f"validation_{PACK}"
    assert summary["packed_path"] == str(val_dir) and summary["engine"]["shards"] == 2
    # the overrides train on both directories
    overrides = summary["overrides"]
    assert any(o.endswith(f".packed_val_data_path={val_dir}") for o in overrides), overrides
    assert any(o.endswith(f".packed_train_data_path={out / f'training_{PACK}'}") for o in overrides)
    assert sorted(os.listdir(val_dir)) == [f"validation_{PACK}-00000.idx.parquet"]  # one row group
    assert [e.split for e in PackingMetadata.read(out / f"{PACK}_metadata.jsonl").entries] == [
        "training",
        "validation",
    ]
    assert bridgepack.inspect(val_dir).ok
    # fewer files than shards (each shard converted every other chunk): still exactly the local pack
    alone = bridgepack.pack(inputs[2], tmp_path / "alone", PACK, pad_seq_to_mult=4, chunk_rows=128)
    val_entry = PackingMetadata.read(out / f"{PACK}_metadata.jsonl").entries[1]
    assert_same_files(val_dir, val_entry, out / f"rejects_validation_{PACK}.jsonl", alone)
    assert PackingMetadata.read(out / f"{PACK}_metadata.jsonl").entries[1].recorded("input_sha256") == (
        input_sha256([inputs[2]])  # one input, two shards: the first shard hashed it
    )
    train_dir = out / f"training_{PACK}"
    want = sequences(sorted(train_dir.glob("*.parquet")))
    dataset = bridge_parquet_dataset(
        str(train_dir),
        EOS,
        max_seq_length=PACK,
        pad_seq_to_mult=4,
        pad_to_max_length=True,
        pad_cu_seqlens=True,
        pack_metadata_file_path=str(out / f"{PACK}_metadata.jsonl"),
    )
    assert len(dataset) == sharded.num_packs
    assert _bridge_sequences(dataset) == want
    entries = PackingMetadata.read(out / f"{PACK}_metadata.jsonl").entries
    batch = dataset.collate_fn([dataset[i] for i in range(4)])
    # pad_cu_seqlens: boundary lists as long as the largest max_samples_per_bin of the entries, + 2
    assert batch["cu_seqlens_q"].shape[-1] == max(e.max_samples_per_bin for e in entries) + 2


def test_one_set_per_split_a_file_or_shards_never_both(
    sharded: Any, inputs: list[Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A local pack where the ray engine left this split's shards is refused in one line (nothing touched);
    with --overwrite its one file replaces the directory; a ray pack then refuses that file in turn."""
    out = tmp_path / "out"
    shutil.copytree(sharded.metadata_path.parent, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    args = ["pack", "-q", *map(str, inputs), "-o", str(out), "-n", str(PACK), "--pad-seq-to-mult", "4"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert f"training_{PACK}: already exists" in err and "--overwrite" in err and len(err.splitlines()) == 1
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert main([*args, "--overwrite", "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    single = out / f"training_{PACK}.idx.parquet"
    assert summary["packed_path"] == str(single)
    assert sorted(os.listdir(out)) == [
        f"{PACK}_metadata.jsonl",
        f"rejects_training_{PACK}.jsonl",
        single.name,
    ]
    assert any(o.endswith(f"packed_train_data_path={single}") for o in summary["overrides"])
    assert bridgepack.inspect(out).ok
    with pytest.raises(UsageError, match=f"training_{PACK}.idx.parquet: already exists"):
        bridgepack.pack(inputs, out, PACK, pad_seq_to_mult=4, engine="ray", shards=3)
    assert not (out / f".training_{PACK}.staging").exists()


def test_bridge_compat_with_a_killed_worker_gives_the_local_compat_pack(
    ray_cluster: Any, inputs: list[Path], tmp_path: Path
) -> None:
    """--bridge-compat plans once over all samples, so the ray pack has Bridge's exact rows (those of the
    local compat pack, which the pack tests compare with Bridge 0.6.2); a worker SIGKILLed mid-spool is
    retried by Ray, clears its partial spool, and the output is still exact."""
    from _support.ray_cluster import fault_file

    _, ray_tmp = ray_cluster
    fired = Path(fault_file(ray_tmp))
    fired.unlink()  # armed: the first worker past a chunk spooled is SIGKILLed, once
    options: dict[str, Any] = {"pad_seq_to_mult": 4, "bridge_compat": True}
    result = bridgepack.pack(inputs, tmp_path / "out", PACK, engine="ray", shards=2, **options)
    assert fired.exists()  # a worker did die
    local = bridgepack.pack(inputs, tmp_path / "local", PACK, **options)
    assert result.record.mode == "bridge-compat"
    assert_same_pack(result, local)
    assert bridgepack.inspect(result.packed_path).ok


def test_a_killed_driver_leaves_nothing_readable_and_the_rerun_resumes(
    ray_cluster: Any, sharded: Any, inputs: list[Path], local: Any, tmp_path: Path
) -> None:
    cluster, _ = ray_cluster
    out = tmp_path / "out"
    script = (
        "import sys, bridgepack; bridgepack.pack(sys.argv[1:4], sys.argv[4], 256, pad_seq_to_mult=4, "
        "engine='ray', shards=3, ray_address=sys.argv[5])"
    )
    env = {**os.environ, "BRIDGEPACK_FAULT": "commit:1:kill"}  # metadata written, packs not yet renamed
    env.pop("BRIDGEPACK_FAULT_ONCE", None)
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, inputs), str(out), cluster.address],
        env=env, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert not (out / f"training_{PACK}").exists()
    assert main(["inspect", str(out), "-q"]) == 2  # no packed file any reader would take
    staging = out / f".training_{PACK}.staging"
    staged = sorted((staging / "shards").glob("*.parquet"))
    assert len(staged) == 2
    # a staged shard or a slice's spool that no longer matches its record is made again, not trusted
    staged[1].write_bytes(staged[0].read_bytes())
    with open(staging / "spool" / "00002" / "tokens.u32", "r+b") as spool:
        spool.truncate(spool.seek(0, 2) - 4)
    again = bridgepack.pack(inputs, out, PACK, pad_seq_to_mult=4, engine="ray", shards=3)
    assert (again.engine["reused_slices"], again.engine["reused_shards"]) == (2, 1)
    assert_same_pack(again, local)
    assert bridgepack.inspect(again.packed_path).ok
    assert not staging.exists()  # the spools went with it
    # the same input and shards: the same packs, in the same order, as the uninterrupted run
    assert again.record.fingerprint == sharded.record.fingerprint


@pytest.mark.network
def test_chats_with_a_real_tokenizer_equal_the_local_pack(ray_cluster: Any, tmp_path: Path) -> None:
    """Raw chat text tokenized on the workers (Qwen3's tokenizer, loaded once per worker) gives the very
    rows and rejects of the local pack."""
    pytest.importorskip("transformers")
    from _support.chat_rows import chat_rows
    from _support.tokenizers import qwen3_tokenizer_dir

    tokenizer = qwen3_tokenizer_dir()
    chats = [write_jsonl(tmp_path / f"chats{i}.jsonl", chat_rows(i, 60)) for i in range(2)]
    options = {"tokenizer": tokenizer, "max_seq_length": 400, "pad_seq_to_mult": 8}
    local = bridgepack.pack(chats, tmp_path / "local", 512, **options)
    result = bridgepack.pack(chats, tmp_path / "ray", 512, engine="ray", shards=2, **options)
    assert_same_pack(result, local)
    assert result.record.tokenizer_sha256 == local.record.tokenizer_sha256
    assert result.record.eos_id == local.record.eos_id
    assert bridgepack.inspect(result.packed_path, tokenizer=tokenizer).ok


def test_a_resume_with_other_reading_options_is_refused_and_overwrite_starts_over(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#43 item 1, as reported: a run stopped after slice 0, run again with another --chunk-rows, reused
    slice 0 (read in chunks of 1024) beside slices read in chunks of 100: 975 of 1,000 samples packed,
    some twice, exit 0. Now the resume is refused naming the option; --overwrite packs every sample once."""
    rows = random_examples(np.random.default_rng(43), 1000, 120)
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    stopped = prepare_sharded(PackOptions.from_flat([data], out, PACK, quiet=True), 2)
    read_slice(stopped.job, stopped.slices[0])  # slice 0 done, then the driver died
    stopped.release()
    args = ["pack", "-q", str(data), "-o", str(out), "-n", str(PACK), "--engine", "ray", "--shards", "2"]
    assert main([*args, "--chunk-rows", "100"]) == 2
    err = capsys.readouterr().err.strip()
    assert f".training_{PACK}.staging: a stopped run is staged here with other --chunk-rows" in err, err
    assert "--overwrite" in err and len(err.splitlines()) == 1
    assert main([*args, "--chunk-rows", "100", "--overwrite", "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["samples_in"], summary["engine"]["reused_slices"]) == (1000, 0)
    local = bridgepack.pack(data, tmp_path / "local", PACK, chunk_rows=100)
    assert sequences(sorted((out / f"training_{PACK}").glob("*.parquet"))) == sequences([local.packed_path])


def _bad_json(files: list[Path]) -> None:
    lines = files[1].read_bytes().splitlines()
    lines[5] = b'{"input_ids": [1, 2'
    files[1].write_bytes(b"\n".join(lines) + b"\n")


def _string_id(files: list[Path]) -> None:
    lines = files[0].read_bytes().splitlines()
    lines[3] = b'{"input_ids": ["7", 8, 2]}'
    files[0].write_bytes(b"\n".join(lines) + b"\n")


def _cut_gzip(files: list[Path]) -> None:
    import gzip

    files[1].write_bytes(gzip.compress(files[1].read_bytes())[:60])


def _too_long(files: list[Path]) -> None:
    for file in files:  # every sample longer than the pack: the driver finds nothing to pack
        file.write_bytes(
            b"".join(orjson.dumps({"input_ids": [5] * (3 * PACK) + [2]}) + b"\n" for _ in range(9))
        )


def _chat_then_prompt_completion(files: list[Path]) -> list[str]:
    """Chat rows, then prompt-completion rows: one pack holds one text mode (a toy tokenizer tokenizes)."""
    from bridgepack.demo import build_tokenizer

    texts = ["hello there", "hi"]
    chat = {"messages": [{"role": "user", "content": texts[0]}, {"role": "assistant", "content": texts[1]}]}
    write_jsonl(files[0], [chat] * 40)
    write_jsonl(files[1], [{"input": texts[0], "output": texts[1]}] * 40)
    return ["--tokenizer", str(build_tokenizer(texts, files[0].parent / "toy"))]


#: A bad input per kind of error a ray run meets, and the flags it needs: raised in a slice task (a
#: malformed line, a refused value, a text mode that changes, a file that cannot be read) or on the
#: driver after the slices (nothing to pack).
BAD_INPUTS: dict[str, Callable[[list[Path]], list[str] | None]] = {
    "malformed JSON in the second file": _bad_json,
    "a token id given as a string": _string_id,
    "a prompt-completion file after a chat file": _chat_then_prompt_completion,
    "a cut gzip stream": _cut_gzip,
    "no sample fits the pack": _too_long,
}


@pytest.mark.parametrize("kind", BAD_INPUTS)
def test_a_data_error_on_a_worker_is_the_local_line_and_leaves_nothing(
    kind: str, ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#43 items 7 and 8: an error a task raised came back as Ray's ~170-line traceback without the
    error line, and the failed run left its staging directory, so a corrected run was refused. Now the
    line and the exit code are the local pack's, and nothing is left."""
    rng = np.random.default_rng(8)
    files = [write_jsonl(tmp_path / f"part{i}.jsonl", random_examples(rng, 300, 100)) for i in range(2)]
    good = [f.read_bytes() for f in files]
    flags = BAD_INPUTS[kind](files) or []
    base = ["pack", "-q", *map(str, files), "-n", str(PACK), *flags]
    local_code = main([*base, "-o", str(tmp_path / "local")])
    local = capsys.readouterr().err.strip().splitlines()
    code = main([*base, "-o", str(tmp_path / "ray"), "--engine", "ray", "--shards", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert (code, err) == (local_code, local) and code in (1, 2) and len(err) == 1, err
    assert not (tmp_path / "ray").exists() and not (tmp_path / "local").exists()
    if kind == "malformed JSON in the second file":  # corrected, the same command is not refused
        for file, data in zip(files, good, strict=True):
            file.write_bytes(data)
        assert main([*base, "-o", str(tmp_path / "ray"), "--engine", "ray", "--shards", "2"]) == 0


def test_sigterm_to_the_driver_exits_143_without_a_stack_dump(ray_cluster: Any, tmp_path: Path) -> None:
    """#43 item 9: Ray installed its own SIGTERM handler in the driver, which dumped a native stack and
    exited 15 (sometimes 134); the Slurm example relies on 143 (docs/scale.md). The driver is held at its
    plan (SIGSTOP, so the signal lands mid-run), sent SIGTERM, and let go."""
    cluster, _ = ray_cluster
    data = write_jsonl(tmp_path / "in.jsonl", random_examples(np.random.default_rng(9), 400, 100))
    out = tmp_path / "out"
    argv = ["pack", "-q", str(data), "-o", str(out), "-n", str(PACK), "--engine", "ray", "--shards", "2"]
    env = {**os.environ, "BRIDGEPACK_FAULT": "plan:1:stop"}
    env.pop("BRIDGEPACK_FAULT_ONCE", None)
    child = subprocess.Popen(
        [sys.executable, "-m", "bridgepack", *argv, "--ray-address", cluster.address],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        stat = Path(f"/proc/{child.pid}/stat")
        for _ in range(1200):  # held at its plan: state T
            if child.poll() is not None or stat.read_text().split(") ")[1].startswith("T"):
                break
            time.sleep(0.1)
        child.send_signal(signal.SIGTERM)
        child.send_signal(signal.SIGCONT)
        _, stderr = child.communicate(timeout=120)
    finally:
        child.kill()
    text = stderr.decode()
    assert child.returncode == 143, text[-2000:]
    assert text.strip().splitlines()[-1] == "Terminated."
    assert "SIGTERM received" not in text and "Traceback" not in text
    assert (out / f".training_{PACK}.staging").is_dir()  # a stopped run: the same command resumes it


def test_the_scale_page_runs_as_written_on_the_cluster(
    ray_cluster: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/scale.md's lines in page order, each held to its exit code and the lines it shows, in this
    process: joined to the test run's cluster (the ``ray start`` lines' stand-in), as ``--ray-address auto``
    and ``ray_address="auto"`` join the cluster a reader started, without a Ray job of their own. They run in
    the nodes' working directory, so a relative path names the same file on the driver and the workers."""
    from _support.ray_cluster import workdir

    _, ray_tmp = ray_cluster
    assert [cmd.source for cmd in SCALE_PAGE] == ["docs/scale.md"] * 4
    monkeypatch.chdir(workdir(ray_tmp))
    problems = []
    for cmd in SCALE_PAGE:
        code, out, err = doc_pages.run_in_process(cmd, capsys)
        problems += [
            f"{p}\n--- output ---\n{(out + err)[-3000:]}"
            for p in doc_pages.broken_promises(cmd, code, out + err)
        ]
    assert not problems, "\n\n".join(problems)
