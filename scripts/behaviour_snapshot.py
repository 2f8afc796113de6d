"""Record what every ``bridgepack`` command does, so a restructure can prove it changed nothing.

Why: moving modules between packages must not change behaviour, and the unit tests import the modules that
move, so they are rewritten along with them. This script uses only the public command line
(``python -m bridgepack ...``), which is the same before and after, and records for a fixed list of about 100
invocations (every command and subcommand, ``--format text`` and ``json``, successes and errors):

- argv, exit code, stdout and stderr;
- every file the invocation created, changed or removed in its working directory: Parquet as schema, row
  count and a hash of the rows (the ``bridgepack.run_id`` key-value metadata aside), ``.npz`` as array names,
  dtypes, shapes and hashes, small text files as their text, anything else by name only.

All of it is normalised first, so two runs of one tree compare equal: temporary paths, the ``--src`` tree,
the shared data folder and the interpreter become placeholders (``<CWD>``, ``<SRC>``, ...); the run ids that
``bridgepack pack`` draws, timestamps, timings and throughputs, and version numbers become ``<RUN_ID>``,
``<TS>``, ``<T>``, ``<VER>``; runs of spaces and of table rules collapse, because a timing one digit longer
widens a table. Each invocation runs in a fresh directory under one temporary root with the same
fixtures copied in (inputs written by this script; a tokenizer, config and logs from ``bridgepack demo
--quick``; packs from ``bridgepack pack``, which are recorded as invocations too).

Usage::

    python scripts/behaviour_snapshot.py --src /path/to/tree/src --out before.json
    python scripts/behaviour_snapshot.py --src src --out after.json
    python scripts/behaviour_snapshot.py --compare before.json after.json   # exit 1 when any differ
    python scripts/behaviour_snapshot.py --compare old.json new.json --rename seqpack=bridgepack
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
DATA = Path("/work/shared/data")
LOGS = DATA / "real-logs"
MLM_CASE = DATA / "mlm-functional-cases" / "gpt3_mcore_te_tp2_pp1_resume_torch_dist_cp2_nondeterministic"
#: Files recorded as their (normalised) text; larger ones as a line count and hash, others by name only.
TEXT_SUFFIXES = {".json", ".jsonl", ".yaml", ".yml", ".txt", ".log", ".sh", ".md", ".jinja", ".csv"}
TEXT_LIMIT = 64 * 1024
CASE_TIMEOUT_S = 240
MLM_FLAGS = "-- --seq-length 4096 --swiglu --bf16 --context-parallel-size 2 --no-such-flag"

Setup = Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    """One invocation: ``python -m bridgepack *args`` in a fresh directory holding the fixtures.

    ``@PY@`` and ``@DATA@`` in an argument stand for this interpreter and the shared data folder.
    ``setup`` adds or breaks files in the directory first; ``keep`` names the folder a fixture case leaves
    for the later cases.
    """

    name: str
    args: tuple[str, ...]
    setup: Setup | None = None
    keep: str | None = None


@dataclass
class Result:
    """What one invocation did, before normalisation."""

    case: Case
    argv: list[str]
    exit_code: int | str
    stdout: str
    stderr: str
    files: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


# --------------------------------------------------------------------------------------------- fixtures


def _write_jsonl(path: Path, rows: Iterable[Any]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _token_rows(count: int, seed: int) -> list[dict[str, list[int]]]:
    """Pre-tokenized rows ending with EOS 2, ids below 256 (the default ``train --vocab``), the prompt
    masked: a few are longer than 64 runtime tokens so the too-long rules have work."""
    rnd = random.Random(seed)
    rows = []
    for i in range(count):
        length = rnd.randint(90, 130) if i % 17 == 5 else rnd.randint(4, 60)
        ids = [rnd.randrange(3, 256) for _ in range(length - 1)] + [2]
        prompt = length // 3
        rows.append({"input_ids": ids, "loss_mask": [0] * prompt + [1] * (length - prompt)})
    return rows


WORDS = ("river", "stone", "bridge", "meadow", "harbor", "garden", "thunder", "saddle")


def _chat_rows(count: int, seed: int) -> list[dict[str, Any]]:
    """Chats in the words of the demo's conversations, which its toy tokenizer was built from."""
    rnd = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for i in range(count):
        a, b = rnd.randint(2, 12), rnd.randint(2, 12)
        word = rnd.choice(WORDS)
        text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 40)))
        messages = (
            [{"role": "system", "content": "You are a careful assistant. Answer exactly."}] if i % 3 else []
        )
        messages += [
            {"role": "user", "content": f"Multiply {a} by {b} ."},
            {"role": "assistant", "content": f"{a} times {b} is {a * b} ."},
            {"role": "user", "content": f"How many times does {word} appear in : {text}"},
            {"role": "assistant", "content": f"{word} appears {text.split().count(word)} times ."},
        ]
        rows.append({"messages": messages})
    return rows


def _prompt_rows(count: int, seed: int) -> list[dict[str, str]]:
    rnd = random.Random(seed)
    rows = []
    for _ in range(count):
        a, b = rnd.randint(2, 40), rnd.randint(2, 40)
        rows.append({"prompt": f"  Multiply {a} by {b} . ", "completion": f"{a} times {b} is {a * b} ."})
    return rows


BRIDGE_CONFIG = """\
model:
  seq_length: 510
  tensor_model_parallel_size: 2
  pipeline_model_parallel_size: 1
  context_parallel_size: 2
  sequence_parallel: true
  calculate_per_token_loss: false
train:
  micro_batch_size: 2
  global_batch_size: 16
dataset:
  seq_length: 510
  enable_offline_packing: true
  offline_packing_specs:
    packed_sequence_size: 510
    pad_seq_to_mult: 1
ddp:
  average_in_collective: true
"""

CORRELATE_SPEC = """\
model: {num_layers: 2, hidden_size: 256, num_attention_heads: 4, ffn_hidden_size: 1024, seq_length: 512,
        vocab_size: 32000}
train: {micro_batch_size: 4, global_batch_size: 32, train_iters: 10}
lr: {lr: 3.0e-4, min_lr: 3.0e-5, decay_style: cosine, warmup_iters: 1}
optimizer: {adam_beta2: 0.95, weight_decay: 0.033}
"""

#: Prints Megatron-LM log lines whose loss depends on argv[1], for ``correlate run``.
FAKE_TRAIN = """\
import sys
lr = float(sys.argv[1])
for it in range(1, 6):
    loss = 5.0 - lr * it * it
    print(f" iteration {it:8d}/       5 | consumed samples: {it * 8:12d} | learning rate: 1.000000E-03 |"
          f" global batch size:     8 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: 0.5 |")
"""


def write_inputs(fix: Path) -> None:
    """The inputs this script writes itself (the same bytes on every run)."""
    fix.mkdir(parents=True, exist_ok=True)
    _write_jsonl(fix / "ids.jsonl", _token_rows(80, seed=7))
    bad = _token_rows(4, seed=8)
    bad[2]["input_ids"][1] = "7"  # type: ignore[call-overload]
    _write_jsonl(fix / "bad_ids.jsonl", bad)
    _write_jsonl(fix / "chat.jsonl", _chat_rows(40, seed=9))
    _write_jsonl(fix / "pc.jsonl", _prompt_rows(40, seed=10))
    (fix / "bridge.yaml").write_text(BRIDGE_CONFIG, encoding="utf-8")
    (fix / "bad.yaml").write_text("model: [unclosed\n  seq_length: 4\n", encoding="utf-8")
    (fix / "spec.yaml").write_text(CORRELATE_SPEC, encoding="utf-8")
    (fix / "bad_spec.yaml").write_text(CORRELATE_SPEC + "colour: blue\n", encoding="utf-8")
    (fix / "fake_train.py").write_text(FAKE_TRAIN, encoding="utf-8")
    (fix / "garbage.parquet").write_bytes(b"this is not a parquet file\n" * 4)
    (fix / "empty.log").write_text("", encoding="utf-8")


def _experiments_tree(cwd: Path) -> None:
    """A Bridge output base and a Megatron-LM checkpoint folder for ``clean``, and a file to keep."""
    ckpt = cwd / "runs" / "nemo_experiments" / "default" / "checkpoints"
    for it in ("iter_0000005", "iter_0000010"):
        (ckpt / it).mkdir(parents=True)
        (ckpt / it / "w.bin").write_bytes(b"x" * 1000)
    (ckpt / "latest_train_state.pt").write_bytes(b"s" * 24)
    mlm = cwd / "runs" / "old" / "ckpt"
    (mlm / "iter_0000020").mkdir(parents=True)
    (mlm / "iter_0000020" / "model.bin").write_bytes(b"m" * 300)
    (mlm / "latest_checkpointed_iteration.txt").write_text("20")
    (cwd / "runs" / "keep.txt").write_text("keep me")


def _tamper_metadata(cwd: Path) -> None:
    """A packing_factor that the rows do not give (inspect: metadata mismatch)."""
    meta = cwd / "ex" / "256_metadata.jsonl"
    meta.write_text(meta.read_text().replace('"packing_factor": ', '"packing_factor": 1', 1))


def _tamper_fingerprint(cwd: Path) -> None:
    """The recorded content fingerprint no longer matches the rows (fingerprint --check)."""
    meta = cwd / "ex" / "256_metadata.jsonl"
    meta.write_text(re.sub(r'("content": ")[0-9a-f]', r"\g<1>x", meta.read_text(), count=1))


def _truncate_packed(cwd: Path) -> None:
    path = cwd / "ex" / "training_256.idx.parquet"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _fake_wheel(cwd: Path) -> None:
    import zipfile

    with zipfile.ZipFile(cwd / "megatron_bridge-9.9.9-py3-none-any.whl", "w") as archive:
        archive.writestr("README.txt", "nothing here")


def _npy_packs(cwd: Path) -> None:
    """A file named like Bridge's legacy ``.npy`` packs that is not one."""
    (cwd / "packed_64.npy").write_bytes(b"\x93NUMPY junk")


# ------------------------------------------------------------------------------------------------ cases


def one(name: str, command: str, setup: Setup | None = None, keep: str | None = None) -> Case:
    """A case from a shell-quoted command line (without the leading ``bridgepack``)."""
    return Case(name, tuple(shlex.split(command)), setup, keep)


def both(name: str, command: str, setup: Setup | None = None) -> list[Case]:
    """The invocation in text and in JSON."""
    return [
        one(f"{name} [text]", f"{command} --format text", setup),
        one(f"{name} [json]", f"{command} --format json", setup),
    ]


#: Packs the fixture cases leave: the shipped example at 256, ids.jsonl at 64, the demo's chats at 512.
PACKED = "ex/training_256.idx.parquet"
IDS = "idspk/training_64.idx.parquet"
DEMO = "demo/packed/training_512.idx.parquet"
TOK = "demo/tokenizer"
TINY = "--hidden 16 --layers 1 --heads 2 --ffn 32"
MLM_CONFIG = f"@DATA@/{MLM_CASE.relative_to(DATA)}/model_config.yaml"
GOLDEN = f"@DATA@/{MLM_CASE.relative_to(DATA)}"


def fixture_cases() -> list[Case]:
    """The invocations whose outputs later cases read (recorded like the others)."""
    return [
        one("fixture: demo --quick", "demo --quick --out demo --format json -q", keep="demo"),
        one("fixture: pack --example", "pack --example --out ex -n 256 -q", keep="ex"),
        one("fixture: pack ids", "pack ids.jsonl --out idspk -n 64 -q", keep="idspk"),
        one(
            "fixture: pack ids first_fit_shuffle",
            "pack ids.jsonl --out idsffs -n 64 --algorithm first_fit_shuffle --seed 3",
            keep="idsffs",
        ),
    ]


def main_cases() -> list[Case]:
    """Every command and subcommand, text and JSON, successes and errors."""
    logs = [f"@DATA@/real-logs/{p.name}" for p in sorted(LOGS.glob("*.log"))]
    nemo, moe, mlm13 = logs[0], logs[5], logs[6]
    fake = "@PY@ fake_train.py"
    return [
        one("--help", "--help"),
        one("--version", "--version"),
        one("unknown command", "nosuchcommand"),
        # pack: token ids, text (chat and prompt-completion) with the demo's tokenizer, compat, layouts, CP
        *both("pack ids", "pack ids.jsonl --out out -n 64"),
        one("pack ids --bridge-compat", "pack ids.jsonl -o out -n 64 --bridge-compat --format json"),
        one(
            "pack ids --cp --tp -sp",
            "pack ids.jsonl -o out -n 64 --cp 2 --tp 2 --sequence-parallel --format json",
        ),
        one("pack ids --layout hf", "pack ids.jsonl -o out -n 64 --layout hf --format json"),
        one(
            "pack ids --too-long split",
            "pack ids.jsonl -o out -n 64 --too-long split --split validation --format json",
        ),
        *both("pack chat --tokenizer", f"pack chat.jsonl -o out -n 128 --tokenizer {TOK} -j 1"),
        one(
            "pack chat last_turn truncate",
            f"pack chat.jsonl -o out -n 96 --tokenizer {TOK} --loss-mode last_turn --too-long truncate -j 1",
        ),
        one(
            "pack chat --chat-template --layout hf",
            f"pack chat.jsonl -o out -n 128 --tokenizer {TOK} --chat-template {TOK}/chat_template.jinja"
            " --layout hf -j 1 --format json",
        ),
        one("pack prompt-completion", f"pack pc.jsonl -o out -n 64 --tokenizer {TOK} -j 1 --format json"),
        one(
            "pack prompt-completion full --bridge-compat",
            f"pack pc.jsonl -o out -n 64 --tokenizer {TOK} --loss-mode full --add-bos --no-strip-whitespace"
            " --bridge-compat -j 1",
        ),
        one("pack missing input", "pack missing.jsonl -o out -n 64"),
        one("pack bad token id", "pack bad_ids.jsonl -o out -n 64 --format json"),
        one("pack no --pack-size", "pack ids.jsonl -o out"),
        one(
            "pack --model with first_fit_decreasing",
            "pack ids.jsonl -o out -n 64 --algorithm first_fit_decreasing --model 64,2,4,128,256",
        ),
        one(
            "pack --bridge-compat --too-long", "pack ids.jsonl -o out -n 64 --bridge-compat --too-long split"
        ),
        one("pack chat without tokenizer", "pack chat.jsonl -o out -n 64 --format json"),
        one("pack onto existing set", "pack --example -o ex -n 256"),
        one("pack garbage parquet", "pack garbage.parquet -o out -n 64"),
        # inspect
        *both("inspect example", f"inspect {PACKED}"),
        one("inspect --dp --gbs", f"inspect {PACKED} --dp 2 --gbs 4 --format json"),
        one("inspect --decode", f"inspect {DEMO} --decode 2 --tokenizer {TOK}"),
        one("inspect --tokenizer eos check", f"inspect {PACKED} --tokenizer {TOK} --format json"),
        one(
            "inspect --dump-batches",
            f"inspect {IDS} --dump-batches 2 --batch-size 2 --out b.npz --format json",
        ),
        one("inspect metadata mismatch", f"inspect {PACKED}", _tamper_metadata),
        one("inspect missing", "inspect nothere.parquet"),
        one("inspect truncated parquet", f"inspect {PACKED} --format json", _truncate_packed),
        one("inspect not a legacy npy", "inspect packed_64.npy", _npy_packs),
        one("inspect --decode without tokenizer", f"inspect {PACKED} --decode 2"),
        # plan
        *both("plan ids", "plan ids.jsonl --pack-sizes 64,128 --token-slots 512"),
        one(
            "plan chat --tokenizer",
            f"plan chat.jsonl --tokenizer {TOK} --pack-sizes 128,256 --dp 2 --cp 2 -j 1 --format json",
        ),
        one(
            "plan --world-size --tp -sp",
            "plan ids.jsonl --pack-sizes 64 --world-size 8 --tp 2 --sequence-parallel --model 64,2,4,128,256",
        ),
        one("plan --pack-sizes abc", "plan ids.jsonl --pack-sizes abc"),
        # doctor: flags, the demo's config with --fix, a config with --packed, --stack, MLM inputs
        *both("doctor flags", "doctor --cp 2 --seq-length 510 --mbs 1 --gbs 8 --world-size 8"),
        *both("doctor demo config --fix", "doctor demo/config/bridge_sft.yaml --world-size 1 --fix"),
        one(
            "doctor config --packed",
            f"doctor bridge.yaml model.seq_length=512 --packed {PACKED} --world-size 8 --format json",
        ),
        one(
            "doctor --stack",
            "doctor --stack megatron-bridge==0.5.1,megatron-core==0.14.0 --pack-size 4096"
            " --seq-length 4096 --cp 2 --per-token-loss --format json",
        ),
        one("doctor --model-config", f"doctor --model-config {MLM_CONFIG} --world-size 8 --format json"),
        one(
            "doctor --mlm-args",
            "doctor --mlm-args '--seq-length 4096 --bf16 --context-parallel-size 2"
            " --micro-batch-size 2 --global-batch-size 16' --world-size 8",
        ),
        one("doctor --lang zh --allow", "doctor bridge.yaml --world-size 8 --lang zh --allow SP016"),
        one(
            "doctor --packed other size",
            f"doctor --packed {PACKED} --pack-size 512 --seq-length 512 --format json",
        ),
        one("doctor bad yaml", "doctor bad.yaml --format json"),
        one("doctor bad override", "doctor bridge.yaml not-an-override"),
        # translate, both ways
        *both("translate mlm-to-bridge", f"translate mlm-to-bridge {MLM_FLAGS}"),
        one("translate mlm-to-bridge --strict", f"translate mlm-to-bridge --strict {MLM_FLAGS}"),
        one(
            "translate mlm-to-bridge --model-config",
            f"translate mlm-to-bridge --model-config {MLM_CONFIG} --format json",
        ),
        *both(
            "translate bridge-to-mlm",
            "translate bridge-to-mlm model.seq_length=4096 mixed_precision=bf16_mixed"
            " model.context_parallel_size=2 foo.bar=1",
        ),
        one(
            "translate bridge-to-mlm --config",
            "translate bridge-to-mlm --config demo/config/bridge_sft.yaml --strict --format json",
        ),
        one("translate bridge-to-mlm not key=value", "translate bridge-to-mlm seq_length"),
        # curves on the real logs and golden values, and on the demo's two training logs
        *both("curves show real logs", "curves show " + " ".join(logs)),
        one(
            "curves show --metric --steps --plot",
            f"curves show {moe} --metric load_balancing_loss --steps 2:10 --plot m.png --format json",
        ),
        one("curves show missing metric", f"curves show {nemo} --metric num-zeros"),
        *both(
            "curves compare golden",
            f"curves compare {GOLDEN}/golden_values_dev_dgx_h100.json"
            f" {GOLDEN}/golden_values_dev_dgx_a100.json -t golden --metric all",
        ),
        one(
            "curves compare demo logs",
            "curves compare demo/logs/packed.log demo/logs/padded.log --html r.html --plot d.png",
        ),
        one(
            "curves compare exact",
            f"curves compare {mlm13} {mlm13} -t exact --require-all-steps --format json",
        ),
        one("curves compare --steps 50:10", f"curves compare {mlm13} {mlm13} --steps 50:10"),
        one("curves compare empty", f"curves compare {mlm13} empty.log --format json"),
        *both("curves export", f"curves export {mlm13} --golden g.json"),
        one("curves export no lm loss", f"curves export {nemo} --golden g.json"),
        one("curves export exists", f"curves export {mlm13} --golden spec.yaml"),
        # correlate
        *both("correlate plan", "correlate plan --spec spec.yaml"),
        one("correlate plan --out", "correlate plan --spec spec.yaml --out runs --format json"),
        one("correlate plan --from-skill", "correlate plan --from-skill"),
        one("correlate plan bad spec", "correlate plan --spec bad_spec.yaml"),
        one("correlate plan no spec", "correlate plan --format json"),
        one("correlate run match", f"correlate run --a '{fake} 0.01' --b '{fake} 0.01' --out runs -q"),
        one(
            "correlate run mismatch",
            f"correlate run --a '{fake} 0.01' --b '{fake} 0.3' --out runs -q --format json",
        ),
        one(
            "correlate run cannot start",
            "correlate run --a ./no-such-launcher --b true --out runs -q --format json",
        ),
        # clean
        *both("clean dry run", "clean runs", _experiments_tree),
        one("clean --yes", "clean runs --yes --format json", _experiments_tree),
        one("clean --delete --yes", "clean runs --delete --yes", _experiments_tree),
        # train (a few steps of a tiny model)
        one("train packed", f"train --data {IDS} --steps 2 --gbs 2 {TINY} --log t.log"),
        one("train padded", f"train --padded-from {IDS} --steps 2 --gbs 2 --mbs 2 {TINY} --format json"),
        one("train no data", "train --steps 1"),
        one("train vocab too small", f"train --data {IDS} --steps 1 --vocab 10 {TINY} --format json"),
        # diff
        one("diff identical", f"diff {IDS} idspk"),
        *both("diff other packing", f"diff {IDS} idsffs/training_64.idx.parquet"),
        one("diff other pack size", f"diff {IDS} {PACKED} --format json"),
        one("diff missing", f"diff {IDS} nope.parquet"),
        # fingerprint
        one("fingerprint", f"fingerprint {PACKED}"),
        one("fingerprint --check", f"fingerprint {IDS} --check --format json"),
        one("fingerprint --check tampered", f"fingerprint {PACKED} --check", _tamper_fingerprint),
        one("fingerprint garbage", "fingerprint garbage.parquet --format json"),
        # env, verify (no Bridge here: the refusals), demo's refusal
        *both("env", "env"),
        one("verify without --bridge", "verify"),
        one(
            "verify not a wheel",
            "verify --bridge --bridge-wheel megatron_bridge-9.9.9-py3-none-any.whl",
            _fake_wheel,
        ),
        one("demo into a non-empty folder", "demo --quick --out demo"),
    ]


# ---------------------------------------------------------------------------------------------- running


def child_env(src: Path, cache: Path) -> dict[str, str]:
    """An environment that makes the output independent of the terminal, locale, time zone and threads."""
    dropped = (
        "BRIDGEPACK_",
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "MASTER_",
        "PYTHON",
        "LC_",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped) and k not in {"COLUMNS", "LINES"}}
    env.update(
        PYTHONPATH=str(src),
        PYTHONPYCACHEPREFIX=str(cache / "py"),  # never write into the tree under test
        NUMBA_CACHE_DIR=str(cache / "numba"),
        PYTHONHASHSEED="0",
        COLUMNS="200",
        LINES="60",
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
        TZ="UTC",
        TERM="dumb",
        NO_COLOR="1",
        BRIDGEPACK_PROGRESS_SECONDS="1000000000",
        CUDA_VISIBLE_DEVICES="",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return env


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _listing(root: Path) -> dict[str, str]:
    """Relative path -> content hash of every file (symlinks by target) under ``root``."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if "__pycache__" in rel:
                continue
            out[rel] = "link:" + os.readlink(path) if path.is_symlink() else _digest(path.read_bytes())
    return out


def _parquet_record(path: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    table = pf.read()
    meta = {
        k.decode(): v.decode("utf-8", "replace")
        for k, v in (pf.metadata.metadata or {}).items()
        if k != b"ARROW:schema"
    }
    rows = json.dumps(table.to_pydict(), sort_keys=False, default=str).encode()
    return {
        "kind": "parquet",
        "columns": table.column_names,
        "schema": [str(f.type) for f in table.schema],
        "num_rows": table.num_rows,
        "row_groups": pf.metadata.num_row_groups,
        "rows_sha256": hashlib.sha256(rows).hexdigest(),
        "metadata": meta,
    }


def _npz_record(path: Path) -> dict[str, Any]:
    import numpy as np

    with np.load(path, allow_pickle=False) as archive:
        arrays = {
            key: {
                "dtype": str(archive[key].dtype),
                "shape": list(archive[key].shape),
                "sha256": _digest(archive[key].tobytes()),
            }
            for key in archive.files
        }
    return {"kind": "npz", "arrays": arrays}


def _file_record(path: Path) -> dict[str, Any]:
    """What a written file holds, as far as it is deterministic."""
    try:
        if path.suffix == ".parquet":
            return _parquet_record(path)
        if path.suffix == ".npz":
            return _npz_record(path)
    except Exception as exc:  # a file that is meant to be unreadable (a tampered fixture)
        return {"kind": "unreadable", "error": type(exc).__name__}
    if path.suffix in TEXT_SUFFIXES:
        text = path.read_text(encoding="utf-8", errors="replace")
        if len(text) <= TEXT_LIMIT:
            return {"kind": "text", "text": text}
        return {"kind": "text", "lines": text.count("\n"), "text_large": text}
    return {"kind": "other", "suffix": path.suffix}


def _expand(arg: str) -> str:
    return arg.replace("@PY@", sys.executable).replace("@DATA@", str(DATA))


def run_case(case: Case, cwd: Path, fix: Path, env: dict[str, str]) -> Result:
    """Run one case in a fresh ``cwd`` (the fixtures copied in) and collect what it wrote."""
    if cwd.exists():
        shutil.rmtree(cwd)
    shutil.copytree(fix, cwd, symlinks=True)
    if case.setup is not None:
        case.setup(cwd)
    before = _listing(cwd)
    argv = [sys.executable, "-m", "bridgepack", *(_expand(a) for a in case.args)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=CASE_TIMEOUT_S, errors="replace"
        )
        code: int | str = proc.returncode
        stdout, stderr = proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code = "timeout"
        stdout = exc.stdout if isinstance(exc.stdout, str) else ""
        stderr = exc.stderr if isinstance(exc.stderr, str) else ""
    seconds = time.perf_counter() - start
    after = _listing(cwd)
    files: dict[str, Any] = {}
    for rel, digest in after.items():
        if before.get(rel) != digest:
            files[rel] = {"change": "changed" if rel in before else "created", **_file_record(cwd / rel)}
    for rel in before.keys() - after.keys():
        files[rel] = {"change": "removed"}
    return Result(case, argv, code, stdout, stderr, dict(sorted(files.items())), seconds)


# ---------------------------------------------------------------------------------------- normalisation

RUN_ID = re.compile(r"run[_ .-]?id\W{1,6}([0-9a-f]{32})\b", re.IGNORECASE)
SUBSTITUTIONS: list[tuple[re.Pattern[str], str]] = [
    # timestamps: log lines, reports, and the folders named after them
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2}| ?UTC)?"), "<TS>"),
    (re.compile(r"(?<!\d)20\d{6}[-_T]?\d{6}(?:[-_.]\d{1,3}(?!\d))?"), "<TS>"),
    # timings and throughput
    (re.compile(r"(elapsed time per iteration \(ms\):\s*)[\d.]+"), r"\1<T>"),
    (re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?=\s?(?:ms|s)\b)"), "<T>"),
    (re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(\s*(?:x\s+)?(?:real\s+)?tok(?:en)?s?/s)"), r"<T>\1"),
    (re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?=\s*(?:samples|sequences|rows|it)/s\b)"), "<T>"),
    (re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?/s\b"), "<T>/s"),
    (re.compile(r"(speed-?up\W{0,3})[\d.]+x", re.IGNORECASE), r"\1<T>x"),
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)?x(?= real tokens/s)"), "<T>x"),
]
VERSION = re.compile(
    r"(?<![\w.])v?\d+\.\d+(?:\.\d+)+(?:(?:a|b|rc|\.dev|\.post|dev|post)\d*)*(?:\+[\w.]+)?(?![\w.])"
)
#: JSON keys whose float values (and the floats of whatever they hold) are timings or throughputs.
TIMING_KEY = re.compile(
    r"(?:^|_)(?:seconds|secs|elapsed|duration|timestamp|started|finished|time)(?:$|_)|_per_s$|_per_second$"
)
SPACES = re.compile(r"[ \t]{2,}")
RULES = re.compile(r"([─━═┄╌])\1+|(-)-{2,}")


@dataclass
class Normaliser:
    """Turns one run's raw output into text that only a behaviour change can alter."""

    paths: list[tuple[str, str]]
    run_ids: set[str] = field(default_factory=set)
    versions: bool = False

    def text(self, text: str) -> str:
        for raw, placeholder in self.paths:
            text = text.replace(raw, placeholder)
        for run_id in self.run_ids:
            text = text.replace(run_id, "<RUN_ID>")
        for pattern, repl in SUBSTITUTIONS:
            text = pattern.sub(repl, text)
        if self.versions:
            text = VERSION.sub("<VER>", text)
        return RULES.sub(lambda m: m.group(1) or "---", SPACES.sub(" ", text))

    def value(self, value: Any, timing: bool = False, key: str = "") -> Any:
        """JSON values: floats under a timing key become ``<T>`` (integers are counts, or a tokenizer's
        ids: ``"seconds": 57`` in a vocabulary), strings are normalised as text, a ``version`` too."""
        if isinstance(value, dict):
            return {
                k: self.value(v, timing or bool(TIMING_KEY.search(k.lower())), k) for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.value(v, timing, key) for v in value]
        if timing and isinstance(value, float):
            return "<T>"
        if isinstance(value, str):
            text = self.text(value)
            return VERSION.sub("<VER>", text) if key == "version" else text
        return value

    def stream(self, text: str) -> dict[str, Any]:
        """A whole stdout/stderr: one JSON document is normalised as JSON (and its layout kept in mind)."""
        stripped = text.strip()
        if stripped.startswith(("{", "[")):
            try:
                doc = json.loads(stripped)
            except ValueError:
                pass
            else:
                canonical = json.dumps(doc, indent=2, ensure_ascii=False) == stripped
                return {"json": self.value(doc), "layout": "indent-2" if canonical else "other"}
        return {"text": self.text(text)}

    def file(self, record: dict[str, Any]) -> dict[str, Any]:
        """A written file's record: text as text or JSON, Parquet key-value metadata without the run id."""
        out = dict(record)
        if "text" in out:
            out.update(self.stream(out.pop("text")))
        if "text_large" in out:
            out["sha256"] = _digest(self.text(out.pop("text_large")).encode())
        if "metadata" in out:
            out["metadata"] = {
                k: ("<RUN_ID>" if k.endswith("run_id") else self.text(v)) for k, v in out["metadata"].items()
            }
        return out


def find_run_ids(results: Iterable[Result], roots: Iterable[Path]) -> set[str]:
    """The run ids that ``pack`` drew, from every output and every kept fixture file."""
    found: set[str] = set()
    texts: list[str] = []
    for r in results:
        texts += [r.stdout, r.stderr]
        for rec in r.files.values():
            texts += [
                str(rec.get("text", "")),
                str(rec.get("text_large", "")),
                json.dumps(rec.get("metadata", {})),
            ]
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and path.suffix in {".jsonl", ".json"}:
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
    for text in texts:
        found.update(m.group(1) for m in RUN_ID.finditer(text))
    return found


def normalise(result: Result, norm: Normaliser) -> dict[str, Any]:
    """The record kept in the snapshot: only ``env`` and ``--version`` get every version number replaced
    (elsewhere a version is data, e.g. ``--stack megatron-bridge==0.5.1``; JSON ``version`` keys aside)."""
    norm.versions = result.case.args[:1] in {("env",), ("--version",)}
    argv = ["python", "-m", "bridgepack", *(norm.text(a) for a in result.argv[3:])]
    return {
        "name": result.case.name,
        "argv": argv,
        "exit_code": result.exit_code,
        "stdout": norm.stream(result.stdout),
        "stderr": norm.stream(result.stderr),
        "files": {norm.text(k): norm.file(v) for k, v in result.files.items()},
    }


# ------------------------------------------------------------------------------------------------- main


def snapshot(src: Path, out: Path, jobs: int) -> int:
    src = src.resolve()
    if not (src / "bridgepack").is_dir():
        print(f"behaviour_snapshot: {src} holds no bridgepack package", file=sys.stderr)
        return 2
    cache = Path(tempfile.gettempdir()) / "bridgepack-snapshot-pycache"
    env = child_env(src, cache)
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="bridgepack-snap-"))
    try:
        fix = root / "fix"
        write_inputs(fix)
        fixtures, cases = fixture_cases(), main_cases()
        names = [c.name for c in fixtures + cases]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise SystemExit(f"behaviour_snapshot: duplicate case names {sorted(duplicates)}")

        def cwd_of(index: int) -> Path:
            return root / "cases" / f"{index:03d}"

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            first = list(pool.map(lambda ic: run_case(ic[1], cwd_of(ic[0]), fix, env), enumerate(fixtures)))
            for i, case in enumerate(fixtures):
                if case.keep:
                    shutil.copytree(cwd_of(i) / case.keep, fix / case.keep, symlinks=True)
            offset = len(fixtures)
            rest = list(
                pool.map(lambda ic: run_case(ic[1], cwd_of(offset + ic[0]), fix, env), enumerate(cases))
            )
        results = first + rest
        paths = [
            (str(root / "cases"), "<CASES>"),
            (str(root / "fix"), "<FIX>"),
            (str(root), "<TMP>"),
            (str(src), "<SRC>"),
            (str(DATA), "<DATA>"),
            (sys.executable, "<PY>"),
            (sys.prefix, "<VENV>"),
            (str(Path.home()), "<HOME>"),
        ]
        # A case's own directory first (<CWD>: the same in every case), then the other placeholders.
        records = []
        run_ids = find_run_ids(results, [fix])
        for i, result in enumerate(results):
            own = [(str(cwd_of(i)), "<CWD>"), (str(cwd_of(i).resolve()), "<CWD>")]
            records.append(normalise(result, Normaliser(own + paths, run_ids)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    seconds = time.perf_counter() - started
    doc = {
        "schema_version": SCHEMA_VERSION,
        "meta": {
            "src": str(src),
            "python": sys.version.split()[0],
            "seconds": round(seconds, 1),
            "jobs": jobs,
        },
        "invocations": records,
    }
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    slow = sorted(results, key=lambda r: -r.seconds)[:5]
    print(f"{len(records)} invocations in {seconds:.1f} s -> {out}")
    print("slowest: " + ", ".join(f"{r.case.name} {r.seconds:.1f}s" for r in slow))
    return 0


def _render(record: dict[str, Any]) -> list[str]:
    """One invocation as stable lines for a unified diff (each file under its own name)."""
    lines = [f"argv: {json.dumps(record['argv'], ensure_ascii=False)}", f"exit_code: {record['exit_code']}"]
    for key in ("stdout", "stderr"):
        value = record[key]
        if "text" in value:
            lines += [f"{key}:", *("  " + line for line in value["text"].splitlines())]
        else:
            lines += [
                f"{key} ({value['layout']}):",
                *json.dumps(value["json"], indent=1, ensure_ascii=False).splitlines(),
            ]
    for name, rec in record["files"].items():
        head = {k: v for k, v in rec.items() if k not in {"text", "json"}}
        lines.append(f"file {name}: {json.dumps(head, ensure_ascii=False)}")
        if "text" in rec:
            lines += ["  " + line for line in rec["text"].splitlines()]
        if "json" in rec:
            lines += json.dumps(rec["json"], indent=1, ensure_ascii=False).splitlines()
    return lines


def _renamed(text: str, renames: Sequence[tuple[str, str]]) -> str:
    """``text`` with each old name replaced by the new one, in lower, Title and UPPER case."""
    for old, new in renames:
        for case in (str.lower, str.capitalize, str.upper):
            text = text.replace(case(old), case(new))
    return text


def _by_name(path: Path, renames: Sequence[tuple[str, str]] = ()) -> dict[str, dict[str, Any]]:
    doc = json.loads(_renamed(path.read_text(encoding="utf-8"), renames))
    return {r["name"]: r for r in doc["invocations"]}


def compare(before_path: Path, after_path: Path, renames: Sequence[tuple[str, str]] = ()) -> int:
    """Diff two snapshots; ``renames`` (old, new) apply to the first, so a rename alone shows nothing."""
    before, after = _by_name(before_path, renames), _by_name(after_path)
    differing = 0
    for name in [*before, *(n for n in after if n not in before)]:
        if name not in after or name not in before:
            differing += 1
            print(f"=== {name}: only in {before_path if name in before else after_path}")
            continue
        a, b = _render(before[name]), _render(after[name])
        if a != b:
            differing += 1
            print(f"=== {name}")
            sys.stdout.writelines(
                line + "\n"
                for line in difflib.unified_diff(a, b, str(before_path), str(after_path), lineterm="")
            )
    total = len(set(before) | set(after))
    print(
        f"{differing} of {total} invocations differ" if differing else f"all {total} invocations are the same"
    )
    return 1 if differing else 0


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--src", type=Path, default=Path("src"), help="tree whose bridgepack runs (PYTHONPATH)"
    )
    parser.add_argument("--out", type=Path, help="the JSON snapshot to write")
    parser.add_argument("--jobs", type=int, default=2, help="invocations run at once (default 2)")
    parser.add_argument(
        "--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="diff two snapshots"
    )
    parser.add_argument(
        "--rename",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="with --compare: a name BEFORE spells OLD and AFTER spells NEW (e.g. seqpack=bridgepack)",
    )
    args = parser.parse_args(argv)
    if any("=" not in r for r in args.rename):
        parser.error("--rename takes OLD=NEW")
    if args.compare is None and args.out is None:
        parser.error("give --out PATH (or --compare BEFORE AFTER)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if args.compare is not None:
        before, after = args.compare
        renames = [(r.split("=", 1)[0], r.split("=", 1)[1]) for r in args.rename]
        return compare(before, after, renames)
    return snapshot(args.src, args.out, max(1, args.jobs))


if __name__ == "__main__":
    raise SystemExit(main())
