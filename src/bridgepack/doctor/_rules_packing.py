"""Packing switches, fixed-width rows and CUDA graphs (group ``packing``, SP001-SP010; bridge-format §1,
§4, §8).

Each rule is one check with everything said about it in its :func:`~bridgepack.doctor._registry.rule` call:
severity, the fields it reads, the upstream behaviour it mirrors, the keys its fix sets, a config that
makes it fire, and its message and why in English and Chinese.
"""

from __future__ import annotations

import math

from bridgepack._bridge_keys import (
    DATA_SEQ,
    DEFER,
    GBS,
    GRAPH_IMPL,
    GRAPH_SCOPE,
    IN_BATCH,
    MBS,
    MODEL_SEQ,
    OFFLINE,
    PACK_SIZE,
    PAD_CU,
    PAD_TO_MAX,
    SPECS,
)
from bridgepack.doctor._config_facts import ConfigFacts
from bridgepack.doctor._findings import (
    ERROR,
    RAISES,
    RUNTIME,
    CheckResult,
    Example,
    Hit,
    override,
)
from bridgepack.doctor._registry import rule

FULL_ITERATION_IMPL = "full_iteration"
TE_IMPL = "transformer_engine"
LOCAL_IMPL = "local"


def packing_off(ctx: ConfigFacts) -> list[str]:
    """Overrides that switch every kind of packing off."""
    d = ctx.view.dataset
    out = []
    if d.enable_offline_packing or d.offline_packing_specs is not None:
        out += [override(OFFLINE, False), override(SPECS, None)]
    if d.enable_in_batch_packing:
        out.append(override(IN_BATCH, False))
    if d.defer_in_batch_packing_to_step:
        out.append(override(DEFER, False))
    return out


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def smallest_factor(n: int) -> int:
    """The smallest divisor of ``n >= 2`` above 1 (``n`` itself when it is prime)."""
    return next((m for m in range(2, math.isqrt(n) + 1) if n % m == 0), n)


@rule(
    "SP001",
    ERROR,
    (OFFLINE, IN_BATCH),
    RAISES,
    group="packing",
    fix=(IN_BATCH,),
    example=Example((override(OFFLINE, True), override(PACK_SIZE, 4096), override(IN_BATCH, True))),
    en=(
        "offline packing and in-batch packing are both enabled",
        "The two packing modes build batches in incompatible ways; Bridge accepts exactly one.",
    ),
    zh=(
        "离线打包与批内打包同时开启",
        "两种打包方式构造批次的方法互不兼容，Bridge 只允许开启其中一种。",
    ),
)
def offline_and_in_batch(ctx: ConfigFacts) -> CheckResult:
    d = ctx.view.dataset
    if d.enable_offline_packing and d.enable_in_batch_packing:
        return Hit(fix=[override(IN_BATCH, False)])
    return None


@rule(
    "SP002",
    ERROR,
    (OFFLINE, SPECS),
    RAISES,
    group="packing",
    fix=(OFFLINE,),
    example=Example((override(OFFLINE, True),)),
    en=(
        "enable_offline_packing is on but offline_packing_specs is not set",
        "Offline packing needs the specs (pack size, pad multiple) to find or build the packed files.",
    ),
    zh=(
        "已开启 enable_offline_packing，但未设置 offline_packing_specs",
        "离线打包需要 specs（打包长度、对齐倍数）才能找到或生成打包文件。",
    ),
)
def offline_without_specs(ctx: ConfigFacts) -> CheckResult:
    d = ctx.view.dataset
    if d.enable_offline_packing and d.offline_packing_specs is None:
        return Hit(fix=[override(OFFLINE, False)])
    return None


@rule(
    "SP003",
    ERROR,
    (SPECS, OFFLINE),
    RAISES,
    group="packing",
    fix=(OFFLINE,),
    example=Example((override(PACK_SIZE, 4096),)),
    en=(
        "offline_packing_specs is set but enable_offline_packing is off",
        "Since v0.6 the specs no longer switch packing on by themselves; Bridge refuses the half-set config.",
    ),
    zh=(
        "设置了 offline_packing_specs，但 enable_offline_packing 未开启",
        "自 v0.6 起 specs 不再自动开启打包；Bridge 拒绝只设置一半的配置。",
    ),
)
def specs_without_offline(ctx: ConfigFacts) -> CheckResult:
    d = ctx.view.dataset
    if d.offline_packing_specs is not None and not d.enable_offline_packing:
        return Hit(fix=[override(OFFLINE, True)])
    return None


@rule(
    "SP004",
    ERROR,
    (PACK_SIZE,),
    RAISES,
    group="packing",
    fix=(PACK_SIZE,),
    example=Example(
        (
            override(OFFLINE, True),
            override(PACK_SIZE, -1),
            override(DATA_SEQ, 4096),
            override(MODEL_SEQ, 4096),
        )
    ),
    en=(
        "packed_sequence_size is {size}; it must be > 0 with offline packing",
        "The pack width is the capacity of every packed row; -1 is only the unset default.",
    ),
    zh=(
        "packed_sequence_size 为 {size}；离线打包时必须大于 0",
        "打包长度是每个打包行的容量；-1 只是未设置时的默认值。",
    ),
)
def pack_size_positive(ctx: ConfigFacts) -> CheckResult:
    d = ctx.view.dataset
    specs = d.offline_packing_specs
    if d.enable_offline_packing and specs is not None and specs.packed_sequence_size <= 0:
        fix = [override(PACK_SIZE, d.seq_length)] if d.seq_length else []
        return Hit({"size": specs.packed_sequence_size}, fix)
    return None


@rule(
    "SP005",
    ERROR,
    (MBS, GBS, PACK_SIZE),
    RAISES,
    group="packing",
    fix=(MBS, GBS, PACK_SIZE, DATA_SEQ, MODEL_SEQ),
    example=Example(
        (
            override(OFFLINE, True),
            override(PACK_SIZE, 4096),
            override(DATA_SEQ, 4096),
            override(MODEL_SEQ, 4096),
            override(MBS, 2),
            override(GBS, 64),
        )
    ),
    en=(
        "micro_batch_size is {mbs} with offline packing; packed training needs micro_batch_size 1",
        "A packed row already holds many samples and THD attention takes one row per micro-batch. The fix "
        "keeps the token slots per step: GBS/MBS rows of pack size x MBS.",
    ),
    zh=(
        "离线打包时 micro_batch_size 为 {mbs}；打包训练要求 micro_batch_size 为 1",
        "一个打包行已包含多个样本，THD 注意力每个微批只接受一行。修复保持每步 token 槽位不变：GBS/MBS 行，每"
        "行长度为打包长度 x MBS。",
    ),
)
def offline_micro_batch(ctx: ConfigFacts) -> CheckResult:
    """MBS > 1 with offline packing. The fix keeps the token slots per step: MBS 1, GBS/MBS rows of N*MBS
    (GBS rounded up to a multiple of DP when DP is known, so the batch still divides), and the sequence
    length set to the new pack size as packed training wants it (bridge-format §4; SP016 otherwise)."""
    v = ctx.view
    mbs, gbs = v.train.micro_batch_size, v.train.global_batch_size
    if not v.dataset.enable_offline_packing or mbs is None or mbs <= 1:
        return None
    size = v.offline_specs.packed_sequence_size
    fix = [override(MBS, 1)]
    if gbs is not None:
        fix.append(override(GBS, round_up(max(gbs // mbs, 1), ctx.dp or 1)))
    if size > 0:
        fix.append(override(PACK_SIZE, size * mbs))
        if v.dataset.seq_length is not None:
            fix += [override(DATA_SEQ, size * mbs), override(MODEL_SEQ, size * mbs)]
    return Hit({"mbs": mbs, "gbs": gbs, "size": size}, fix)


@rule(
    "SP006",
    ERROR,
    (IN_BATCH, MBS, GBS, "data_parallel_size"),
    RAISES,
    group="packing",
    fix=(MBS, GBS),
    example=Example((override(IN_BATCH, True), override(MBS, 1), override(GBS, 32)), world_size=8),
    en=(
        "in-batch packing with micro_batch_size 1 has nothing to pack",
        "In-batch packing concatenates the sequences of one micro-batch; with one sequence it is a no-op "
        "that Bridge rejects. The fix keeps in-batch packing and the global batch: the smallest "
        "micro_batch_size above 1 that divides GBS / DP (GBS rounded up to a multiple of 2 x DP when none "
        "does).",
    ),
    zh=(
        "micro_batch_size 为 1 时批内打包没有可打包的内容",
        "批内打包拼接同一微批中的多个序列；只有一个序列时毫无作用，Bridge 会拒绝。"
        "修复保留批内打包和全局批大小：取能整除 GBS / DP 的最小的大于 1 的 micro_batch_size"
        "（都不能整除时把 GBS 向上取整到 2 x DP 的倍数）。",
    ),
)
def in_batch_micro_batch(ctx: ConfigFacts) -> CheckResult:
    """In-batch packing with MBS 1. The fix raises MBS rather than turning packing off (what the user asked
    for stays): GBS samples per step are kept when a micro-batch size > 1 divides GBS / DP, else MBS 2 and
    GBS rounded up so that GBS % (MBS x DP) == 0 (SP017 holds after it)."""
    v = ctx.view
    if not v.dataset.enable_in_batch_packing or v.train.micro_batch_size != 1:
        return None
    gbs, dp = v.train.global_batch_size, ctx.dp or 1
    per_rank = gbs // dp if gbs is not None and gbs % dp == 0 else 0
    if per_rank >= 2:
        return Hit(fix=[override(MBS, smallest_factor(per_rank))])
    fix = [override(MBS, 2)]
    if gbs is not None:
        fix.append(override(GBS, round_up(max(gbs, 1), 2 * dp)))
    return Hit(fix=fix)


@rule(
    "SP007",
    ERROR,
    (PAD_CU, PAD_TO_MAX),
    RAISES,
    group="packing",
    fix=(PAD_TO_MAX,),
    example=Example((override(OFFLINE, True), override(PACK_SIZE, 4096), override(PAD_CU, True))),
    en=(
        "pad_cu_seqlens is on but packed rows are not padded to a fixed width (pad_to_max_length)",
        "Padded cu_seqlens have a fixed length only when every row has the fixed pack width.",
    ),
    zh=(
        "开启了 pad_cu_seqlens，但打包行未填充到固定宽度（pad_to_max_length）",
        "只有每行都填充到固定的打包宽度时，填充后的 cu_seqlens 才有固定长度。",
    ),
)
def pad_cu_needs_fixed_width(ctx: ConfigFacts) -> CheckResult:
    d = ctx.view.dataset
    if d.offline_packing_specs is not None and d.offline_packing_specs.pad_cu_seqlens and not d.fixed_width:
        return Hit(fix=[override(PAD_TO_MAX, True)])
    return None


def graph_modules(ctx: ConfigFacts) -> list[str]:
    """Per-layer graph modules named in cuda_graph_modules / cuda_graph_scope (full-iteration excluded)."""
    names: list[str] = []
    for value in (ctx.view.model.cuda_graph_modules, ctx.view.model.cuda_graph_scope):
        items = value if isinstance(value, list) else [value] if value else []
        names += [str(item).rsplit(".", 1)[-1] for item in items]
    return [
        n for n in dict.fromkeys(names) if n not in ("full_iteration", "full_iteration_inference", "full")
    ]


def full_iteration_graph(ctx: ConfigFacts) -> bool:
    m = ctx.view.model
    if m.cuda_graph_impl == FULL_ITERATION_IMPL:
        return True
    if m.cuda_graph_impl != LOCAL_IMPL:
        return False
    for value in (m.cuda_graph_modules, m.cuda_graph_scope):
        items = value if isinstance(value, list) else [value] if value else []
        if any(str(item).rsplit(".", 1)[-1] == "full_iteration" for item in items):
            return True
    return False


@rule(
    "SP008",
    ERROR,
    (GRAPH_IMPL, OFFLINE, PAD_TO_MAX),
    RAISES,
    group="packing",
    fix=(PAD_TO_MAX,),
    example=Example(
        (
            override(OFFLINE, True),
            override(PACK_SIZE, 4096),
            override(GRAPH_IMPL, TE_IMPL),
            override(GRAPH_SCOPE, "[mlp]"),
        )
    ),
    en=(
        "CUDA graphs (cuda_graph_impl={impl}) with offline packing need pad_to_max_length",
        "A captured graph replays fixed tensor shapes; packed rows of varying width break the replay.",
    ),
    zh=(
        "离线打包下使用 CUDA Graph（cuda_graph_impl={impl}）需要 pad_to_max_length",
        "捕获的图按固定张量形状重放；宽度变化的打包行会使重放失败。",
    ),
)
def graphs_need_fixed_width(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    if v.dataset.offline_packing_specs is None or v.dataset.fixed_width:
        return None
    if full_iteration_graph(ctx) or v.model.cuda_graph_impl == TE_IMPL:
        return Hit({"impl": v.model.cuda_graph_impl}, [override(PAD_TO_MAX, True)])
    return None


@rule(
    "SP009",
    ERROR,
    (GRAPH_IMPL, GRAPH_SCOPE, PAD_CU),
    RAISES,
    group="packing",
    fix=(PAD_CU, PAD_TO_MAX),
    example=Example(
        (override(OFFLINE, True), override(PACK_SIZE, 4096), override(GRAPH_IMPL, FULL_ITERATION_IMPL))
    ),
    en=(
        "CUDA graphs that capture attention (cuda_graph_impl={impl}) need pad_cu_seqlens",
        "Packed attention reads cu_seqlens; a captured graph needs them at a fixed length too.",
    ),
    zh=(
        "捕获注意力的 CUDA Graph（cuda_graph_impl={impl}）需要开启 pad_cu_seqlens",
        "打包注意力读取 cu_seqlens；被捕获的图要求它们同样具有固定长度。",
    ),
)
def attention_graphs_need_pad_cu(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    specs = v.dataset.offline_packing_specs
    if specs is None or specs.pad_cu_seqlens:
        return None
    modules = graph_modules(ctx)
    captures_attention = full_iteration_graph(ctx) or (
        v.model.cuda_graph_impl == TE_IMPL and (not modules or "attn" in modules)
    )
    if captures_attention:
        fix = [override(PAD_CU, True)] + ([] if v.dataset.fixed_width else [override(PAD_TO_MAX, True)])
        return Hit({"impl": v.model.cuda_graph_impl}, fix)
    return None


@rule(
    "SP010",
    ERROR,
    (PAD_CU, f"{SPECS}.packed_metadata_path"),
    RUNTIME,
    group="packing",
    en=(
        "pad_cu_seqlens is on but no metadata file ({{N}}_metadata.jsonl) is beside the packed data {path}",
        "With pad_cu_seqlens the collate reads max_samples_per_bin from the metadata; without it the run "
        "fails when the first batch is built. Re-pack, or point packed_metadata_path at the sidecar.",
    ),
    zh=(
        "开启了 pad_cu_seqlens，但打包数据 {path} 旁没有元数据文件（{{N}}_metadata.jsonl）",
        "pad_cu_seqlens 需要从元数据读取 max_samples_per_bin；缺少时训练会在构造第一个批次时失败。请重新打包"
        "，或将 packed_metadata_path 指向该文件。",
    ),
)
def pad_cu_needs_metadata(ctx: ConfigFacts) -> CheckResult:
    specs = ctx.view.dataset.offline_packing_specs
    if specs is None or not specs.pad_cu_seqlens:
        return None
    if ctx.facts is not None and ctx.facts.metadata_path is None:
        return Hit({"path": ctx.packed_path or ""})
    return None
