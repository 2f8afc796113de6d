"""Run the rule table over a loaded config: findings, ``--allow`` downgrades, and the corrected overrides."""

from __future__ import annotations

import locale
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from omegaconf import OmegaConf

from seqpack.config._catalog import CATALOG, LANGS
from seqpack.config._context import Context
from seqpack.config._family import infer_family
from seqpack.config._findings import ERROR, SEVERITY_ORDER, Finding, Hit
from seqpack.config._load import LoadedConfig, _build_view, parse_override, to_plain
from seqpack.config._packed_facts import read_packed_facts
from seqpack.config._rules import RULES
from seqpack.errors import UsageError

SCHEMA_VERSION = 1
#: Rounds of "apply the fixes, check again" behind ``--fix`` (each round only adds keys not yet fixed).
MAX_FIX_ROUNDS = 5


@dataclass
class DoctorOptions:
    """What the doctor knows beyond the config itself."""

    world_size: int | None = None
    dp: int | None = None
    model_family: str | None = None
    recipe: str | None = None
    kernel_chunk: int | None = None
    packed: str | None = None
    allow: Sequence[str] = ()
    lang: str = "en"


@dataclass
class Report:
    config_era: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def has_error(self) -> bool:
        return any(f.severity == ERROR and not f.allowed for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "config_era": self.config_era,
            "findings": [f.to_json() for f in self.findings],
        }


def default_lang() -> str:
    """``zh`` when the locale says Chinese (LC_ALL / LC_MESSAGES / LANG), else ``en``."""
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    code = locale.getlocale()[0] or ""
    return "zh" if code.lower().startswith("zh") else "en"


def _data_parallel_size(loaded: LoadedConfig, options: DoctorOptions) -> int | None:
    if options.dp is not None:
        return options.dp
    if options.world_size is None:
        return None
    mp = loaded.view.model_parallel_size
    return options.world_size // mp if mp > 0 and options.world_size % mp == 0 else None


def _packed_spec(loaded: LoadedConfig, options: DoctorOptions) -> str | None:
    """The packed training split the config points at (``--packed`` wins)."""
    if options.packed:
        return options.packed
    specs = loaded.view.dataset.offline_packing_specs
    if loaded.view.dataset.enable_offline_packing and specs is not None and specs.packed_train_data_path:
        return specs.packed_train_data_path
    return None


def build_context(loaded: LoadedConfig, options: DoctorOptions) -> Context:
    view = loaded.view
    family, source = infer_family(view, given=options.model_family, recipe=options.recipe)
    ctx = Context(
        view=view,
        problems=loaded.problems,
        world_size=options.world_size,
        dp=_data_parallel_size(loaded, options),
        family=family,
        family_source=source,
        kernel_chunk=options.kernel_chunk,
    )
    spec = _packed_spec(loaded, options)
    if spec is not None:
        specs = view.offline_specs
        ctx.packed_path = spec
        ctx.facts = read_packed_facts(
            spec,
            multiple=ctx.pad_needed,
            pack_size=specs.packed_sequence_size,
            metadata_path=specs.packed_metadata_path,
        )
    return ctx


def _hits(result: Hit | Iterable[Hit] | None) -> list[Hit]:
    if result is None:
        return []
    if isinstance(result, Hit):
        return [result]
    return list(result)


def check(loaded: LoadedConfig, options: DoctorOptions | None = None) -> Report:
    """Run every rule of :data:`RULES`; findings are sorted by severity, then rule id."""
    options = options or DoctorOptions()
    if options.lang not in LANGS:
        raise UsageError(f"--lang {options.lang!r}: expected one of {', '.join(LANGS)}")
    known = {r.id for r in RULES}
    unknown = [a for a in options.allow if a not in known]
    if unknown:
        raise UsageError(f"--allow {', '.join(unknown)}: no such rule (ids: SP001..{RULES[-1].id})")
    ctx = build_context(loaded, options)
    findings: list[Finding] = []
    for rule in RULES:
        for hit in _hits(rule.check(ctx)):
            message, why = CATALOG[rule.id][options.lang]
            findings.append(
                Finding(
                    id=rule.id,
                    severity=rule.severity,
                    fields=list(hit.fields if hit.fields is not None else rule.fields),
                    message=message.format(**hit.params),
                    why=why.format(**hit.params),
                    fix=list(hit.fix),
                    upstream=rule.upstream,
                    allowed=rule.id in options.allow,
                )
            )
    findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity], f.id))
    return Report(config_era=loaded.view.era, findings=findings)


def apply_overrides(loaded: LoadedConfig, overrides: Sequence[str]) -> LoadedConfig:
    """A copy of ``loaded`` with ``key=value`` overrides applied on top (problems re-derived)."""
    merged = OmegaConf.create(loaded.raw)
    for item in overrides:
        key, value = parse_override(item)
        OmegaConf.update(merged, key, value, merge=True, force_add=True)
    raw = to_plain(merged)
    problems = [p for p in loaded.problems if p.kind in ("contradiction",)]
    view = _build_view(raw, problems)
    view.dataset.kind = loaded.view.dataset.kind
    return LoadedConfig(view=view, problems=problems, raw=raw, source=loaded.source)


def suggest_fixes(loaded: LoadedConfig, options: DoctorOptions | None = None) -> list[str]:
    """The overrides that clear the fixable errors and warnings (allowed findings are left alone).

    Fixes are applied and the rules re-run, up to :data:`MAX_FIX_ROUNDS` times; a key keeps the first value
    proposed for it, so two rules can never ping-pong (e.g. SP005 sets the pack size before SP016 looks).
    """
    options = options or DoctorOptions()
    chosen: dict[str, str] = {}
    current = loaded
    for _ in range(MAX_FIX_ROUNDS):
        report = check(current, options)
        added = False
        for finding in report.findings:
            if finding.allowed or finding.severity == "info":
                continue
            for item in finding.fix:
                key = item.split("=", 1)[0]
                if key not in chosen:
                    chosen[key] = item
                    added = True
        if not added:
            break
        current = apply_overrides(loaded, list(chosen.values()))
    return list(chosen.values())
