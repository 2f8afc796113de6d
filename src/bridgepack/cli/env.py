"""``bridgepack env``: the installed training stack and what follows from it."""

from __future__ import annotations

import typer
from rich.table import Table

from bridgepack._console import styled
from bridgepack.cli._common import FormatOption, OutputFormat, QuietOption, emit_json, out_console
from bridgepack.env import EnvReport, env_report

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _print_text(report: EnvReport) -> None:
    table = report.versions
    versions = Table(title="environment", show_header=True, header_style="bold")
    versions.add_column("package")
    versions.add_column("version")
    versions.add_row("python", table.python)
    for name, version in table.packages.items():
        versions.add_row(name, version if version is not None else styled(("not installed", "dim")))
    if table.cuda_available is not None:
        cuda = f"CUDA {table.cuda_version}" if table.cuda_version else "CPU-only build"
        gpus = ", ".join(table.gpu_names) if table.gpu_names else "no GPU visible"
        versions.add_row("torch device", f"{cuda}; {gpus}")
    out_console.print(versions)
    if not report.findings:
        out_console.print("no findings")
        return
    for finding in report.findings:
        style = _STYLE[finding.severity]
        out_console.print(styled((f"{finding.id} {finding.severity}", style), f": {finding.message}"))
        out_console.print(f"  why: {finding.why}")
        for fix in finding.fix:
            out_console.print(f"  fix: {fix}")


def env(
    output_format: OutputFormat = FormatOption,
    quiet: bool = QuietOption,  # nothing on stderr to silence: taken as every command takes it
) -> None:
    """Report the versions of Python, torch (+CUDA), Megatron and friends, and what follows from them.

    Exit 1 when a finding is an error (e.g. a Megatron release that needs a newer Python).

    Example: bridgepack env --format json
    """
    report = env_report()
    if output_format is OutputFormat.json:
        emit_json(report)
    else:
        _print_text(report)
    if any(f.severity == "error" for f in report.findings):
        raise typer.Exit(1)


#: What ``bridgepack env`` runs (``bridgepack.cli._commands`` registers it under the module's name).
COMMAND = env
