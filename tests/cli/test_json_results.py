"""Every command's ``--format json`` is one library result's ``to_dict()``, its ``schema_version`` first.

The commands are discovered from the Typer app (every command with a ``--format`` option), so a command
added later without a case here fails :func:`test_every_json_command_has_a_case`. Each case runs the
command for real, in-process, with ``emit_json`` watched in every CLI module: the command must hand it
exactly one :class:`bridgepack.results.JsonResult`, and stdout must be that result's ``to_dict()`` and
nothing else -- the CLI adds, drops or renames nothing, and the version is the one the result's class
states.
"""

from __future__ import annotations

import ast
import importlib
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
import typer
import yaml

import bridgepack.cli
from _support import peers
from _support.byte_bpe import build_byte_bpe
from bridgepack.cli import main
from bridgepack.cli._commands import COMMAND_MODULES
from bridgepack.results import JsonResult
from correlate.test_plan import SPEC, with_field
from curves._lines import mlm_line

EOS = 2
VOCAB = 64
PACK_SIZE = 64


def _json_commands() -> set[tuple[str, ...]]:
    """The path of every command (``("curves", "show")``) that has a ``--format`` option."""
    found: set[tuple[str, ...]] = set()

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))
        if getattr(command, "commands", None) is None and any(
            "--format" in getattr(p, "opts", ()) for p in command.params
        ):
            found.add(path)

    walk(typer.main.get_command(bridgepack.cli.app), ())
    return found


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real inputs for every case: samples packed by ``bridgepack pack``, a tokenizer, logs, a spec, a folder
    to clean."""
    root = tmp_path_factory.mktemp("json")
    rng = np.random.default_rng(5)
    lines = []
    for _ in range(60):
        length = int(rng.integers(2, 40))
        ids = [*rng.integers(3, VOCAB, size=length).tolist(), EOS]
        prompt = int(rng.integers(0, length))
        mask = [0] * prompt + [1] * (length + 1 - prompt)
        lines.append(orjson.dumps({"input_ids": ids, "loss_mask": mask}))
    samples = root / "ids.jsonl"
    samples.write_bytes(b"\n".join(lines) + b"\n")
    out = root / "packed"
    assert main(["pack", str(samples), "-o", str(out), "-n", str(PACK_SIZE), "-j", "1", "-q"]) == 0
    log = root / "a.log"
    log.write_text("\n".join(mlm_line(it, 10.0 - it / 10) for it in range(1, 6)) + "\n")
    spec, blocked = root / "spec.yaml", root / "blocked.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    blocked.write_text(yaml.safe_dump(with_field("seed", "data", 99)))
    checkpoint = root / "clean" / "nemo_experiments" / "default" / "checkpoints" / "iter_0000005"
    checkpoint.mkdir(parents=True)
    (checkpoint / "w.bin").write_bytes(b"x" * 100)
    return {
        "root": root,
        "samples": samples,
        "packed": out / f"training_{PACK_SIZE}.idx.parquet",
        "tokenizer": build_byte_bpe(["a b c", "hello there"], root / "tok", vocab_size=280),
        "log": log,
        "spec": spec,
        "blocked": blocked,
        "clean": root / "clean",
    }


def _bridge_wheel() -> str:
    peers.bridge_wheel_root()  # downloads the wheel into the cache (or skips / fails in CI)
    wheels = sorted((peers.CACHE_DIR / "wheels").glob(f"megatron_bridge-{peers.BRIDGE_VERSION}-*.whl"))
    if not wheels:
        pytest.skip("the megatron-bridge wheel is not in the test cache")
    return str(wheels[0])


def _cat(f: dict[str, Path]) -> str:
    """A command that prints the training log (what ``correlate run`` tees and compares)."""
    return shlex.quote(f"cat {f['log']}")


Argv = Callable[[dict[str, Path]], str]
#: Per command path, the invocations of its JSON paths (shell words; ``{name}`` is a path of :func:`files`).
CASES: dict[tuple[str, ...], list[Argv]] = {
    ("pack",): [lambda f: f"pack {f['samples']} -o {f['root']}/again -n 64 -j 1 --tp 2 --sequence-parallel"],
    ("inspect",): [
        lambda f: f"inspect {f['packed']} --dp 2 --gbs 2",
        lambda f: f"inspect {f['packed']} --decode 2 --tokenizer {f['tokenizer']}",
    ],
    ("plan",): [lambda f: f"plan {f['samples']} --pack-sizes 64,128 --dp 2 -j 1"],
    ("doctor",): [lambda f: "doctor --cp 2 --seq-length 510 --mbs 1 --gbs 8 --world-size 8 --fix"],
    ("translate", "mlm-to-bridge"): [lambda f: "translate mlm-to-bridge -- --seq-length 4096 --no-such"],
    ("translate", "bridge-to-mlm"): [lambda f: "translate bridge-to-mlm model.seq_length=4096 no.such=1"],
    ("curves", "compare"): [lambda f: f"curves compare {f['log']} {f['log']} -t exact"],
    ("curves", "show"): [lambda f: f"curves show {f['log']}"],
    ("curves", "export"): [lambda f: f"curves export {f['log']} --golden {f['root']}/g.json --overwrite"],
    ("correlate", "plan"): [
        lambda f: f"correlate plan --spec {f['spec']}",
        lambda f: f"correlate plan --spec {f['spec']} --out {f['root']}/runs",
        lambda f: f"correlate plan --spec {f['blocked']}",
        lambda f: "correlate plan --from-skill",
    ],
    ("correlate", "run"): [lambda f: f"correlate run --a {_cat(f)} --b {_cat(f)} --out {f['root']}/pairs -q"],
    ("train",): [lambda f: f"train --data {f['packed']} --steps 1 --gbs 2 --vocab {VOCAB} --quiet"],
    ("diff",): [lambda f: f"diff {f['packed']} {f['packed']}"],
    ("fingerprint",): [
        lambda f: f"fingerprint {f['packed']}",
        lambda f: f"fingerprint {f['packed']} --check",
    ],
    ("env",): [lambda f: "env"],
    ("verify",): [lambda f: f"verify --bridge --bridge-wheel {_bridge_wheel()} --samples 50 --pack-size 64"],
    ("clean",): [lambda f: f"clean {f['clean']}"],
    ("demo",): [lambda f: f"demo --quick --out {f['root']}/demo --overwrite -q"],
}
#: Cases that download a peer wheel or take a minute.
MARKS = {("verify",): [pytest.mark.network], ("demo",): [pytest.mark.slow]}


def test_every_json_command_has_a_case() -> None:
    assert set(CASES) == _json_commands()


@pytest.fixture
def emitted(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What every CLI module hands ``emit_json`` (which still writes it)."""
    for name in [*COMMAND_MODULES, "_decode_view"]:
        importlib.import_module(f"bridgepack.cli.{name}")
    original = bridgepack.cli._common.emit_json
    seen: list[Any] = []

    def watched(result: Any) -> None:
        seen.append(result)
        original(result)

    for name, module in list(sys.modules.items()):
        if name.startswith("bridgepack.cli") and getattr(module, "emit_json", None) is original:
            monkeypatch.setattr(module, "emit_json", watched)
    return seen


@pytest.mark.parametrize(
    ("path", "argv"),
    [
        pytest.param(path, argv, id=f"{' '.join(path)}-{n}", marks=MARKS.get(path, []))
        for path, argvs in CASES.items()
        for n, argv in enumerate(argvs)
    ],
)
def test_json_is_the_results_to_dict(
    path: tuple[str, ...],
    argv: Argv,
    files: dict[str, Path],
    emitted: list[Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if path == ("verify",):  # the config part needs an importable Megatron-Core: skipped, never run here
        from bridgepack.verify import _bridge_config

        monkeypatch.setattr(_bridge_config, "_installed_mcore_training", lambda: None)
    words = shlex.split(argv(files))
    at = words.index("--") if "--" in words else len(words)  # flags after -- belong to the command's input
    main([*words[:at], "--format", "json", *words[at:]])
    out = capsys.readouterr().out
    assert len(emitted) == 1, f"{argv(files)}: {len(emitted)} results emitted"
    result = emitted[0]
    assert isinstance(result, JsonResult) and isinstance(type(result).SCHEMA_VERSION, int)
    doc = orjson.loads(out)  # one document, nothing before or after it
    assert doc == orjson.loads(orjson.dumps(result.to_dict(), option=orjson.OPT_SERIALIZE_NUMPY))
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == type(result).SCHEMA_VERSION


def test_no_cli_module_shapes_json() -> None:
    """Only ``bridgepack.cli._common`` (``emit_json``) imports a JSON library: the documents are the
    library's."""
    cli_dir = Path(bridgepack.cli.__file__).parent
    shaping = []
    for source in sorted(cli_dir.glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] in ("json", "orjson") for n in names):
                shaping.append(source.name)
    assert shaping == ["_common.py"]
