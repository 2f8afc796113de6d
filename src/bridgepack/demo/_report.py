"""The demo's report: one HTML file with everything inline (styles, PNGs as ``data:`` URIs, no scripts, no
external links), so it opens anywhere, offline, and can be mailed or attached to a ticket as it is.

::

    bridgepack demo -- verdict, when, where, how big
    [speed-up] [padding] [same curves] [doctor]      headline numbers
    steps table                                      one line per step, with its time
    loss curves (PNG from bridgepack.curves)            packed vs padded and their difference
    packing (PNG) + statistics                       sample lengths; compute spent on real tokens vs padding
    training runs table, doctor findings and fix
    the same steps by hand (bridgepack commands), files
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import platform
import shlex
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from bridgepack import __version__
from bridgepack.demo._result import DemoResult, relative
from bridgepack.train import DataMode, TrainResult

#: Width of the sample-length histogram's bins, in tokens.
LENGTH_BIN = 16

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;color:#222;
line-height:1.45;padding:0 1em}
h1{margin-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#1a7f37;font-weight:600}.bad{color:#c62828;font-weight:600}.muted{color:#666}
.cards{display:flex;flex-wrap:wrap;gap:1em;margin:1.2em 0}.card{border:1px solid #ddd;border-radius:8px;
padding:.8em 1em;flex:1 1 220px}.card .big{font-size:1.8em;font-weight:700}
pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font-size:.88em}img{max-width:100%}
pre.cmd{white-space:pre-wrap;overflow-wrap:anywhere}
code{background:#f6f8fa;padding:0 .25em}
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _png_tag(png: bytes, alt: str) -> str:
    return f"<img alt='{_e(alt)}' src='data:image/png;base64,{base64.b64encode(png).decode('ascii')}'>"


def _num(x: float | int | None, digits: int = 0) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:,.{digits}f}"


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%" if math.isfinite(x) else "n/a"


def _table(header: Iterable[str], rows: Iterable[Iterable[str]], numeric: Iterable[int] = ()) -> str:
    """A table of already-escaped cells; columns in ``numeric`` are right-aligned."""
    right = set(numeric)
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=num' if i in right else ''}>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


# ---------------------------------------------------------------------------------------------- figures


def render_packing_png(result: DemoResult) -> bytes:
    """Two panels: the sample-length histogram with the pack size, and each run's token slots split into
    real tokens and padding (the compute packing saves)."""
    from bridgepack._plot import pyplot

    plt = pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 2]})
    inspect = result.artefacts.inspect
    if inspect is not None:
        # Bin k holds lengths 16k+1 .. 16k+16, so a sample of exactly the pack size ends at the pack line.
        counts = inspect.stats.length_counts[1:]
        starts = np.arange(0, counts.size, LENGTH_BIN)
        binned = np.add.reduceat(counts, starts) if counts.size else np.zeros(0, np.int64)
        left.bar(starts, binned, width=LENGTH_BIN, align="edge", color="tab:blue", alpha=0.8)
        left.set_yscale("log")
        left.axvline(result.sizes.pack_size, color="tab:red", ls="--", lw=1)
        left.annotate(  # at the top, clear of the few longest samples' bar at the line's foot
            f"pack size {result.sizes.pack_size}",
            xy=(result.sizes.pack_size, 0.95),
            xycoords=("data", "axes fraction"),
            xytext=(-6, 0),
            textcoords="offset points",
            ha="right",
            color="tab:red",
            fontsize=8,
        )
        left.set_xlabel("sample length (runtime tokens)")
        left.set_ylabel("samples")
        left.set_title("sample lengths: a long tail", fontsize=10)
    runs = result.artefacts.train
    names = [mode for mode in (DataMode.packed, DataMode.padded) if mode in runs]
    real = [runs[m].real_tokens for m in names]
    pad = [runs[m].positions - runs[m].real_tokens for m in names]
    y = np.arange(len(names))
    right.barh(y, real, color="tab:green", label="real tokens")
    right.barh(y, pad, left=real, color="lightgrey", label="padding")
    for k, mode in enumerate(names):
        share = _pct(runs[mode].padding_fraction)
        right.annotate(
            f" {share} padding", xy=(runs[mode].positions, k), va="center", fontsize=8, color="dimgrey"
        )
    right.xaxis.set_major_locator(MaxNLocator(4))  # "1,000k" labels run into each other past four
    right.xaxis.set_major_formatter(lambda x, _pos: f"{x / 1000:,.0f}k")
    right.margins(x=0.4)  # room for the "91.5% padding" label after the longest bar
    right.set_yticks(y, [m.value for m in names])
    right.invert_yaxis()
    right.set_xlabel("token slots computed (whole run)")
    right.set_title("compute: real tokens vs padding", fontsize=10)
    right.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------------ sections


def _header(result: DemoResult) -> str:
    import torch

    failed = [s.name for s in result.steps if not s.ok]
    if result.interrupted:
        verdict = "<p class=bad>Stopped on request before the end.</p>"
    elif failed:
        verdict = f"<p class=bad>Did not do what it should: {_e(', '.join(failed))}.</p>"
    else:
        verdict = "<p class=ok>Every step did what it should.</p>"
    facts = (
        f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')} &middot; bridgepack {_e(__version__)} &middot; torch "
        f"{_e(torch.__version__)} &middot; {_e(platform.machine())}, {os.cpu_count()} CPUs, "
        f"{result.threads} torch thread(s) &middot; run size: {_e(result.sizes.name)}"
    )
    return f"<h1>bridgepack demo</h1>{verdict}<p class=muted>{facts}</p>"


def _cards(result: DemoResult) -> str:
    cards = []
    speedup = result.speedup
    runs = result.artefacts.train
    if speedup is not None and speedup.real_tokens_per_s is not None:
        packed, padded = runs[DataMode.packed], runs[DataMode.padded]
        cards.append(
            ("speed-up", f"{speedup.real_tokens_per_s:.1f}x", "real tokens/s, packed "
             f"{_num(packed.real_tokens_per_s)} vs padded {_num(padded.real_tokens_per_s)}")
        )  # fmt: skip
        cards.append(
            ("padding", _pct(speedup.padding_fraction_padded), "of the padded run's compute was padding "
             f"(packed: {_pct(speedup.padding_fraction_packed)}); it computed "
             f"{_num(speedup.compute_ratio, 1)}x the token slots")
        )  # fmt: skip
    curves = result.artefacts.curves
    if curves is not None:
        c = curves.comparison
        word = "same curve" if c.passed else "curves differ"
        diff = float(np.nanmax(c.abs_diff)) if c.steps.size else math.nan
        cards.append(
            (word, f"{diff:.1g}", f"max |packed - padded| loss over {c.steps.size} steps "
             f"(allowed: 1 bf16 ulp, ~{_num(float(np.nanmin(c.allowed)), 3)})")
        )  # fmt: skip
    doctor = result.artefacts.doctor
    if doctor is not None:
        ids = ", ".join(f.id for f in doctor.written.findings) or "none"
        after = "passes" if doctor.fixed_passes else "still has findings"
        cards.append(("doctor", _e(ids), f"found in the config as written; with the fix it {after}"))
    body = "".join(
        f"<div class=card><div class=muted>{_e(t)}</div><div class=big>{big}</div><div>{_e(text)}</div></div>"
        for t, big, text in cards
    )
    return f"<div class=cards>{body}</div>"


def _steps_table(result: DemoResult) -> str:
    rows = [
        [
            str(i),
            _e(s.name),
            "<span class=ok>ok</span>" if s.ok else "<span class=bad>FAILED</span>",
            f"{s.seconds:.1f}",
            _e(s.summary),
        ]
        for i, s in enumerate(result.steps, start=1)
    ]
    return "<h2>Steps</h2>" + _table(["#", "step", "result", "s", "what happened"], rows, numeric=[0, 3])


def _curves(result: DemoResult) -> str:
    curves = result.artefacts.curves
    if curves is None:
        return ""
    c = curves.comparison
    return (
        "<h2>Loss curves: packed vs padded</h2>"
        "<p>Both runs start from the same weights and take the same optimizer steps over the same samples "
        "(global batches of packs; the padded run gets each pack's sequences as separate rows padded to "
        "the pack size). The loss is the per-token mean over each global batch, so the layout does not "
        "change it: the curves lie on top of each other (packed wide and pale, padded dashed on top). The "
        "lower panel is the per-step |padded - packed| on a log scale, with the allowed difference "
        "(1 bf16 ulp of the loss) as a dashed line: the distance between the two is the margin.</p>"
        + _png_tag(curves.png, "lm loss of the packed and padded runs")
        + f"<p>Profile <code>{_e(c.profile.name)}</code>, {c.profile.ulps} ulp: {_e(c.rule)}. Verdict: "
        + (
            "<span class=ok>match</span>"
            if c.passed
            else "<span class=bad>MISMATCH</span> " + _e("; ".join(c.reasons))
        )
        + "</p>"
    )


def _packing(result: DemoResult, packing_png: bytes) -> str:
    pack, inspect = result.artefacts.pack, result.artefacts.inspect
    if pack is None or inspect is None:
        return ""
    s = inspect.stats
    meta = pack.metadata
    tokenizer = result.artefacts.tokenizer
    rows = [
        ("tokenizer", tokenizer.describe() if tokenizer is not None else "-"),
        ("conversations in", _num(pack.counts.samples_in)),
        ("truncated to fit (listed in the rejects file)", _num(pack.counts.truncated)),
        ("packs", f"{_num(pack.num_packs)} of {pack.pack_size} tokens"),
        ("sequences per pack", f"{meta.packing_factor} on average, up to {s.max_samples_per_bin}"),
        ("packing efficiency", f"{meta.packing_efficiency}% of the pack capacity holds tokens"),
        ("runtime tokens", _num(s.runtime_tokens)),
        (
            "sample length (runtime tokens)",
            ", ".join(f"p{q} {s.length_percentile(q)}" for q in (50, 90, 99))
            + f", max {s.dataset_max_seqlen}",
        ),
        (
            "metadata sidecar",
            "consistent with the rows (6 Bridge values recomputed)"
            if not inspect.mismatches
            else "MISMATCH: "
            + "; ".join(f"{m.key}: {m.stored} vs {m.recomputed}" for m in inspect.mismatches),
        ),
    ]
    return (
        "<h2>Packing</h2>"
        + _table(["packing", "value"], [[_e(k), _e(v)] for k, v in rows])
        + _png_tag(packing_png, "sample lengths and compute per run")
    )


def _run_row(name: str, runs: dict[DataMode, TrainResult], get: Any) -> list[str]:
    return [_e(name)] + [_e(get(runs[m])) for m in (DataMode.packed, DataMode.padded) if m in runs]


def _training(result: DemoResult) -> str:
    runs = result.artefacts.train
    if not runs:
        return ""
    sizes = result.sizes
    paths = result.paths
    rows = [
        _run_row("optimizer steps", runs, lambda r: r.steps_done),
        _run_row("rows (packs / padded sequences)", runs, lambda r: _num(sum(x.rows for x in r.records))),
        _run_row("token slots computed", runs, lambda r: _num(r.positions)),
        _run_row("real tokens", runs, lambda r: _num(r.real_tokens)),
        _run_row("padding share of compute", runs, lambda r: _pct(r.padding_fraction)),
        _run_row("tokens/s (all slots)", runs, lambda r: _num(r.tokens_per_s)),
        _run_row("real tokens/s", runs, lambda r: _num(r.real_tokens_per_s)),
        _run_row("training seconds", runs, lambda r: _num(r.seconds, 1)),
        _run_row("loss: first -> last step", runs, lambda r: f"{r.losses[0]:.4f} -> {r.final_loss:.4f}"),
        _run_row(
            "log (Megatron-LM format)",
            runs,
            lambda r: relative(r.log_path, paths.root) if r.log_path else "-",
        ),
    ]
    params = next(iter(runs.values())).parameters
    model = (
        f"Llama-style, {sizes.layers} layer(s), hidden {sizes.hidden}, {sizes.heads} heads, FFN {sizes.ffn}, "
        f"{_num(params)} parameters; AdamW lr {sizes.lr}, global batch {sizes.gbs} packs, seed {sizes.seed}; "
        f"float32 on CPU, {result.threads} thread(s). Throughput is timed over the steps after the first."
    )
    header = ["run", *[m.value for m in (DataMode.packed, DataMode.padded) if m in runs]]
    slots = (
        "tokens/s (all slots) counts every position the model computes, padding included: a padding slot "
        "costs about as much as a real token, so both runs get through slots at a similar rate (which one "
        "is ahead per slot depends on the machine: padded rows need only the causal mask, a pack needs "
        "one per sequence). Real tokens/s is the speed of training: the padded run spends most of its "
        "slots on padding."
    )
    return (
        f"<h2>Training runs</h2><p>{_e(model)}</p>"
        + _table(header, rows, numeric=[1, 2])
        + f"<p class=muted>{_e(slots)}</p>"
    )


def _doctor(result: DemoResult) -> str:
    doctor = result.artefacts.doctor
    if doctor is None:
        return ""
    paths = result.paths
    rows = [
        [
            _e(f.id),
            _e(f.severity),
            f"{_e(f.message)}<br><span class=muted>{_e(f.why)}</span>",
            "<br>".join(_e(x) for x in f.fix) or "-",
        ]
        for f in doctor.written.findings
    ]
    after = (
        "<p class=ok>The fixed config passes: no findings.</p>"
        if not doctor.fixed.findings
        else "<p>The fixed config: "
        + _e(", ".join(f"{f.id} {f.severity}" for f in doctor.fixed.findings))
        + "</p>"
    )
    return (
        "<h2>Doctor: a Bridge config checked before launch</h2>"
        f"<p>The bundled config (<code>{_e(relative(paths.config, paths.root))}</code>) has one deliberate "
        "mistake: offline packing with <code>micro_batch_size 2</code>. Pointed at the demo's packs and "
        "tokenizer, <code>bridgepack doctor</code> finds:</p>"
        + _table(["id", "severity", "finding", "fix"], rows)
        + "<p>The fix (<code>--fix</code>), applied in "
        f"<code>{_e(relative(paths.fixed_config, paths.root))}</code>:</p><pre>"
        + _e("\n".join(doctor.fixes))
        + "</pre>"
        + after
    )


def _commands(result: DemoResult) -> str:
    lines = []
    for step in result.steps:
        if step.command:
            lines.append(f"# {step.name}\n{wrap_command(step.command)}")
    doctor = result.artefacts.doctor
    if doctor is not None:
        lines.append(f"# doctor, the fixed config\n{wrap_command(doctor.fixed_command)}")
    return (
        "<h2>The same steps by hand</h2><p>Each step is one <code>bridgepack</code> command; run them on "
        "your "
        "own data (paths as in this run):</p><pre class=cmd>" + _e("\n\n".join(lines)) + "</pre>"
    )


def wrap_command(command: str, width: int = 78) -> str:
    """A shell command on lines of at most ``width`` (``\\`` continuations): reads and pastes as it is.

    An option stays with its value; lines break only between such units::

        bridgepack train --data packed/training_512.idx.parquet --vocab 128 \\
          --hidden 64 --layers 2 --heads 4 --ffn 128 --lr 0.005 --gbs 4 \\
          --epochs 1 --log logs/packed.log
    """
    units: list[str] = []
    for word in shlex.split(command):
        quoted = shlex.quote(word)
        if units and units[-1].startswith("-") and " " not in units[-1] and not word.startswith("-"):
            units[-1] += " " + quoted  # the option's value
        else:
            units.append(quoted)
    lines: list[str] = []
    for unit in units:
        # A line as printed: 2 spaces of indent after the first, " \\" at its end when one follows. A
        # multi-line unit (a quoted script) may start a line's end; nothing follows it on its line.
        indent = 2 if len(lines) > 1 else 0
        if (
            lines
            and "\n" not in lines[-1]
            and indent + len(lines[-1]) + 1 + len(unit.split("\n")[0]) + len(_CONTINUATION) <= width
        ):
            lines[-1] += " " + unit
        else:
            lines.append(unit)
    return (_CONTINUATION + "\n  ").join(lines)


#: The end of a wrapped command's line that another line continues.
_CONTINUATION = " \\"


def _files(result: DemoResult) -> str:
    root = result.paths.root
    written = {relative(p, root) for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")}
    # The report and the summary are written after this page is rendered.
    names = sorted(written | {relative(result.paths.report, root), relative(result.paths.summary, root)})
    items = "".join(f"<li><code>{_e(name)}</code></li>" for name in names)
    return f"<h2>Files</h2><p class=muted>under {_e(os.fspath(root))}</p><ul>{items}</ul>"


def render_report(result: DemoResult, *, packing_png: bytes) -> str:
    """The whole page."""
    sections = [
        _header(result),
        _cards(result),
        _steps_table(result),
        _curves(result),
        _packing(result, packing_png),
        _training(result),
        _doctor(result),
        _commands(result),
        _files(result),
    ]
    return (
        "<!doctype html>\n<html lang=en><head><meta charset='utf-8'><title>bridgepack demo</title>"
        f"<style>{_CSS}</style></head><body>{''.join(sections)}</body></html>\n"
    )
