"""Turn the known-defect table into doctor findings for the user's stack, and into the docs' atlas table.

Where the version comes from decides the finding::

    component version known, inside the range   ->  error (silent wrong training) or warning (crash, slowdown)
    component version known, outside the range  ->  nothing
    component version unknown                   ->  warning "... if your megatron-bridge is older than 0.5.0"

Versions are the installed ones (what ``bridgepack env`` reads) overlaid by ``--stack``; the Python API takes
them in :attr:`DoctorOptions.stack` (and :attr:`DoctorOptions.installed`). A further release or the GPU
architecture an entry needs (:attr:`Defect.also`, :attr:`Defect.gpus`) clears it when known and outside,
and is named in a warning when unknown. A defect is skipped for a launch that does not run its code
(:attr:`Defect.launchers`: Bridge's entries under Megatron-LM, Megatron-LM's under Bridge).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bridgepack.doctor._config_facts import ConfigFacts
from bridgepack.doctor._defect_facts import DefectContext
from bridgepack.doctor._defect_model import EFFECTS, Defect
from bridgepack.doctor._defects import DEFECTS
from bridgepack.doctor._findings import ERROR, WARNING, Finding
from bridgepack.doctor._versions import BRIDGE, DATACENTRE_GPUS, GPU_NAMES, Affected, release

_VERSION_CLAUSE = {
    "en": {
        "known": "{title}: {component} {version} is affected ({range})",
        "below": "{title}, if your {component} is older than {fixed}",
        "between": "{title}, if your {component} is {first} or newer and older than {fixed}",
        "open": "{title}; no {component} release is known to fix it",
        "from": "{title}, if your {component} is {first} or newer; no release is known to fix it",
    },
    "zh": {
        "known": "{title}：{component} {version} 受影响（{range}）",
        "below": "{title}（若你的 {component} 早于 {fixed}）",
        "between": "{title}（若你的 {component} 不早于 {first} 且早于 {fixed}）",
        "open": "{title}；{component} 尚无已知的修复版本",
        "from": "{title}（若你的 {component} 不早于 {first}；尚无已知的修复版本）",
    },
}
_WHY = {
    "en": "{why} Effect: {effect}.",
    "zh": "{why} 影响：{effect}。",
}
#: A further release the defect needs (:attr:`Defect.also`) whose version is unknown: named, never assumed.
_ALSO = {
    "en": "; only with {component} {range} (your {component} version is unknown)",
    "zh": "；仅当 {component} 为 {range} 时（未知你的 {component} 版本）",
}
#: The GPU architectures the defect needs (:attr:`Defect.gpus`): said always, and that the GPU is unknown.
_GPUS = {
    "en": "; only on {gpus} GPUs{unknown}",
    "zh": "；仅在 {gpus} GPU 上{unknown}",
}
_GPU_UNKNOWN = {"en": " (your GPU architecture is unknown: --gpu)", "zh": "（未知你的 GPU 架构：--gpu）"}
_UPGRADE = {
    "en": " Upgrade {component} to {fixed} or newer.",
    "zh": " 升级 {component} 至 {fixed} 或更新版本。",
}


def _message(defect: Defect, version: str | None, lang: str) -> str:
    title = defect.text[lang][0]
    a = defect.affected
    if version is not None:
        key = "known"
    elif a.fixed is None:
        key = "from" if a.first else "open"
    else:
        key = "between" if a.first else "below"
    return _VERSION_CLAUSE[lang][key].format(
        title=title,
        component=defect.component,
        version=version,
        range=a.describe(),
        first=a.first,
        fixed=a.fixed,
    )


def _also(defect: Defect, stack: Mapping[str, str]) -> list[tuple[str, Affected]] | None:
    """The further releases :attr:`Defect.also` names whose version is unknown, or ``None`` when a known
    one is outside its range (the defect cannot happen on this stack)."""
    unknown = []
    for component, affected in defect.also:
        version = stack.get(component)
        if version is None:
            unknown.append((component, affected))
        elif not affected.covers(version):
            return None
    return unknown


def _why(defect: Defect, lang: str) -> str:
    text = _WHY[lang].format(why=defect.text[lang][1], effect=EFFECTS[defect.effect][lang])
    if defect.affected.fixed:
        text += _UPGRADE[lang].format(component=defect.component, fixed=defect.affected.fixed)
    return text


#: The oldest Megatron-Bridge release that reads a config of each era's key names (bridge-format §1): a
#: config written with ``enable_offline_packing`` runs on 0.6.0 or later, whatever is installed here.
_ERA_FIRST_BRIDGE = {"v0.6": "0.6.0"}


def _ruled_out_by_era(defect: Defect, era: str) -> bool:
    """Whether the config's own key names rule a Bridge defect out when the Bridge version is unknown: a
    v0.6-era config cannot run on a release fixed before 0.6.0 (that is inference from the config, not
    silence about an unknown version)."""
    first = _ERA_FIRST_BRIDGE.get(era)
    fixed = defect.affected.fixed
    if defect.component != BRIDGE or first is None or fixed is None:
        return False
    fixed_release, first_release = release(fixed), release(first)
    return fixed_release is not None and first_release is not None and fixed_release <= first_release


def _applies(defect: Defect, launcher: str | None) -> bool:
    """A defect applies to a launch that runs its code (:attr:`Defect.launchers`); to both when unknown."""
    return launcher is None or launcher in defect.launchers


def _gpu_ok(defect: Defect, gpu: str | None) -> bool:
    """A known GPU architecture outside :attr:`Defect.gpus` rules the defect out; an unknown one is taken for
    a data-centre part (:data:`DATACENTRE_GPUS`)."""
    if defect.gpus is None:
        return True
    return gpu in defect.gpus if gpu is not None else bool(defect.gpus & DATACENTRE_GPUS)


def atlas_findings(
    ctx: ConfigFacts,
    raw: dict,
    *,
    stack: Mapping[str, str],
    launcher: str | None = None,
    mlm_flags: Mapping[str, Any] | None = None,
    gpu: str | None = None,
    allow: frozenset[str] | set[str] = frozenset(),
    lang: str = "en",
) -> list[Finding]:
    """The findings of every defect whose trigger holds and whose range covers the stack (or is unknown)."""
    dctx = DefectContext(ctx=ctx, raw=raw, launcher=launcher, mlm_flags=mlm_flags or {})
    findings = []
    for defect in DEFECTS:
        if not _applies(defect, launcher) or not _gpu_ok(defect, gpu):
            continue
        version = stack.get(defect.component)
        if version is not None and not defect.affected.covers(version):
            continue
        if version is None and _ruled_out_by_era(defect, ctx.view.era):
            continue
        unknown_also = _also(defect, stack)
        if unknown_also is None or not defect.trigger(dctx):
            continue
        gpu_unknown = defect.gpus is not None and gpu is None
        known = version is not None and not unknown_also and not gpu_unknown
        severity = ERROR if known and defect.effect == "silent" else WARNING
        message = _message(defect, version, lang)
        for component, affected in unknown_also:
            message += _ALSO[lang].format(component=component, range=affected.describe())
        if defect.gpus is not None:
            names = ", ".join(GPU_NAMES[a] for a in sorted(defect.gpus))
            message += _GPUS[lang].format(gpus=names, unknown=_GPU_UNKNOWN[lang] if gpu_unknown else "")
        scan = dctx.eos_scan() if "packed data" in defect.fields else None
        if scan is not None and scan.hits:
            message += f" [{scan.hits} x EOS id {scan.eos_id}; {scan.first}]"
        findings.append(
            Finding(
                id=defect.id,
                severity=severity,
                fields=list(defect.fields),
                message=message,
                why=_why(defect, lang),
                fix=list(defect.workaround),
                upstream=defect.source,
                allowed=defect.id in allow,
            )
        )
    return findings


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def atlas_markdown() -> str:
    """The atlas as the Markdown table ``docs/doctor.md`` carries (a test keeps the two identical)."""
    lines = [
        "| id | component | affected | effect | trigger reads | workaround | source | finding (en / zh) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d in DEFECTS:
        workaround = "<br>".join(f"`{w}`" for w in d.workaround) or "-"
        if d.affected.fixed:
            workaround += f"<br>upgrade to {d.affected.fixed}"
        needs = "".join(f"<br>with {c} {a.describe()}" for c, a in d.also)
        if d.gpus is not None:
            needs += "<br>on " + "/".join(sorted(d.gpus))
        cells = [
            d.id,
            d.component,
            d.affected.describe() + needs,
            EFFECTS[d.effect]["en"],
            ", ".join(f"`{f}`" for f in d.fields),
            workaround,
            d.source,
            f"{d.text['en'][0]} / {d.text['zh'][0]}",
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", "How each range was established:", ""]
    lines += [f"- {d.id}: {d.established}." for d in DEFECTS]
    return "\n".join(lines) + "\n"
