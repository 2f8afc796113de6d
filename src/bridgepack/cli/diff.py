"""``bridgepack diff``: what changed between two packed datasets or two batch dumps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer

from bridgepack._console import styled
from bridgepack._progress import progress
from bridgepack._ranges import TOKEN_ID
from bridgepack.cli._common import (
    FormatOption,
    OutputFormat,
    QuietOption,
    emit_json,
    number_option,
    out_console,
)
from bridgepack.diff import DiffReport, diff_paths, unlike_record_error


def _excerpt(view: Mapping[str, Any]) -> str:
    tokens = " ".join(str(t) for t in view["tokens"])
    mask = "".join(str(m) for m in view["loss_mask"])
    more = "" if view["from"] + len(view["tokens"]) >= view["length"] else " ..."
    lead = f"[{view['from']}:] " if view["from"] else ""
    return f"{lead}tokens {tokens}{more} | mask {mask} (len {view['length']})"


def _print_packed(report: Mapping[str, Any]) -> None:
    p = out_console.print
    p(f"A: {report['a']['path']}\nB: {report['b']['path']}")
    p(styled("verdict: ", (report["verdict"], "bold")))
    meta = report["metadata"]
    if not meta["compared"] and not meta["differences"]:
        p("metadata: not compared (no sidecar {N}_metadata.jsonl beside A or B)")
    elif not meta["compared"]:
        side = "A" if meta["a"] else "B"
        p(f"metadata differs: only {side} has a metadata sidecar entry ({meta['a'] or meta['b']})")
    elif meta["differences"]:
        p("metadata differs:")
        for key, (va, vb) in meta["differences"].items():
            p(f"  {key}: {va!r} -> {vb!r}")
    else:
        p("metadata: same")
    if meta["compared"]:
        p(f"  (not compared: what describes the run or is measured below: {', '.join(meta['not_compared'])})")
    if meta.get("bridgepack_record_only_in"):
        side = meta["bridgepack_record_only_in"].upper()
        p(
            f"  (only {side} has a bridgepack record: the other was written by another tool; "
            "Bridge's keys compared)"
        )
    pa, pb = report["packs"]["a"], report["packs"]["b"]
    for label, side in (("A", pa), ("B", pb)):
        size = f", pack size {side['pack_size']}" if side["pack_size"] is not None else ""
        eff = f", efficiency {side['efficiency']}%" if side["efficiency"] is not None else ""
        p(
            f"packs {label}: {side['count']:,} packs, {side['sequences']:,} sequences, "
            f"{side['tokens']:,} tokens{size}{eff}"
        )
    if report["packs"]["pack_size_differs"]:
        p("  pack sizes differ: the sets were packed for different capacities")
    seqs = report["sequences"]
    if seqs["only_in_a"] == 0 and seqs["only_in_b"] == 0:
        p(f"sequences: the same {seqs['a']:,} sequences (tokens) on both sides")
    else:
        p(f"sequences: {seqs['only_in_a']:,} only in A, {seqs['only_in_b']:,} only in B")
        for label, key in (("A", "only_in_a_examples"), ("B", "only_in_b_examples")):
            for ex in seqs[key]:
                p(f"  only in {label}: pack {ex['pack']} seq {ex['sequence']} #{ex['hash']}: {_excerpt(ex)}")
    masks = report["loss_mask"]
    if masks["sequences"]:
        p(f"loss masks: {masks['sequences']:,} sequences with the same tokens have another mask")
        for kind in masks["kinds"].values():
            if kind["supervised_in_b_not_a"]:
                p(f"  {kind['label']} supervised in B, not in A: {kind['supervised_in_b_not_a']:,} tokens")
            if kind["supervised_in_a_not_b"]:
                p(f"  {kind['label']} supervised in A, not in B: {kind['supervised_in_a_not_b']:,} tokens")
        ex = masks["example"]
        p(f"  first: A pack {ex['a']['pack']} seq {ex['a']['sequence']}, position {ex['first_position']}")
        p(f"    A {_excerpt(ex['a'])}\n    B {_excerpt(ex['b'])}")
    bounds = report["boundaries"]
    if bounds["same_packs_other_order"]:
        p("packs: the same packs, stored in another order")
    if bounds["same_tokens_other_boundaries"]:
        p(
            f"boundaries: {bounds['same_tokens_other_boundaries']:,} packs hold the same tokens, "
            "split into sequences differently"
        )
    for label in ("a", "b"):
        unlike = report["unlike_record"][label]
        if unlike is not None:
            p(
                f"{label.upper()} no longer matches its record in {unlike['metadata']} entry "
                f"{unlike['entry']} ({unlike['differs']})"
            )
    first = report["first_differing_pack"]
    if first is not None:
        p(f"first differing pack: {first['index']} ({first['field']}, position {first['position']})")
        for label in ("a", "b"):
            if label in first:
                view = first[label]
                p(f"  {label.upper()} starts {view['seq_start_id']} {_excerpt(view)}")


def _print_batches(report: Mapping[str, Any]) -> None:
    p = out_console.print
    p(f"A: {report['a']['path']}\nB: {report['b']['path']}")
    p(styled("verdict: ", (report["verdict"], "bold")))
    for label, key in (("A", "only_in_a"), ("B", "only_in_b")):
        if report[key]:
            p(f"keys only in {label}: {', '.join(report[key])}")
    for key, found in report["differences"].items():
        parts = []
        if "dtype" in found:
            parts.append(f"dtype {found['dtype'][0]} -> {found['dtype'][1]}")
        if "shape" in found:
            parts.append(f"shape {tuple(found['shape'][0])} -> {tuple(found['shape'][1])}")
        if "differing_elements" in found:
            parts.append(
                f"{found['differing_elements']:,} elements differ, first at {tuple(found['first_index'])}: "
                f"{found['a_value']!r} -> {found['b_value']!r}"
            )
        p(f"  {key}: {'; '.join(parts)}")
    names = {"eos_input": "EOS positions", "other": "other positions"}
    for kind, counts in report["loss_mask_kinds"].items():
        if counts["supervised_in_b_not_a"]:
            p(f"  {names[kind]} supervised in B, not in A: {counts['supervised_in_b_not_a']:,} tokens")
        if counts["supervised_in_a_not_b"]:
            p(f"  {names[kind]} supervised in A, not in B: {counts['supervised_in_a_not_b']:,} tokens")


def diff(
    a: str = typer.Argument(
        ..., help="Packed data (Parquet file/glob/dir or legacy .npy) or a batch dump .npz."
    ),
    b: str = typer.Argument(..., help="The other side, of the same kind."),
    eos_id: int = number_option(
        None,
        "--eos-id",
        help="EOS token id for the mask kinds (default: metadata, dump, or inferred).",
        range=TOKEN_ID,
    ),
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,
) -> None:
    """Show what differs between two packed datasets (or two batch dumps), cheapest difference first.

    Exit 0 when identical, 1 when anything differs, 2 when a side cannot be read.

    Example: bridgepack diff old/training_4096.idx.parquet new/training_4096.idx.parquet
    """
    with progress(quiet) as bar:
        task = bar.add_task("diff (packs of A, then B)", total=None)
        report = diff_paths(a, b, eos_id=eos_id, on_packs=lambda n: bar.advance(task, n))
    if output_format is OutputFormat.json:
        emit_json(DiffReport(report))
    elif report["kind"] == "batches":
        _print_batches(report)
    else:
        _print_packed(report)
    unlike = unlike_record_error(report)
    if unlike is not None:  # the report, then the one line every reader prints for such a set
        raise unlike
    if not report["identical"]:
        raise typer.Exit(1)


#: What ``bridgepack diff`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = diff
