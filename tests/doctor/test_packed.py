"""Data-aware checks on real packed files in Bridge's layout (bridge-format §3), written in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bridgepack.doctor import DoctorOptions, check, load_config
from bridgepack.doctor._packed_facts import read_packed_facts
from bridgepack.errors import DataError, InputError

SPECS = "dataset.offline_packing_specs"


def write_packs(directory: Path, rows: list[list[int]], pack_size: int, record: dict | None = None) -> Path:
    """One Parquet file whose rows hold sequences of the given *stored* lengths, plus the metadata sidecar."""
    directory.mkdir(parents=True, exist_ok=True)
    ids, masks, starts = [], [], []
    for lengths in rows:
        total = sum(lengths)
        ids.append(list(range(total)))
        masks.append([1] * total)
        offsets = [0]
        for n in lengths[:-1]:
            offsets.append(offsets[-1] + n)
        starts.append(offsets)
    table = pa.table(
        {
            "input_ids": pa.array(ids, pa.list_(pa.int64())),
            "loss_mask": pa.array(masks, pa.list_(pa.int8())),
            "seq_start_id": pa.array(starts, pa.list_(pa.int64())),
        }
    )
    pq.write_table(table, directory / f"training_{pack_size}.idx.parquet", row_group_size=500)
    entry: dict = {
        "dataset_max_seqlen": 8,
        "max_samples_per_bin": 3,
        "packing_factor": 2.0,
        "packing_efficiency": 90.0,
        "pack_size": pack_size,
        "min_packed_seqlen": 8,
    }
    if record is not None:
        entry["bridgepack"] = record
    (directory / f"{pack_size}_metadata.jsonl").write_text(json.dumps([entry]))
    return directory


def _config(pack: int, *extra: str) -> list[str]:
    return [
        f"dataset.seq_length={pack}",
        f"model.seq_length={pack}",
        "train.micro_batch_size=1",
        "train.global_batch_size=8",
        "dataset.enable_offline_packing=true",
        f"{SPECS}.packed_sequence_size={pack}",
        *extra,
    ]


#: The release bridgepack targets: the atlas's entries for older releases stay out of these rule checks.
STACK = {"megatron-bridge": "0.6.2"}


def _ids(packed: Path, *overrides: str) -> list[str]:
    return [
        f.id
        for f in check(
            load_config(overrides=list(overrides)), DoctorOptions(packed=str(packed), stack=STACK)
        ).findings
    ]


def test_runtime_lengths_come_from_offsets(tmp_path: Path) -> None:
    # stored 9 and 5 -> runtime 8 and 4 (multiples of 4); stored 6 -> runtime 5 (not)
    packed = write_packs(tmp_path / "p", [[9, 5], [6], [5, 5, 5]], 16)
    facts = read_packed_facts(str(packed), multiple=4, pack_size=16)
    assert (facts.rows, facts.sequences, facts.bad_sequences) == (3, 6, 1)
    assert facts.first_bad is not None and "row 1: runtime length 5" in facts.first_bad
    assert facts.pack_size == 16


def test_lengths_not_divisible_by_2cp(tmp_path: Path) -> None:
    packed = write_packs(tmp_path / "p", [[9, 5], [6]], 16)
    cp2 = (
        "model.context_parallel_size=2",
        "model.calculate_per_token_loss=true",
        f"{SPECS}.pad_seq_to_mult=4",
    )
    assert "SP041" in _ids(packed, *_config(16, *cp2))
    good = write_packs(tmp_path / "q", [[9, 5], [5, 5, 5]], 16)
    assert "SP041" not in _ids(good, *_config(16, *cp2))


def test_metadata_pack_size_must_match(tmp_path: Path) -> None:
    packed = write_packs(tmp_path / "p", [[9, 5]], 32)
    assert "SP040" in _ids(
        packed / "training_32.idx.parquet",
        *_config(16, f"{SPECS}.packed_metadata_path={packed}/32_metadata.jsonl"),
    )
    assert "SP040" not in _ids(packed, *_config(32))


def test_pad_cu_seqlens_needs_the_metadata_file(tmp_path: Path) -> None:
    packed = write_packs(tmp_path / "p", [[9, 5]], 16)
    cfg = _config(16, f"{SPECS}.pad_cu_seqlens=true", "dataset.dataset_kwargs.pad_to_max_length=true")
    assert "SP010" not in _ids(packed, *cfg)
    (packed / "16_metadata.jsonl").unlink()
    assert "SP010" in _ids(packed, *cfg)


def test_stale_pad_multiple_and_tokenizer(tmp_path: Path) -> None:
    record = {"pad_seq_to_mult": 1, "tokenizer": "/models/Llama-3-8B"}
    packed = write_packs(tmp_path / "p", [[9, 5]], 16, record)
    ids = _ids(
        packed, *_config(16, f"{SPECS}.pad_seq_to_mult=4", "tokenizer.tokenizer_model=/models/Qwen3-8B")
    )
    assert "SP042" in ids and "SP043" in ids
    ids = _ids(packed, *_config(16, f"{SPECS}.pad_seq_to_mult=1", "tokenizer.tokenizer_model=Llama-3-8B"))
    assert "SP042" not in ids and "SP043" not in ids


def test_config_path_is_used_when_no_packed_option(tmp_path: Path) -> None:
    packed = write_packs(tmp_path / "p", [[6]], 16)
    overrides = _config(16, "model.context_parallel_size=2", f"{SPECS}.packed_train_data_path={packed}")
    assert "SP041" in [f.id for f in check(load_config(overrides=overrides)).findings]


def test_bad_packed_inputs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_packed_facts(str(tmp_path / "missing.parquet"), multiple=1, pack_size=16)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"no \.parquet or \.pq files"):
        read_packed_facts(str(tmp_path / "empty"), multiple=1, pack_size=16)


def test_config_path_missing_here_is_a_warning(tmp_path: Path) -> None:
    overrides = _config(16, f"{SPECS}.packed_train_data_path={tmp_path}/nowhere/training_16.idx.parquet")
    report = check(load_config(overrides=overrides), DoctorOptions(stack=STACK))
    assert [f.id for f in report.findings] == ["SP032"] and not report.has_error
    assert "SP032" not in [f.id for f in check(load_config(overrides=_config(16))).findings]


def test_broken_rows_are_invalid_data(tmp_path: Path) -> None:
    packed = write_packs(tmp_path / "p", [[9, 5]], 16)
    table = pq.read_table(packed / "training_16.idx.parquet")
    broken = table.set_column(2, "seq_start_id", pa.array([[3, 7]], pa.list_(pa.int64())))
    pq.write_table(broken, packed / "training_16.idx.parquet")
    with pytest.raises(DataError, match=r"row 0: field 'seq_start_id': must start at 0"):
        read_packed_facts(str(packed), multiple=1, pack_size=16)


def test_doctor_reads_what_bridgepack_pack_writes(tmp_path: Path) -> None:
    """End to end with the real packer: packs made for CP 1 are stale for CP 2 (SP041, SP042)."""
    from bridgepack.data.pipeline import PackOptions, pack_files
    from bridgepack.data.samples import EXAMPLE_EOS_ID, example_dataset_path

    out = tmp_path / "packed"
    options = PackOptions.from_flat(
        [example_dataset_path()],
        out,
        256,
        eos_id=EXAMPLE_EOS_ID,
        workers=1,
        quiet=True,
    )
    pack_files(options)
    cp1 = _config(256)
    assert _ids(out, *cp1) == []
    cp2 = _config(
        256,
        "model.context_parallel_size=2",
        "model.calculate_per_token_loss=true",
        f"{SPECS}.pad_seq_to_mult=4",
    )
    ids = _ids(out, *cp2)
    assert "SP041" in ids and "SP042" in ids


def test_default_packed_directory_under_dataset_root(tmp_path: Path) -> None:
    root = tmp_path / "squad"
    write_packs(root / "packed" / "llama_pad_seq_to_mult1_sft_0123456789ab", [[6]], 16)
    overrides = [*_config(16, "model.context_parallel_size=2"), f"dataset.dataset_root={root}"]
    overrides.append("model.calculate_per_token_loss=true")
    assert "SP041" in [f.id for f in check(load_config(overrides=overrides)).findings]
    write_packs(root / "packed" / "qwen_pad_seq_to_mult1_sft_ba9876543210", [[6]], 16)
    assert "SP041" not in [
        f.id for f in check(load_config(overrides=overrides)).findings
    ]  # ambiguous: skipped


def test_a_recorded_eos_other_than_the_config_tokenizers_is_an_error(tmp_path: Path) -> None:
    """#15 item 3: packs padded with an EOS inferred from chat-rendered rows (198, their trailing newline)
    against the EOS of Qwen3's real tokenizer (151645), named by the config as a local directory."""
    from _support.tokenizers import qwen3_tokenizer_dir

    qwen = qwen3_tokenizer_dir()
    tokenizer = f"tokenizer.tokenizer_model={qwen}"
    inferred = write_packs(tmp_path / "a", [[9, 5]], 16, {"eos_id": 198, "eos_source": "inferred"})
    loaded = load_config(overrides=_config(16, tokenizer))
    (finding,) = [f for f in check(loaded, DoctorOptions(packed=str(inferred))).findings if f.id == "SP044"]
    assert finding.severity == "error"
    assert f"padded with EOS id 198 (inferred; {inferred}/16_metadata.jsonl)" in finding.message
    assert finding.message.endswith(f"the tokenizer {qwen} says 151645")
    own = write_packs(tmp_path / "b", [[9, 5]], 16, {"eos_id": 151645, "eos_source": "tokenizer"})
    assert "SP044" not in _ids(own, *_config(16, tokenizer))
    assert "SP044" not in _ids(inferred, *_config(16, "tokenizer.tokenizer_model=Qwen/Qwen3-8B"))  # not local
