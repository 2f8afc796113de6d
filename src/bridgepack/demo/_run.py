"""``run_demo``: the whole bridgepack path on the bundled data, step by step, with a report at the end.

::

    tokenizer -> pack -> inspect -> doctor -> train packed -> train padded -> curves -> report

A step that runs but does not do what it should (metadata inconsistent, the config's deliberate mistake
not found or its fix not passing, a loss that does not fall, packed and padded curves that differ) is
recorded as failed and the run goes on, so the report shows what happened; ``passed`` is false then.
Errors in the input (a :class:`~bridgepack.errors.BridgepackError`) stop the run as everywhere else in
bridgepack.
Ctrl-C during training stops after the current optimizer step; the run ends there (``interrupted``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import orjson

from bridgepack._io import atomic_write_bytes
from bridgepack.demo import _steps
from bridgepack.demo._paths import DemoPaths, default_out_dir, prepare_out_dir
from bridgepack.demo._report import render_packing_png, render_report
from bridgepack.demo._resources import EXPECTED_FINDING, config_path, dataset_path
from bridgepack.demo._result import DemoResult, StepResult, relative
from bridgepack.demo._sizes import FULL, QUICK
from bridgepack.errors import UsageError, param
from bridgepack.train import DataMode, StepRecord

#: The steps in order, with the title progress displays show.
STEPS: tuple[tuple[str, str], ...] = (
    ("tokenizer", "build a tokenizer from the conversations"),
    ("pack", "pack the conversations"),
    ("inspect", "inspect the packs"),
    ("doctor", "doctor a Bridge config"),
    ("train packed", "train on the packs"),
    ("train padded", "train on the same samples, padded"),
    ("curves", "compare the loss curves"),
    ("report", "write the report"),
)
#: The tokenizer step as a command (there is no ``bridgepack`` command for it: it is a helper for
#: demos/tests).
#: Several lines and no single quote, so the quoted ``python -c '...'`` argument reads as the code it runs.
TOKENIZER_SNIPPET = """
import json, sys
from bridgepack.demo import build_tokenizer
lines = open(sys.argv[1])
texts = [m["content"] for line in lines for m in json.loads(line)["messages"]]
build_tokenizer(texts, sys.argv[2], split_digits=True)
"""
#: Torch threads by default: the tiny model's matrices are too small to gain from more, and one thread
#: keeps both runs' timings steady on a shared or busy machine (``--threads`` changes it).
DEFAULT_THREADS = 1


@dataclass(frozen=True)
class DemoOptions:
    """What ``bridgepack demo`` takes."""

    out: Path | None = None
    overwrite: bool = False
    quick: bool = False
    threads: int = DEFAULT_THREADS
    lang: str = "en"
    #: A local Hugging Face tokenizer with a chat template, used instead of the one built from the data.
    tokenizer: Path | None = None


class Reporter(Protocol):
    """Progress of a run: the CLI shows it on stderr; the default shows nothing."""

    def begin(self, index: int, total: int, name: str, title: str, work: int | None) -> None: ...

    def advance(self, amount: int = 1, note: str | None = None) -> None: ...

    def end(self, step: StepResult) -> None: ...


class SilentReporter:
    def begin(self, index: int, total: int, name: str, title: str, work: int | None) -> None:
        return None

    def advance(self, amount: int = 1, note: str | None = None) -> None:
        return None

    def end(self, step: StepResult) -> None:
        return None


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Run with ``threads`` intra-op threads, restoring the previous setting afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%" if math.isfinite(x) else "n/a"


class Outcome(NamedTuple):
    """What a step body reports: did it do what it should, a one-line account, the CLI equivalent, data."""

    ok: bool
    summary: str
    command: str | None
    data: dict[str, Any]


class _Run:
    """Runs the steps in order, timing each and telling the reporter."""

    def __init__(self, result: DemoResult, reporter: Reporter, options: DemoOptions) -> None:
        self.result = result
        self.reporter = reporter
        self.options = options
        self.index = 0

    @property
    def paths(self) -> DemoPaths:
        return self.result.paths

    def rel(self, path: Path) -> str:
        return relative(path, self.paths.root)

    def step(self, name: str, work: int | None, body: Callable[[], Outcome]) -> None:
        title = dict(STEPS)[name]
        self.index += 1
        self.reporter.begin(self.index, len(STEPS), name, title, work)
        start = time.perf_counter()
        outcome = body()
        step = StepResult(name, outcome.ok, time.perf_counter() - start, *outcome[1:])
        self.result.steps.append(step)
        self.reporter.end(step)

    # -- the steps ------------------------------------------------------------------------------------

    def tokenizer(self) -> Outcome:
        if self.result.artefacts.tokenizer is not None:  # --tokenizer DIR, checked before the run
            out = self.result.artefacts.tokenizer
            summary = f"{out.path}: {out.size:,} ids, chat template; ids present remapped after packing"
            return Outcome(True, summary, None, {"path": str(out.path), "tokens": out.size})
        out = _steps.make_tokenizer(dataset_path(), self.paths)
        self.result.artefacts.tokenizer = out
        summary = f"{out.size} tokens (words, punctuation, digits); model vocabulary {out.vocab}"
        cli = _steps.command("python", "-c", TOKENIZER_SNIPPET, dataset_path(), out.path)
        return Outcome(
            True, summary, cli, {"path": self.rel(out.path), "tokens": out.size, "model_vocab": out.vocab}
        )

    def pack(self) -> Outcome:
        result, cli = _steps.pack(
            dataset_path(), self.paths, self.result.sizes, overwrite=self.options.overwrite
        )
        self.result.artefacts.pack = result
        c, meta = result.counts, result.metadata.bridge_values()
        fit = "all fit" if not c.truncated else f"{c.truncated} truncated to fit"
        summary = (
            f"{c.samples_in:,} chats -> {result.num_packs} packs of {result.pack_size}, "
            f"{meta['packing_efficiency']}% full, {meta['packing_factor']} per pack; {fit}"
        )
        remap = None
        if self.paths.user_tokenizer is not None:
            tokenizer = _steps.remap_vocabulary(self.paths, overwrite=self.options.overwrite)
            self.result.artefacts.tokenizer = tokenizer
            summary += f"; {tokenizer.size:,} ids present, remapped to a vocabulary of {tokenizer.vocab:,}"
            remap = {**tokenizer.remap.to_dict(), "model_vocab": tokenizer.vocab} if tokenizer.remap else None
        data = {
            "samples": c.samples_in,
            "truncated": c.truncated,
            "rejected": c.rejected,
            "sequences": c.sequences,
            "packs": result.num_packs,
            "pack_size": result.pack_size,
            "packing_efficiency": meta["packing_efficiency"],
            "packing_factor": meta["packing_factor"],
            "padding_tokens": result.padding_tokens,
            "packed": self.rel(result.packed_path),
            "metadata": self.rel(result.metadata_path),
            "rejects": self.rel(result.rejects_path),
            "vocab_remap": remap,
        }
        ok = c.packed == c.samples_in
        return Outcome(ok, summary, cli, data)

    def inspect(self) -> Outcome:
        out = _steps.inspect(self.paths)
        self.result.artefacts.inspect = out
        s = out.stats
        lengths = {f"p{q}": s.length_percentile(q) for q in (50, 90, 99)}
        status = "consistent" if not out.mismatches else "MISMATCH"
        summary = (
            f"rows valid, metadata {status}; lengths "
            + " ".join(f"{k} {v}" for k, v in lengths.items())
            + f" max {s.dataset_max_seqlen}"
        )
        data = {
            "packs": s.packs,
            "sequences": s.sequences,
            "runtime_tokens": s.runtime_tokens,
            "efficiency_percent": round(s.efficiency(self.result.sizes.pack_size), 2),
            "runtime_length": {**lengths, "max": s.dataset_max_seqlen},
            "max_sequences_per_pack": s.max_samples_per_bin,
            "metadata": status.lower(),
            "mismatches": [m.__dict__ for m in out.mismatches],
        }
        return Outcome(not out.mismatches, summary, out.command, data)

    def doctor(self) -> Outcome:
        out = _steps.doctor(
            config_path(), self.paths, lang=self.options.lang, overwrite=self.options.overwrite
        )
        self.result.artefacts.doctor = out
        found = ", ".join(f"{f.id} {f.severity}" for f in out.written.findings) or "nothing"
        after = ", ".join(f"{f.id} {f.severity}" for f in out.fixed.findings) or "no findings"
        summary = f"as written: {found}; fixed ({len(out.fixes)} overrides): {after}"
        if not out.found_expected:
            summary += f" (expected {EXPECTED_FINDING} was not found)"
        data = {
            "config": self.rel(self.paths.config),
            "expected_finding": EXPECTED_FINDING,
            "findings": [f.to_dict() for f in out.written.findings],
            "fix": out.fixes,
            "fixed_config": self.rel(self.paths.fixed_config),
            "fixed_findings": [f.to_dict() for f in out.fixed.findings],
            "fixed_command": out.fixed_command,
        }
        return Outcome(out.found_expected and out.fixed_passes, summary, out.command, data)

    def train(self, mode: DataMode) -> Outcome:
        tokenizer = self.result.artefacts.tokenizer
        assert tokenizer is not None

        def on_step(record: StepRecord) -> None:
            self.reporter.advance(1, f"loss {record.loss:.3f}")

        result, cli = _steps.run_training(
            self.paths,
            self.result.sizes,
            tokenizer.vocab,
            mode,
            overwrite=self.options.overwrite,
            on_step=on_step,
        )
        self.result.artefacts.train[mode] = result
        self.result.interrupted = result.interrupted
        first = result.losses[0] if result.losses else math.nan
        summary = (
            f"{result.steps_done} steps, loss {first:.3f} -> {result.final_loss:.3f}, "
            f"{result.real_tokens_per_s:,.0f} real tok/s, padding {_pct(result.padding_fraction)}"
        )
        if result.interrupted:
            summary += f" (stopped on request after step {result.steps_done} of {result.steps_planned})"
        data = {
            "steps": result.steps_done,
            "parameters": result.parameters,
            "first_loss": first,
            "final_loss": result.final_loss,
            "positions": result.positions,
            "real_tokens": result.real_tokens,
            "padding_fraction": result.padding_fraction,
            "tokens_per_s": result.tokens_per_s,
            "real_tokens_per_s": result.real_tokens_per_s,
            "seconds": result.seconds,
            "log": self.rel(self.paths.log(mode.value)),
        }
        return Outcome(not result.interrupted and _steps.loss_fell(result), summary, cli, data)

    def curves(self) -> Outcome:
        out = _steps.compare(self.paths, overwrite=self.options.overwrite)
        self.result.artefacts.curves = out
        numbers = _steps.comparison_numbers(out.comparison)
        verdict = "match" if out.passed else "MISMATCH"
        summary = (
            f"packed vs padded: {verdict} under {numbers['profile']}, {numbers['shared_steps']} steps, "
            f"max |diff| {numbers['max_abs_diff']:.2g}"
            if isinstance(numbers["max_abs_diff"], float)
            else f"packed vs padded: {verdict} under {numbers['profile']}"
        )
        return Outcome(out.passed, summary, out.command, {**numbers, "plot": self.rel(self.paths.curves_png)})

    def report(self) -> Outcome:
        png = render_packing_png(self.result)
        atomic_write_bytes(self.paths.packing_png, png, overwrite=self.options.overwrite)
        page = render_report(self.result, packing_png=png)
        atomic_write_bytes(self.paths.report, page.encode(), overwrite=self.options.overwrite)
        return Outcome(
            True,
            f"{self.rel(self.paths.report)} ({len(page) / 1024:,.0f} KiB)",
            None,
            {"path": self.rel(self.paths.report)},
        )


#: What the steps import beyond bridgepack's core (the ``demo`` extra).
NEEDED_MODULES = ("torch", "transformers", "tokenizers", "jinja2", "matplotlib")


def check_extras() -> None:
    """Say what to install before anything is written, instead of failing halfway with an ImportError."""
    missing = [name for name in NEEDED_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(
            f"bridgepack demo needs {', '.join(missing)}: pip install 'bridgepack[demo]' (CPU: torch==2.13.0)"
        )


def run_demo(options: DemoOptions, reporter: Reporter | None = None) -> DemoResult:
    """Run every step on the bundled data under ``options.out`` and return what happened."""
    if options.threads < 1:
        raise UsageError(f"{param('threads')} must be >= 1, got {options.threads}")
    check_extras()
    sizes = QUICK if options.quick else FULL
    out = options.out if options.out is not None else default_out_dir()
    user = _steps.user_tokenizer(options.tokenizer) if options.tokenizer is not None else None
    prepare_out_dir(out, overwrite=options.overwrite)
    paths = DemoPaths(out, sizes.pack_size, options.tokenizer)
    result = DemoResult(paths=paths, sizes=sizes, threads=options.threads)
    result.artefacts.tokenizer = user
    run = _Run(result, reporter or SilentReporter(), options)
    start = time.perf_counter()
    with torch_threads(options.threads):
        run.step("tokenizer", None, run.tokenizer)
        run.step("pack", None, run.pack)
        run.step("inspect", None, run.inspect)
        run.step("doctor", None, run.doctor)
        pack = result.artefacts.pack
        assert pack is not None
        steps = _steps.planned_steps(sizes, pack.num_packs)
        for mode in (DataMode.packed, DataMode.padded):
            run.step(f"train {mode.value}", steps, functools.partial(run.train, mode))
            if result.interrupted:
                break
        if not result.interrupted:
            run.step("curves", None, run.curves)
            run.step("report", None, run.report)
    result.seconds = time.perf_counter() - start
    write_summary(result, overwrite=options.overwrite)
    return result


def write_summary(result: DemoResult, *, overwrite: bool) -> None:
    """``summary.json``: the document ``--format json`` prints."""
    doc = orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) + b"\n"
    atomic_write_bytes(result.paths.summary, doc, overwrite=overwrite)
