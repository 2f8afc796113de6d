"""``bridgepack plan`` end to end on small pre-tokenized JSONL written here."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from bridgepack.cli import main

EOS = 2


def write_lengths(path: Path, runtime: list[int]) -> Path:
    rows = [{"input_ids": [*range(3, 3 + r), EOS]} for r in runtime]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["plan", "--quiet", "--workers", "1", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_lengths(tmp_path / "d.jsonl", [3, 5, 2, 7])
    code, out, _ = run(
        [str(data), "--pack-sizes", "4,8,16", "--token-slots", "16", "--format", "json"], capsys
    )
    assert code == 0
    doc = orjson.loads(out)
    assert doc["schema_version"] == 1 and doc["samples"] == 4 and doc["longest"] == 7
    rows = {c["pack_size"]: c for c in doc["candidates"]}
    assert rows[4]["rejected"] == 2  # 5 and 7 do not fit a pack of 4
    assert rows[8]["packs"] == 3 and rows[8]["global_batch_size"] == 2
    assert rows[8]["efficiency"] == pytest.approx(17 / 24)
    assert doc["recommended"] == 8
    assert "train.global_batch_size=2" in doc["overrides"]
    assert doc["pack_command"] == f"bridgepack pack {data} --out packed_8 --pack-size 8"
    assert doc["cost_model"]["model"]["hidden"] == 4096  # the 7B-like default


def test_text_report_with_dp_model_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_lengths(tmp_path / "d.jsonl", [30, 50, 20, 70, 10, 60, 40, 40] * 8)
    plot = tmp_path / "plan.png"
    args = [str(data), "--pack-sizes", "64,128", "--token-slots", "512", "--dp", "2"]
    code, out, err = run([*args, "--model", "64,2,4,256,100", "--plot", str(plot)], capsys)
    assert code == 0, err
    assert "Recommended: pack size" in out and "DP imbalance (balanced)" in out
    assert "DP imbalance" in out and "attention FLOP/step" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, _, err = run([*args, "--plot", str(plot)], capsys)
    assert code == 2 and "already exists" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "64,2,3,256,100"], "3 heads do not divide hidden size 64"),
        (["--dp", "3"], "DP 3 does not divide GBS 2"),
        (["--dp", "2", "--world-size", "4"], "either --dp or --world-size"),
        (["--pack-sizes", "x"], "--pack-sizes expects comma-separated integers"),
    ],
)
def test_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    data = write_lengths(tmp_path / "d.jsonl", [3, 5, 2, 7])
    sizes = [] if "--pack-sizes" in extra else ["--pack-sizes", "8"]  # an option given twice is refused
    code, _, err = run([str(data), *sizes, "--token-slots", "16", *extra], capsys)
    assert code == 2
    assert message in " ".join(err.split())


def test_too_small_pack_sizes_say_how_many_are_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_lengths(tmp_path / "d.jsonl", [3, 5, 2, 7])
    code, _, err = run([str(data), "--pack-sizes", "4,8", "--token-slots", "16"], capsys)
    assert code == 0
    assert "pack size 4 is below the longest sample (7 runtime tokens): 2 sample(s) would be rejected" in (
        " ".join(err.split())
    )


def test_missing_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([str(tmp_path / "nope.jsonl")], capsys)
    assert code == 2 and "no such file" in err


def test_pack_balance_records_cost_model_and_inspect_simulates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import numpy as np
    import pyarrow.parquet as pq

    from bridgepack.packing import CostModel, ModelDims
    from bridgepack.sizing import step_imbalance

    rng = np.random.default_rng(3)
    data = write_lengths(tmp_path / "d.jsonl", rng.integers(1, 60, 200).tolist())
    out = tmp_path / "packed"
    dims = "64,2,4,256,100"
    code = main(["pack", "-q", str(data), "--out", str(out), "--pack-size", "128", "--model", dims])
    assert code == 0, capsys.readouterr().err
    entry = orjson.loads((out / "128_metadata.jsonl").read_bytes())[0]
    assert entry["bridgepack"]["algorithm"] in ("balanced", "best_fit_decreasing")
    assert entry["bridgepack"]["cost_model"]["model"]["hidden"] == 64
    capsys.readouterr()

    packed = out / "training_128.idx.parquet"
    code = main(
        ["inspect", "-q", str(packed), "--dp", "2", "--gbs", "4", "--model", dims, "--format", "json"]
    )
    assert code == 0
    sim = orjson.loads(capsys.readouterr().out)["dp_imbalance"]
    model = CostModel.from_dims(ModelDims.parse(dims))
    costs = []
    for row in pq.read_table(packed).to_pylist():  # runtime length = stored - 1 per sequence
        bounds = [*row["seq_start_id"], len(row["input_ids"])]
        runtime = np.diff(bounds) - 1
        costs.append(float(model.sequence_costs(runtime).sum()))
    expected = step_imbalance(np.array(costs), 2, 4)
    assert sim["steps"] == expected.steps and sim["mean"] == pytest.approx(expected.mean)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["pack", "--pack-size", "8", "--model", "8,1,2,16,10", "--algorithm", "best_fit_decreasing"],
            "--model sets the cost model of the balanced algorithm",
        ),
    ],
)
def test_pack_balance_bad_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    data = write_lengths(tmp_path / "d.jsonl", [3, 5, 2, 7])
    code = main([args[0], "-q", str(data), "--out", str(tmp_path / "o"), *args[1:]])
    assert code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--dp", "3", "--gbs", "8"], "DP 3 does not divide the global batch size 8"),
        (["--dp", "2"], "go together"),
    ],
)
def test_inspect_simulation_bad_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    data = write_lengths(tmp_path / "d.jsonl", [3, 5, 2, 7])
    assert main(["pack", "-q", str(data), "--out", str(tmp_path / "o"), "--pack-size", "8"]) == 0
    capsys.readouterr()
    code = main(["inspect", "-q", str(tmp_path / "o" / "training_8.idx.parquet"), *extra])
    assert code == 2 and message in capsys.readouterr().err


def test_text_input_sees_the_lengths_pack_packs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bridgepack.demo import build_tokenizer

    words = ["alpha", "beta", "gamma", "delta", "eps"]
    rows = []
    for i in range(40):
        question = " ".join(words[(i + k) % 5] for k in range(1 + i % 7))
        answer = " ".join(words[(i * k) % 5] for k in range(1 + (i * 3) % 11))
        rows.append(
            {"messages": [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]}
        )
    data = tmp_path / "chat.jsonl"
    data.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    tok = build_tokenizer([" ".join(words)], tmp_path / "tok")
    code, out, err = run(
        [str(data), "--tokenizer", str(tok), "--pack-sizes", "32", "--token-slots", "64", "--format", "json"],
        capsys,
    )
    assert code == 0, err
    plan = orjson.loads(out)
    assert (
        main(
            [
                "pack",
                "-q",
                str(data),
                "--tokenizer",
                str(tok),
                "--out",
                str(tmp_path / "o"),
                "--pack-size",
                "32",
            ]
        )
        == 0
    )
    meta = orjson.loads((tmp_path / "o" / "32_metadata.jsonl").read_bytes())[0]
    assert plan["samples"] == meta["bridgepack"]["counts"]["samples_in"] == 40
    assert plan["longest"] == meta["dataset_max_seqlen"]
    assert plan["candidates"][0]["packs"] == meta["bridgepack"]["counts"]["packs"]


def test_empty_input_is_invalid_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "empty.jsonl"
    data.write_bytes(b"")
    code, _, err = run([str(data)], capsys)
    assert code == 1 and "empty input" in err


def test_suggested_command_packs_what_was_planned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The suggested ``bridgepack pack`` repeats every option that changes the packs (``--eos-id`` used to be
    dropped, so the suggested command padded with another id); running it writes the planned packs."""
    data = write_lengths(tmp_path / "d.jsonl", [3, 5, 2, 7, 6, 1])
    args = [str(data), "--pack-sizes", "8,16", "--token-slots", "32", "--eos-id", "0", "--format", "json"]
    code, out, _ = run([*args, "--model", "64,2,4,256,100"], capsys)
    assert code == 0
    doc = orjson.loads(out)
    command = doc["pack_command"].split()
    assert command[command.index("--eos-id") + 1] == "0"
    assert command[command.index("--model") + 1] == "64,2,4,256,100"
    out_dir = tmp_path / "packed"
    command[command.index("--out") + 1] = str(out_dir)
    assert main([*command[1:], "--quiet", "--format", "json"]) == 0
    summary = orjson.loads(capsys.readouterr().out)
    planned = {c["pack_size"]: c for c in doc["candidates"]}[doc["recommended"]]
    assert summary["packs"] == planned["packs"]
    record = summary["bridge_metadata"]
    assert record["pack_size"] == doc["recommended"]
    meta = orjson.loads((out_dir / f"{doc['recommended']}_metadata.jsonl").read_bytes())[0]["bridgepack"]
    assert meta["eos_id"] == 0 and meta["cost_model"]["model"]["hidden"] == 64


def test_pack_defaults_to_balanced_packs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Default packs are balanced (7B-like cost model recorded); ``--algorithm best_fit_decreasing`` opts out,
    ``--balance`` is still accepted and changes nothing."""
    import pyarrow.parquet as pq

    data = write_lengths(tmp_path / "d.jsonl", [60, 40, 30, 20, 10, 10, 5, 50, 45, 35] * 6)
    records, packs = {}, {}
    runs = {"default": [], "bfd": ["--algorithm", "best_fit_decreasing"]}
    for name, extra in runs.items():
        out = tmp_path / name
        assert main(["pack", "-q", str(data), "--out", str(out), "--pack-size", "64", *extra]) == 0
        records[name] = orjson.loads((out / "64_metadata.jsonl").read_bytes())[0]["bridgepack"]
        packs[name] = pq.read_table(out / "training_64.idx.parquet").column("input_ids").to_pylist()
    capsys.readouterr()
    assert records["default"]["algorithm"] == "balanced"
    assert records["default"]["cost_model"]["model"]["hidden"] == 4096
    assert records["bfd"]["algorithm"] == "best_fit_decreasing" and "cost_model" not in records["bfd"]
    assert len(packs["bfd"]) == len(packs["default"]) and packs["bfd"] != packs["default"]


def test_a_chat_template_file_plans_what_pack_packs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tokenizer without a chat template (Llama 3.2's files) plans chats with ``--chat-template`` as pack
    reads them (the same samples, the longest, the packs), and the suggested command carries the file;
    without it the error names the option, which plan has."""
    from _support.tokenizers import llama3_template_path, llama32_tokenizer_dir

    rows = [
        {
            "messages": [
                {"role": "user", "content": f"Question {i}? " * (1 + i % 5)},
                {"role": "assistant", "content": "Answer. " * (1 + i % 9)},
            ]
        }
        for i in range(30)
    ]
    data = tmp_path / "chat.jsonl"
    data.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    tok, template = str(llama32_tokenizer_dir()), str(llama3_template_path())
    args = [str(data), "--tokenizer", tok, "--pack-sizes", "256", "--token-slots", "512", "--format", "json"]
    code, _, err = run(args, capsys)
    assert code == 2 and "--chat-template" in err, err
    code, out, err = run([*args, "--chat-template", template], capsys)
    assert code == 0, err
    plan = orjson.loads(out)
    assert f"--chat-template {template}" in plan["pack_command"]
    pack_args = ["pack", "-q", str(data), "--tokenizer", tok, "--chat-template", template]
    assert main([*pack_args, "--out", str(tmp_path / "o"), "--pack-size", "256"]) == 0
    meta = orjson.loads((tmp_path / "o" / "256_metadata.jsonl").read_bytes())[0]
    assert plan["samples"] == meta["bridgepack"]["counts"]["samples_in"] == 30
    assert plan["longest"] == meta["dataset_max_seqlen"]
    assert plan["candidates"][0]["packs"] == meta["bridgepack"]["counts"]["packs"]
