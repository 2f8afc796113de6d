"""How ``bridgepack doctor`` prints: findings as a table on a terminal, as plain blocks anywhere else, as
GitHub
Actions annotations with ``--format github``; the rule catalog for ``--list-rules`` and ``--explain``.

Plain text is for agents, CI logs and pipes: one finding per block, nothing wrapped or cut, whatever
``COLUMNS`` says, every fix override whole on a line of its own::

    sft.yaml:15:3: SP005 error: micro_batch_size is 2 with offline packing; packed training needs ...
    why: A packed row already holds many samples and THD attention takes one row per micro-batch. ...
    fields: train.micro_batch_size, train.global_batch_size, dataset.offline_packing_specs.packed_...
    upstream: raises at validation
    fix: train.micro_batch_size=1
    fix: train.global_batch_size=32
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from bridgepack._console import styled
from bridgepack.cli._common import out_console, print_blocks, print_lines, stdout_is_terminal
from bridgepack.doctor import CatalogEntry, Report, stack_summary
from bridgepack.findings import SEVERITIES, Finding

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
#: GitHub's annotation levels; an allowed finding is a notice whatever its severity.
_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def heading(f: Finding) -> str:
    """``[file:line:col: ]ID severity[ (allowed)]: message``, the first line of a finding's block."""
    where = f"{f.location}: " if f.location is not None else ""
    return f"{where}{f.id} {f.severity}{' (allowed)' if f.allowed else ''}: {f.message}"


def finding_block(f: Finding) -> tuple[str, list[tuple[str, str]]]:
    fields = [("why", f.why), ("fields", ", ".join(f.fields)), ("upstream", f.upstream)]
    return heading(f), fields + [("fix", item) for item in f.fix]


def counts_line(findings: Sequence[Finding]) -> str:
    counts = {s: sum(1 for f in findings if f.severity == s and not f.allowed) for s in SEVERITIES}
    return f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"


def print_report(report: Report, config: str | None = None) -> None:
    """The report as text: a table on a terminal, plain blocks otherwise (``config`` names the file when
    several were checked)."""
    head = [f"config: {config}"] if config else []
    head += [f"config era: {report.config_era}", f"stack: {stack_summary(report.stack)}"]
    if not report.findings:
        print_lines([*head, "no findings: every rule passes"])
    elif stdout_is_terminal():
        for line in head:
            out_console.print(line)
        out_console.print(_table(report.findings))
        out_console.print(counts_line(report.findings))
    else:
        print_lines(head)
        print_lines([""])
        print_blocks([finding_block(f) for f in report.findings])
        print_lines(["", counts_line(report.findings)])
    if report.fixes is not None:
        title = "corrected overrides:" if report.fixes else "corrected overrides: none needed"
        print_lines([title, *report.fixes])


def _table(findings: Sequence[Finding]) -> Table:
    table = Table(show_lines=True)
    table.add_column("id", no_wrap=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("finding", ratio=3, overflow="fold")
    table.add_column("fix", ratio=2, overflow="fold")
    for f in findings:
        severity = styled((f.severity, _SEVERITY_STYLE[f.severity]), " (allowed)" if f.allowed else "")
        where = f"{f.location}\n" if f.location is not None else ""
        details = f"{f.why}\nfields: {', '.join(f.fields)}\nupstream: {f.upstream}"
        finding = styled(where, f"{f.message}\n", (details, "dim"))
        table.add_row(f.id, severity, finding, "\n".join(f.fix) or "-")
    return table


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(f: Finding) -> str:
    """``::error file=sft.yaml,line=15,col=3,title=SP005::message`` (fix overrides on lines of their own)."""
    level = "notice" if f.allowed else _GITHUB_LEVEL[f.severity]
    props = []
    if f.location is not None:
        props.append(f"file={_escape_property(f.location.file)}")
        at = (("line", f.location.line), ("col", f.location.col))
        props += [f"{name}={value}" for name, value in at if value is not None]
    props.append(f"title={_escape_property(f.id)}")
    first = f.message + (" (allowed)" if f.allowed else "")
    message = "\n".join([first, *(f"fix: {item}" for item in f.fix)])
    return f"::{level} {','.join(props)}::{_escape_data(message)}"


def print_github(report: Report) -> None:
    """One annotation per finding; ``--fix``'s corrected overrides as one notice."""
    lines = [github_annotation(f) for f in report.findings]
    if report.fixes:
        lines.append(f"::notice title=bridgepack doctor --fix::{_escape_data(chr(10).join(report.fixes))}")
    print_lines(lines)


def print_catalog(entries: Sequence[CatalogEntry], lang: str) -> None:
    """``--list-rules``: id, severity and title of every entry (a table on a terminal)."""
    if not stdout_is_terminal():
        print_lines(f"{e.id} {e.severity}: {e.title(lang)}" for e in entries)
        return
    table = Table(title="bridgepack doctor rules", title_justify="left")
    for name in ("id", "severity", "group", "title"):
        table.add_column(name, no_wrap=name != "title", overflow="fold")
    for e in entries:
        table.add_row(e.id, styled((e.severity, _SEVERITY_STYLE[e.severity])), e.group, e.title(lang))
    out_console.print(table)


def explanation(e: CatalogEntry, lang: str) -> tuple[str, list[tuple[str, str]]]:
    """``--explain``'s block: what, why, fix, where it comes from and which releases."""
    fields: list[tuple[str, str]] = [
        ("kind", "rule" if e.kind == "rule" else "known upstream defect"),
        ("group", e.group_title()),
        ("why", e.why(lang)),
    ]
    if e.kind == "rule":
        fields.append(("fix sets", ", ".join(e.fix) or "nothing: the message says what to do"))
    else:
        assert e.effect is not None
        fields.append(("effect", e.to_dict(lang)["effect"]))
        fields += [("fix", item) for item in e.fix] or [("fix", "none known: avoid the configuration")]
        fields.append(("severity", "error when the release is known to be affected and the effect is silent "
                       "wrong training, else warning"))  # fmt: skip
    fields += [("fields", ", ".join(e.fields)), ("upstream", e.upstream)]
    fields += [("link", link) for link in e.links]
    fields.append(("versions", e.versions))
    if e.example is not None:
        fields.append(("example", e.example))
    return f"{e.id} {e.severity}: {e.title(lang)}", fields
