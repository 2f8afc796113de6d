"""``bridgepack demo --quick`` end to end: the files, the self-contained report, the summary, the exit
codes."""

from __future__ import annotations

import base64
import contextlib
import io
import re
import shlex
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import orjson
import pytest

from _support import doc_pages, fenced_blocks
from bridgepack.cli import main
from bridgepack.curves import read_curves
from bridgepack.data.packed import PackedReader
from bridgepack.demo import STEPS, DemoPaths, DemoResult, StepResult
from bridgepack.demo._paths import prepare_out_dir
from bridgepack.errors import UsageError

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STEP_NAMES = [name for name, _ in STEPS]


def _run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def json_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("demo") / "out"
    code, stdout = _run(["demo", "--quick", "--out", str(out), "--format", "json", "--quiet"])
    return code, orjson.loads(stdout), out


def test_quick_run_passes_and_writes_every_file(json_run: tuple[int, dict[str, Any], Path]) -> None:
    code, doc, out = json_run
    assert code == 0
    paths = DemoPaths(out, doc["sizes"]["pack_size"])
    for path in (
        paths.tokenizer / "tokenizer.json",
        paths.packed,
        paths.metadata,
        paths.config,
        paths.fixed_config,
        paths.log("packed"),
        paths.log("padded"),
        paths.curves_png,
        paths.packing_png,
        paths.report,
        paths.summary,
    ):
        assert path.is_file(), path
    assert not list(out.rglob(".bridgepack-tmp-*"))


def test_summary_json(json_run: tuple[int, dict[str, Any], Path]) -> None:
    _, doc, out = json_run
    assert doc["schema_version"] == 1
    assert doc["command"] == "demo"
    assert doc["passed"] is True and doc["interrupted"] is False
    assert [s["name"] for s in doc["steps"]] == STEP_NAMES
    assert all(s["ok"] for s in doc["steps"])
    assert doc["sizes"]["name"] == "quick"
    assert doc["report"] == str(out / "report.html")
    # What --format json prints is what summary.json holds.
    assert orjson.loads((out / "summary.json").read_bytes()) == doc
    steps = {s["name"]: s["data"] for s in doc["steps"]}
    packed, padded = steps["train packed"], steps["train padded"]
    # Same samples, same steps: the same real tokens and losses, padded computes many more slots.
    assert packed["real_tokens"] == padded["real_tokens"]
    assert packed["steps"] == padded["steps"] == doc["sizes"]["steps"]
    assert padded["positions"] > packed["positions"]
    assert doc["speedup"]["padding_fraction"]["padded"] > doc["speedup"]["padding_fraction"]["packed"]
    assert doc["speedup"]["compute_ratio"] == padded["positions"] / packed["positions"]
    assert doc["speedup"]["real_tokens_per_s"] > 0
    assert steps["curves"]["passed"] is True
    assert steps["doctor"]["expected_finding"] in [f["id"] for f in steps["doctor"]["findings"]]
    assert steps["doctor"]["fixed_findings"] == []
    assert steps["inspect"]["metadata"] == "consistent"
    assert steps["pack"]["samples"] == 2000


def test_data_and_logs_are_real_outputs(json_run: tuple[int, dict[str, Any], Path]) -> None:
    """The packs are Bridge packed Parquet and the logs are Megatron-LM lines bridgepack curves reads."""
    _, doc, out = json_run
    steps = {s["name"]: s["data"] for s in doc["steps"]}
    reader = PackedReader(out / steps["pack"]["packed"], validate=True)
    try:
        assert reader.num_rows == steps["pack"]["packs"]
    finally:
        reader.close()
    for mode in ("packed", "padded"):
        curves = read_curves(out / steps[f"train {mode}"]["log"])
        losses = curves.metrics["lm loss"].values
        assert len(losses) == steps[f"train {mode}"]["steps"]
        assert losses[-1] < losses[0]


def test_report_is_self_contained(json_run: tuple[int, dict[str, Any], Path]) -> None:
    _, doc, out = json_run
    page = (out / "report.html").read_text(encoding="utf-8")
    assert (
        "http://" not in page and "https://" not in page and "//" not in re.sub(r"base64,[^'\"]+", "", page)
    )
    assert "<script" not in page and "<link" not in page and "url(" not in page
    images = re.findall(r"<img [^>]*src='([^']*)'", page)
    assert len(images) == 2
    for src in images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_MAGIC)
    assert "SP005" in page
    speedup = doc["speedup"]["real_tokens_per_s"]
    assert f"{speedup:.1f}x" in page
    assert "match" in page


class _Page(HTMLParser):
    """The report's tables (header cells per table) and ``<pre class=cmd>`` text, as a browser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: list[list[str]] = []
        self.commands = ""
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.headers.append([])
        elif tag == "th":
            self.headers[-1].append("")
            self._in = "th"
        elif tag == "pre" and ("class", "cmd") in attrs:
            self._in = "cmd"

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "pre"):
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "th":
            self.headers[-1][-1] += data
        elif self._in == "cmd":
            self.commands += data


def test_report_tables_have_headers_and_commands_paste_as_run(
    json_run: tuple[int, dict[str, Any], Path],
) -> None:
    _, doc, out = json_run
    page = _Page()
    page.feed((out / "report.html").read_text(encoding="utf-8"))
    assert len(page.headers) >= 4
    for header in page.headers:
        assert header and all(cell.strip() for cell in header), header
    assert "tokens/s (all slots) counts every position" in (out / "report.html").read_text(encoding="utf-8")
    blocks = [b for b in page.commands.split("\n\n") if b.strip()]
    wanted = [step["command"] for step in doc["steps"] if step["command"]]
    assert len(blocks) == len(wanted) + 1  # + the doctor's run on the fixed config
    for block, command in zip(blocks, wanted, strict=False):
        comment, _, text = block.partition("\n")
        assert comment.startswith("# ") and "'\"'\"'" not in text
        for line in text.splitlines():
            words = line.rstrip(" \\").split()
            # Longer than 80 only where one path is (alone, or as an option's value): nothing to break.
            assert len(line) <= 80 or len(words) == 1 or (len(words) == 2 and words[0].startswith("--"))
        # A real shell reads the wrapped command as the same words as the one-line command.
        shell = subprocess.run(
            ["bash", "-c", f"printf '%s\\0' {text.split(maxsplit=1)[1]}"],
            capture_output=True,
            check=True,
        )
        assert shell.stdout.decode().split("\0")[:-1] == shlex.split(command)[1:]


#: docs/demo.md's `--quick` run, word for word (the docs test only parses it).
PAGE_COMMANDS = doc_pages.pinned_by(__file__)


@pytest.mark.parametrize("cmd", PAGE_COMMANDS, ids=doc_pages.command_id)
def test_the_pages_quick_run_and_a_second_run_into_its_folder(
    cmd: fenced_blocks.Command,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What docs/demo.md shows (progress on stderr, the text summary), then the same folder again: refused
    without --overwrite, and with it the demo's files replaced, nothing else there touched."""
    monkeypatch.chdir(tmp_path)
    code, out, err = doc_pages.run_in_process(cmd, capsys)
    assert doc_pages.broken_promises(cmd, code, err + out) == []
    assert "every step did what it should" in out and all(name in out for name in STEP_NAMES)
    made = tmp_path / "demo-out"
    assert main(["demo", "--quick", "--quiet", "--out", str(made)]) == 2
    assert main(["demo", "--quick", "--quiet", "--out", str(made), "--overwrite"]) == 0
    assert len(orjson.loads((made / "packed" / "512_metadata.jsonl").read_bytes())) == 1
    assert [p.name for p in tmp_path.iterdir()] == [made.name]


def test_without_out_the_demo_writes_a_new_folder_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --out: the folder the run prepares is a new bridgepack-demo-<time> in the working directory (stopped
    there: the steps are the other tests' business)."""
    from bridgepack.demo import _run

    prepared: list[Path] = []

    def stop_at_the_folder(out: Path, *, overwrite: bool) -> None:
        prepared.append(out)
        raise UsageError("stopped by the test")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_run, "prepare_out_dir", stop_at_the_folder)
    assert main(["demo", "--quick", "--quiet"]) == 2
    assert "stopped by the test" in capsys.readouterr().err
    (out,) = prepared
    assert out.resolve().parent == tmp_path.resolve() and out.name.startswith("bridgepack-demo-")
    assert not out.exists()


def test_refuses_a_non_empty_out_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_out_dir_rules(tmp_path: Path) -> None:
    prepare_out_dir(tmp_path / "new" / "deeper", overwrite=False)
    assert (tmp_path / "new" / "deeper").is_dir()
    prepare_out_dir(tmp_path / "new" / "deeper", overwrite=False)  # empty: fine
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="is a file, expected a directory"):
        prepare_out_dir(tmp_path / "file", overwrite=True)
    with pytest.raises(UsageError, match="overwrite"):
        prepare_out_dir(tmp_path, overwrite=False)
    prepare_out_dir(tmp_path, overwrite=True)
    assert (tmp_path / "file").read_text() == "x"


def test_a_failed_step_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exit code follows the steps: one that did not do what it should makes the demo exit 1."""
    from bridgepack.cli import demo as cli_demo
    from bridgepack.demo import QUICK

    def fake_run(options: Any, reporter: Any) -> DemoResult:
        result = DemoResult(paths=DemoPaths(tmp_path, QUICK.pack_size), sizes=QUICK, threads=1)
        result.steps.append(StepResult("curves", False, 0.1, "packed vs padded: MISMATCH"))
        return result

    monkeypatch.setattr(cli_demo, "run_demo", fake_run)
    code, stdout = _run(["demo", "--quick", "--out", str(tmp_path)])
    assert code == 1
    assert "MISMATCH" in stdout


def test_bad_threads_is_usage_error(tmp_path: Path) -> None:
    assert main(["demo", "--quick", "--threads", "0", "--out", str(tmp_path / "o")]) == 2


def test_report_of_a_run_that_stopped_early(tmp_path: Path) -> None:
    """A run that ended early (interrupted, or a step that failed) still renders, and says so."""
    from bridgepack.demo import QUICK
    from bridgepack.demo._report import render_packing_png, render_report

    result = DemoResult(paths=DemoPaths(tmp_path, QUICK.pack_size), sizes=QUICK, threads=1, interrupted=True)
    result.steps.append(StepResult("tokenizer", True, 0.1, "85 tokens"))
    result.steps.append(StepResult("pack", False, 0.2, "something went wrong"))
    png = render_packing_png(result)
    assert png.startswith(PNG_MAGIC)
    page = render_report(result, packing_png=png)
    assert "Stopped on request" in page and "FAILED" in page
    assert "https://" not in page and "<script" not in page


def test_default_out_dir_is_new(tmp_path: Path) -> None:
    from bridgepack.demo import default_out_dir

    first = default_out_dir(tmp_path)
    first.mkdir()
    second = default_out_dir(tmp_path)
    assert second != first and not second.exists()
    assert second.name.startswith("bridgepack-demo-")


def test_missing_extras_are_named_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from bridgepack.demo import DemoOptions, run_demo

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "matplotlib" else real(name)
    )
    with pytest.raises(UsageError, match=r"matplotlib: pip install 'bridgepack\[demo\]'"):
        run_demo(DemoOptions(out=tmp_path / "out", quick=True))
    assert not (tmp_path / "out").exists()


def test_an_unknown_language_is_refused_before_any_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--lang", "xx", "--quiet"]) == 2
    assert "--lang 'xx': expected one of en, zh" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("path_length", [20, 40, 60, 70, 76, 90])
def test_wrapped_commands_keep_to_the_width_wherever_a_path_is_long(path_length: int) -> None:
    """Every printed line (a continuation's indent and the trailing ``\\`` counted) holds 78 columns, or is
    one unit (an option and its value) that cannot break; the shell reads the same words back."""
    from bridgepack.demo._report import wrap_command

    path = "/" + "d" * (path_length - 1)
    command = (
        f"bridgepack pack {path}/chat.jsonl --out {path}/packed --pack-size 512 --tokenizer {path}/tok -q"
    )
    wrapped = wrap_command(command)
    for line in wrapped.splitlines():
        unit = line.strip().removesuffix("\\").strip()
        assert len(line) <= 78 or len(shlex.split(unit)) <= 2, line
    assert shlex.split(wrapped.replace("\\\n", " ")) == shlex.split(command)
