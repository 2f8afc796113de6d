"""Run the rule table over a loaded config: findings, ``--allow`` downgrades, and the corrected overrides."""

from __future__ import annotations

import glob
import locale
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from omegaconf import OmegaConf

from bridgepack.doctor._atlas import atlas_findings
from bridgepack.doctor._catalog import known_ids
from bridgepack.doctor._config_facts import ConfigFacts
from bridgepack.doctor._defect_facts import BRIDGE_LAUNCHER, MLM_LAUNCHER
from bridgepack.doctor._defects import DEFECT_IDS
from bridgepack.doctor._family import infer_family
from bridgepack.doctor._findings import ERROR, LANGS, SEVERITY_ORDER, Finding, Hit, Rule
from bridgepack.doctor._load import LoadedConfig, _build_view, parse_override, replaced_by, set_key, to_plain
from bridgepack.doctor._packed_facts import packed_location_exists, read_packed_facts
from bridgepack.doctor._rules import RULES
from bridgepack.doctor._versions import Assumed, assumed_stack, checked_gpu
from bridgepack.errors import UsageError, param
from bridgepack.findings import Location

#: Rounds of "apply the fixes, check again" behind ``--fix`` (each round only adds keys not yet fixed).
MAX_FIX_ROUNDS = 10


@dataclass
class DoctorOptions:
    """What the caller tells the doctor beyond the config itself (the CLI's flags, the API's keywords);
    each check turns it and the loaded config into the :class:`ConfigFacts` the rules read."""

    world_size: int | None = None
    dp: int | None = None
    model_family: str | None = None
    recipe: str | None = None
    kernel_chunk: int | None = None
    packed: str | None = None
    allow: Sequence[str] = ()
    lang: str = "en"
    #: Versions of the training stack (``megatron-bridge`` / ``megatron-core`` / ``transformer-engine`` /
    #: ``cudnn`` -> version) the known-defect atlas is checked against (``--stack``); they win over
    #: :attr:`installed`; a component in neither is unknown.
    stack: Mapping[str, str] = field(default_factory=dict)
    #: The versions installed where the doctor runs (the CLI reads them as ``bridgepack env`` does); every
    #: report
    #: says which versions it assumed and where each came from.
    installed: Mapping[str, str] = field(default_factory=dict)
    #: The training GPU's architecture (``--gpu``: ampere, ada, hopper, blackwell, blackwell-rtx), ``None``
    #: when unknown (the atlas then takes it for a data-centre part).
    gpu: str | None = None
    #: ``"bridge"`` or ``"mlm"`` when known: which launcher's defects apply (``None``: both).
    launcher: str | None = None

    def __post_init__(self) -> None:
        if self.world_size is not None and self.dp is not None:  # which one the user meant is unknown
            raise UsageError(f"give {param('world_size')} or {param('dp')}, not both")
        self.gpu = checked_gpu(self.gpu)
        # Any other name would silently match no defect's launchers and hide every upstream defect.
        if self.launcher not in (None, BRIDGE_LAUNCHER, MLM_LAUNCHER):
            raise UsageError(
                f"launcher must be {BRIDGE_LAUNCHER!r}, {MLM_LAUNCHER!r} or None, got {self.launcher!r}"
            )


@dataclass
class Report:
    """What the doctor found in a config (``bridgepack doctor``), and the fixed overrides when asked for."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`); 2: each finding has a
    #: ``location`` (file, line, col) and the message no longer carries it.
    SCHEMA_VERSION: ClassVar[int] = 2

    config_era: str
    findings: list[Finding] = field(default_factory=list)
    #: The corrected overrides (:func:`suggest_fixes`, ``--fix``); ``None``: not asked for.
    fixes: list[str] | None = None
    #: The versions (and GPU) the atlas assumed, with where each came from (``--stack``/installed/unknown).
    stack: tuple[Assumed, ...] = ()

    @property
    def has_error(self) -> bool:
        return any(f.severity == ERROR and not f.allowed for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        """``bridgepack doctor --format json``'s document (``fix`` only when :attr:`fixes` were asked for)."""
        doc: dict[str, Any] = {
            "schema_version": self.SCHEMA_VERSION,
            "config_era": self.config_era,
            "findings": [f.to_dict() for f in self.findings],
            "stack": [row.to_dict() for row in self.stack],
        }
        if self.fixes is not None:
            doc["fix"] = self.fixes
        return doc


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
    dataset = loaded.view.dataset
    specs = dataset.offline_packing_specs
    if not dataset.enable_offline_packing or specs is None:
        return None
    if specs.packed_train_data_path:
        return specs.packed_train_data_path
    if dataset.dataset_root and specs.packed_sequence_size > 0:
        # Bridge's default place (bridge-format §3): <root>/packed/<tokenizer>_pad_seq_to_mult<m>_sft_<fp12>/;
        # the fingerprint is not recomputed here, so only a single candidate directory is taken.
        pattern = os.path.join(
            glob.escape(str(dataset.dataset_root)),
            "packed",
            f"*_pad_seq_to_mult{specs.pad_seq_to_mult}_sft_*",
            f"training_{specs.packed_sequence_size}.idx.parquet",
        )
        found = glob.glob(pattern)
        if len(found) == 1:
            return found[0]
    return None


def config_facts(loaded: LoadedConfig, options: DoctorOptions) -> ConfigFacts:
    view = loaded.view
    family, source = infer_family(view, given=options.model_family, recipe=options.recipe)
    ctx = ConfigFacts(
        view=view,
        problems=loaded.problems,
        world_size=options.world_size,
        dp=_data_parallel_size(loaded, options),
        family=family,
        family_source=source,
        kernel_chunk=options.kernel_chunk,
    )
    spec = _packed_spec(loaded, options)
    if spec is not None and not options.packed and not packed_location_exists(spec):
        # The config's own path may live on the cluster's file system only: report it, check the rest.
        ctx.missing_packed = spec
    elif spec is not None:
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


def checked_lang(lang: str) -> str:
    """``lang`` when the catalog has it, else the usage error (the demo asks before its first step)."""
    if lang not in LANGS:
        raise UsageError(f"{param('lang')} {lang!r}: expected one of {', '.join(LANGS)}")
    return lang


def check(loaded: LoadedConfig, options: DoctorOptions | None = None) -> Report:
    """Run every rule of :data:`RULES` and the known-defect atlas; findings sorted by severity, then id."""
    options = options or DoctorOptions()
    ctx, findings = _rule_findings(loaded, options)
    atlas = atlas_findings(
        ctx,
        loaded.raw,
        stack={**options.installed, **options.stack},
        launcher=options.launcher,
        mlm_flags=loaded.mlm_flags,
        gpu=options.gpu,
        allow=set(options.allow),
        lang=options.lang,
    )
    for finding in atlas:
        finding.location = locate(loaded, [*_fix_keys(finding.fix), *finding.fields])
    findings += atlas
    findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity], f.id))
    stack = assumed_stack(options.stack, options.installed, options.gpu)
    return Report(config_era=loaded.view.era, findings=findings, stack=stack)


def _rule_findings(loaded: LoadedConfig, options: DoctorOptions) -> tuple[ConfigFacts, list[Finding]]:
    """The findings of :data:`RULES` alone (what ``suggest_fixes`` iterates on: the atlas's workarounds change
    the run, and its packed-data scan need not run once per fix round), with the context they were read in."""
    checked_lang(options.lang)
    known = {r.id for r in RULES} | DEFECT_IDS
    unknown = [a for a in options.allow if a not in known]
    if unknown:
        raise UsageError(f"{param('allow')} {', '.join(unknown)}: no such rule (ids: {known_ids()})")
    ctx = config_facts(loaded, options)
    findings = [
        _finding(rule, hit, options.lang, rule.id in options.allow, loaded)
        for rule in RULES
        for hit in _hits(rule.check(ctx))
    ]
    return ctx, findings


#: The "did you mean" tail of a hit with a ``suggestion`` (SP100/SP101), per language.
_DID_YOU_MEAN = {"en": " (did you mean '{suggestion}'?)", "zh": "（是否想写 '{suggestion}'？）"}


def _finding(rule: Rule, hit: Hit, lang: str, allowed: bool, loaded: LoadedConfig) -> Finding:
    """The finding of one hit, in ``lang``, located where the config file wrote the first of its fields."""
    fields = list(hit.fields if hit.fields is not None else rule.fields)
    fix = [item for item in hit.fix if changes(loaded, item)]
    message = rule.message(lang).format(**hit.params)
    suggestion = hit.params.get("suggestion")
    if suggestion:
        message += _DID_YOU_MEAN[lang].format(suggestion=suggestion)
    return Finding(
        id=rule.id,
        severity=rule.severity,
        fields=fields,
        message=message,
        why=rule.why(lang).format(**hit.params),
        fix=fix,
        upstream=rule.upstream,
        allowed=allowed,
        location=locate(loaded, [*_fix_keys(fix), *fields]),
    )


#: A key the config does not write (:func:`changes`).
_ABSENT = object()


def changes(loaded: LoadedConfig, item: str) -> bool:
    """Whether the override ``item`` changes the config: a rule's fix may name a key the config already
    holds at that value (SP005 sets ``seq_length`` to the new pack size, which it often is), and a
    ``fix:`` line that changes nothing is noise an agent copies into its answer. Only a value the config
    writes, of the same type, counts as unchanged."""
    key, value = parse_override(item)
    current: Any = loaded.raw
    for part in key.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return True
        current = current[part]
    return type(current) is not type(value) or current != value


def _fix_keys(fix: Sequence[str]) -> list[str]:
    """The keys a finding's fix sets: where a reader goes to change it, so where the finding points first."""
    return [item.partition("=")[0] for item in fix]


def locate(loaded: LoadedConfig, fields: Sequence[str]) -> Location | None:
    """Where the config file wrote the first of ``fields`` that it wrote (a finding passes the keys its fix
    sets first, then the fields it reads); the file itself when it wrote none of them; ``None`` for a
    config that is not a file."""
    if loaded.source is None:
        return None
    return next((loaded.locations[f] for f in fields if f in loaded.locations), Location(loaded.source))


def apply_overrides(loaded: LoadedConfig, overrides: Sequence[str]) -> LoadedConfig:
    """A copy of ``loaded`` with ``key=value`` overrides applied on top (problems re-derived)."""
    merged = OmegaConf.create(loaded.raw)
    for item in overrides:
        key, value = parse_override(item)
        set_key(merged, key, value)
    raw = to_plain(merged)
    problems = [p for p in loaded.problems if p.kind in ("contradiction",)]
    view = _build_view(raw, problems)
    view.dataset.kind = loaded.view.dataset.kind
    locations = replaced_by([parse_override(item)[0] for item in overrides], loaded.locations)
    return LoadedConfig(
        view=view,
        problems=problems,
        raw=raw,
        source=loaded.source,
        mlm_flags=loaded.mlm_flags,
        locations=locations,
    )


def _under_removed(key: str, chosen: dict[str, str]) -> bool:
    """Whether ``key`` lies in a section a chosen fix sets to null (its sub-keys must not be set again)."""
    return any(key.startswith(parent + ".") for parent, item in chosen.items() if item.endswith("=null"))


def _round_of_fixes(findings: list[Finding]) -> dict[str, str]:
    """One round's proposals, most severe finding first: a key keeps the first value proposed for it in the
    round (an error outranks advice)."""
    proposed: dict[str, str] = {}
    for finding in sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.id)):
        if finding.allowed or finding.severity == "info":
            continue
        for item in finding.fix:
            key = item.partition("=")[0]
            if key not in proposed and not _under_removed(key, proposed):
                proposed[key] = item
    return proposed


def suggest_fixes(loaded: LoadedConfig, options: DoctorOptions | None = None) -> list[str]:
    """The overrides that clear the fixable errors and warnings (allowed findings are left alone): the
    printed set passes a second ``doctor`` run.

    Fixes are applied and the rules re-run until no fixable finding is left (at most
    :data:`MAX_FIX_ROUNDS` rounds). A finding still there on the fixed config may change a key an earlier
    round set: SP011 moving ``seq_length`` to a multiple of ``2*CP`` makes SP016 move the pack size after it.
    A round that would bring back a set of overrides seen before ends the loop, so two rules never
    ping-pong.
    """
    options = options or DoctorOptions()
    chosen: dict[str, str] = {}
    seen: set[frozenset[tuple[str, str]]] = {frozenset()}
    current = loaded
    for _ in range(MAX_FIX_ROUNDS):
        _, findings = _rule_findings(current, options)
        updated = dict(chosen)
        for key, item in _round_of_fixes(findings).items():
            if _under_removed(key, updated):
                continue
            updated[key] = item
            if item.endswith("=null"):
                for child in [k for k in updated if k.startswith(key + ".")]:
                    del updated[child]
        state = frozenset(updated.items())
        if state in seen:
            break
        seen.add(state)
        chosen = updated
        current = apply_overrides(loaded, list(chosen.values()))
    return list(chosen.values())
