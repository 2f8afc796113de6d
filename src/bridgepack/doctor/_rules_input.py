"""The input itself (group ``input``, SP100-SP199): what the loader found wrong while reading the
config (``LoadProblem``), one rule per kind of problem."""

from __future__ import annotations

from collections.abc import Iterator

from bridgepack._bridge_keys import (
    LEGACY_IN_BATCH,
    LEGACY_SPECS,
    OFFLINE,
)
from bridgepack.doctor._config_facts import ConfigFacts
from bridgepack.doctor._findings import (
    AT_MERGE,
    BRIDGEPACK_ONLY,
    ERROR,
    INFO,
    RAISES,
    WARNING,
    CheckResult,
    Example,
    Hit,
    override,
)
from bridgepack.doctor._registry import rule


def _problems(ctx: ConfigFacts, kind: str) -> Iterator[Hit]:
    """One hit per loader problem of ``kind``, about its key (where the YAML wrote it is the location)."""
    for p in ctx.problems:
        if p.kind == kind:
            fields = [p.key] + ([p.suggestion] if p.suggestion else [])
            yield Hit({"key": p.key, "detail": p.detail, "suggestion": p.suggestion}, [], fields)


@rule(
    "SP100",
    WARNING,
    ("<section>",),
    AT_MERGE,
    group="input",
    example=Example(("modle.seq_length=4096",)),
    en=(
        "unknown config section '{key}'",
        "Bridge skips an unknown section of a YAML with a warning when it merges the file (its values are "
        "never read) and refuses it as a command-line override.",
    ),
    zh=(
        "未知的配置段 '{key}'",
        "Bridge 合并 YAML 时跳过未知配置段并仅打印警告（其中的值永远不会被读取），"
        "作为命令行覆盖项时则直接拒绝。",
    ),
)
def unknown_section(ctx: ConfigFacts) -> CheckResult:
    return list(_problems(ctx, "unknown-section"))


@rule(
    "SP101",
    WARNING,
    ("<field>",),
    AT_MERGE,
    group="input",
    example=Example(("model.context_paralel_size=2",)),
    en=(
        "unknown field '{key}'",
        "Bridge skips an unknown field of a YAML with a warning when it merges the file and refuses it as a "
        "command-line override: a misspelled value is never used.",
    ),
    zh=(
        "未知字段 '{key}'",
        "Bridge 合并 YAML 时跳过未知字段并仅打印警告，作为命令行覆盖项时则直接拒绝：拼错的值永远不会生效。",
    ),
)
def unknown_field(ctx: ConfigFacts) -> CheckResult:
    return list(_problems(ctx, "unknown-field"))


@rule(
    "SP102",
    ERROR,
    ("<field>",),
    RAISES,
    group="input",
    example=Example(("model.sequence_parallel=maybe",)),
    en=(
        "field '{key}' has the wrong type: {detail}",
        "Bridge builds typed dataclasses from the config; a wrong type fails or misbehaves.",
    ),
    zh=(
        "字段 '{key}' 类型错误：{detail}",
        "Bridge 根据配置构建带类型的 dataclass；类型错误会导致失败或异常行为。",
    ),
)
def wrong_type(ctx: ConfigFacts) -> CheckResult:
    return list(_problems(ctx, "wrong-type"))


@rule(
    "SP106",
    ERROR,
    ("<field>",),
    RAISES,
    group="input",
    example=Example(("model.context_parallel_size=0",)),
    en=(
        "field '{key}' is out of range: {detail}",
        "A parallel size, batch or length outside its range divides by zero or never runs; the other rules "
        "read the default in its place.",
    ),
    zh=(
        "字段 '{key}' 超出取值范围：{detail}",
        "并行度、批大小或长度超出范围会导致除以零或无法运行；其他规则在此处按默认值检查。",
    ),
)
def out_of_range(ctx: ConfigFacts) -> CheckResult:
    return list(_problems(ctx, "out-of-range"))


@rule(
    "SP107",
    ERROR,
    ("<field>",),
    BRIDGEPACK_ONLY,
    group="input",
    en=(
        "field '{key}' is {detail}",
        "A YAML key written twice in one mapping silently keeps the last value; the other one is lost.",
    ),
    zh=(
        "字段 '{key}' {detail}",
        "同一映射中重复的 YAML 键会静默保留最后一个值，另一个值被丢弃。",
    ),
)
def duplicate_key(ctx: ConfigFacts) -> CheckResult:
    return list(_problems(ctx, "duplicate-key"))


@rule(
    "SP103",
    ERROR,
    ("<field>",),
    BRIDGEPACK_ONLY,
    group="input",
    example=Example(("model.seq_length=4096", "model.seq_length=8192")),
    en=(
        "contradictory values: {detail}",
        "The same field is given two different values in one input; say which one you mean.",
    ),
    zh=(
        "取值互相矛盾：{detail}",
        "同一输入中同一字段被赋予两个不同的值；请明确要用哪一个。",
    ),
)
def contradictory_overrides(ctx: ConfigFacts) -> CheckResult:
    return list(_problems(ctx, "contradiction"))


@rule(
    "SP104",
    WARNING,
    ("dataset",),
    BRIDGEPACK_ONLY,
    group="input",
    example=Example((override(OFFLINE, True), "dataset.packed_sequence_specs.packed_sequence_size=2048")),
    en=(
        "the config mixes names of two Bridge releases: {detail}",
        "v0.6 renamed the packing fields; a config with both sets means one of them is silently stale.",
    ),
    zh=(
        "配置混用了两个 Bridge 版本的字段名：{detail}",
        "v0.6 重命名了打包字段；同时出现两套名称说明其中一套已被静默忽略。",
    ),
)
def mixed_era(ctx: ConfigFacts) -> CheckResult:
    return list(_problems(ctx, "mixed-era"))


@rule(
    "SP105",
    INFO,
    (LEGACY_SPECS, LEGACY_IN_BATCH),
    RAISES,
    group="input",
    example=Example(("dataset.packed_sequence_specs.packed_sequence_size=2048",)),
    en=(
        "the config uses <= v0.5 packing names (packed_sequence_specs / pack_sequences_in_batch)",
        "Bridge 0.6 renamed them to enable_offline_packing + offline_packing_specs and "
        "enable_in_batch_packing; bridgepack read them as the new names.",
    ),
    zh=(
        "配置使用了 v0.5 及更早的打包字段名（packed_sequence_specs / pack_sequences_in_batch）",
        "Bridge 0.6 将其重命名为 enable_offline_packing + offline_packing_specs 和 enable_in_batch_packing；"
        "bridgepack 已按新名称读取。",
    ),
)
def legacy_names(ctx: ConfigFacts) -> CheckResult:
    if ctx.view.era != "<=v0.5":
        return None
    return Hit(fix=[])
