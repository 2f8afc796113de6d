"""Context parallelism, lengths, batches and the pad multiple (group ``parallel``, SP011-SP025;
bridge-format §2, §7, §8)."""

from __future__ import annotations

from bridgepack._bridge_keys import (
    AVG_COLL,
    CP,
    DATA_SEQ,
    GBS,
    MBS,
    MODEL_SEQ,
    OFFLINE,
    PACK_SIZE,
    PAD_MULT,
    PER_TOKEN,
    PP,
    SP,
    SPECS,
    TP,
)
from bridgepack.doctor._config_facts import ConfigFacts
from bridgepack.doctor._findings import (
    BRIDGEPACK_ONLY,
    DOCUMENTED,
    ERROR,
    INFO,
    RAISES,
    RUNTIME,
    WARNING,
    CheckResult,
    Example,
    Hit,
    override,
)
from bridgepack.doctor._registry import rule
from bridgepack.doctor._rules_packing import round_up

# ---------------------------------------------------------------- context parallelism (bridge-format §7, §8)


#: The longest single sequence a pack may hold (PackedSequenceSpecs).
MAX_SINGLE = f"{SPECS}.max_single_sequence_length"


@rule(
    "SP011",
    ERROR,
    (MODEL_SEQ, CP),
    RAISES,
    group="parallel",
    fix=(MODEL_SEQ, DATA_SEQ),
    example=Example((override(CP, 2), override(MODEL_SEQ, 510))),
    en=(
        "seq_length {seq} is not divisible by 2*CP = {mult} (context_parallel_size {cp})",
        "Context parallelism cuts every sequence into 2*CP chunks (zigzag layout).",
    ),
    zh=(
        "seq_length {seq} 不能被 2*CP = {mult} 整除（context_parallel_size {cp}）",
        "上下文并行把每个序列切成 2*CP 块（之字形布局）。",
    ),
)
def cp_divides_seq_length(ctx: ConfigFacts) -> CheckResult:
    m = ctx.view.model
    cp = m.context_parallel_size
    if cp > 1 and m.seq_length % (2 * cp) != 0:
        fixed = round_up(m.seq_length, ctx.pad_needed)  # a multiple of 2*CP that also suits SP (SP024)
        return Hit(
            {"seq": m.seq_length, "cp": cp, "mult": 2 * cp},
            [override(MODEL_SEQ, fixed), override(DATA_SEQ, fixed)],
        )
    return None


def _is_sft(ctx: ConfigFacts) -> bool:
    return ctx.view.dataset.kind in ("sft", "sft_in_batch")


@rule(
    "SP012",
    ERROR,
    (CP, PER_TOKEN),
    RAISES,
    group="parallel",
    fix=(PER_TOKEN,),
    example=Example(
        (override(CP, 2), override(DATA_SEQ, 4096), override(MODEL_SEQ, 4096)), dataset_kind="sft"
    ),
    en=(
        "fine-tuning with CP {cp} needs model.calculate_per_token_loss=true",
        "A CP rank whose shard holds only masked tokens would divide its loss by zero; per-token loss sums "
        "first and divides by the global token count.",
    ),
    zh=(
        "CP 为 {cp} 的微调需要 model.calculate_per_token_loss=true",
        "若某个 CP rank 的分片全部被掩码，其损失会除以零；按 token 计算损失先求和，再除以全局 token 数。",
    ),
)
def cp_finetune_per_token_loss(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    if v.model.context_parallel_size > 1 and _is_sft(ctx) and not v.model.calculate_per_token_loss:
        return Hit({"cp": v.model.context_parallel_size}, [override(PER_TOKEN, True)])
    return None


@rule(
    "SP013",
    ERROR,
    (CP, AVG_COLL),
    RAISES,
    group="parallel",
    fix=(AVG_COLL,),
    example=Example(
        (override(CP, 2), override(PER_TOKEN, True), override(AVG_COLL, True)), dataset_kind="sft"
    ),
    en=(
        "fine-tuning with CP {cp} needs ddp.average_in_collective=false",
        "Averaging in the collective divides by the rank count instead of the token count, which breaks the "
        "per-token loss CP fine-tuning relies on.",
    ),
    zh=(
        "CP 为 {cp} 的微调需要 ddp.average_in_collective=false",
        "在集合通信中求平均是除以 rank 数而非 token 数，会破坏 CP 微调所依赖的按 token 损失。",
    ),
)
def cp_finetune_no_collective_average(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    if v.model.context_parallel_size > 1 and _is_sft(ctx) and v.ddp.average_in_collective:
        return Hit({"cp": v.model.context_parallel_size}, [override(AVG_COLL, False)])
    return None


@rule(
    "SP014",
    ERROR,
    (PER_TOKEN, AVG_COLL),
    RUNTIME,
    group="parallel",
    fix=(AVG_COLL,),
    example=Example((override(PER_TOKEN, True), override(AVG_COLL, True))),
    en=(
        "calculate_per_token_loss and average_in_collective are both on",
        "Per-token loss divides by the global token count itself; Megatron-Core asserts against also "
        "averaging in the gradient collective.",
    ),
    zh=(
        "calculate_per_token_loss 与 average_in_collective 同时开启",
        "按 token 损失自行除以全局 token 数；Megatron-Core 会断言禁止再在梯度集合通信中求平均。",
    ),
)
def per_token_loss_vs_collective_average(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    if v.model.calculate_per_token_loss and v.ddp.average_in_collective:
        return Hit(fix=[override(AVG_COLL, False)])
    return None


# ---------------------------------------------------------------- lengths and batches


@rule(
    "SP015",
    ERROR,
    (MODEL_SEQ, DATA_SEQ),
    RAISES,
    group="parallel",
    fix=(MODEL_SEQ,),
    example=Example((override(MODEL_SEQ, 2048), override(DATA_SEQ, 4096))),
    en=(
        "model.seq_length {model} differs from dataset.seq_length {data}",
        "The model's position and attention shapes must match the rows the data produces.",
    ),
    zh=(
        "model.seq_length {model} 与 dataset.seq_length {data} 不一致",
        "模型的位置与注意力形状必须与数据产生的行一致。",
    ),
)
def seq_lengths_agree(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    if v.dataset.seq_length is not None and v.model.seq_length != v.dataset.seq_length:
        return Hit(
            {"model": v.model.seq_length, "data": v.dataset.seq_length},
            [override(MODEL_SEQ, v.dataset.seq_length)],
        )
    return None


@rule(
    "SP016",
    WARNING,
    (PACK_SIZE, DATA_SEQ, GBS),
    DOCUMENTED,
    group="parallel",
    fix=(PACK_SIZE, GBS),
    example=Example(
        (
            override(OFFLINE, True),
            override(PACK_SIZE, 8192),
            override(DATA_SEQ, 4096),
            override(MODEL_SEQ, 4096),
            override(MBS, 1),
            override(GBS, 8),
        )
    ),
    en=(
        "packed_sequence_size {size} differs from seq_length {seq}",
        "Keep the pack width equal to seq_length. When changing it, keep the token slots per step (pack x "
        "GBS = {slots}) equal so the learning-rate schedule still sees the same tokens per step.",
    ),
    zh=(
        "packed_sequence_size {size} 与 seq_length {seq} 不同",
        "请让打包长度等于 seq_length。修改打包长度时，保持每步 token 槽位（打包长度 x GBS = {slots}）不变，"
        "使学习率调度每步看到的 token 数相同。",
    ),
)
def pack_size_matches_seq_length(ctx: ConfigFacts) -> CheckResult:
    """Pack width differs from seq_length; the fix keeps the token slots per step (pack x GBS) equal."""
    v = ctx.view
    size, seq, gbs = v.offline_specs.packed_sequence_size, v.dataset.seq_length, v.train.global_batch_size
    if not v.dataset.enable_offline_packing or size <= 0 or seq is None or size == seq:
        return None
    fix = [override(PACK_SIZE, seq)]
    slots = size * gbs if gbs else None
    step = (v.train.micro_batch_size or 1) * (ctx.dp or 1)
    if slots is not None and slots % seq == 0 and (slots // seq) % step == 0:
        fix.append(override(GBS, slots // seq))
    return Hit({"size": size, "seq": seq, "slots": slots if slots is not None else "?"}, fix)


# Bridge 0.6.2's validate() already refuses it (its eval batch check; found by `bridgepack verify --bridge`).
@rule(
    "SP017",
    ERROR,
    (GBS, MBS, "data_parallel_size"),
    RAISES,
    group="parallel",
    fix=(GBS,),
    example=Example((override(MBS, 1), override(GBS, 10)), dp=4),
    en=(
        "global_batch_size {gbs} is not a multiple of micro_batch_size {mbs} x DP {dp} (or is below DP)",
        "Each step runs GBS / (MBS x DP) micro-batches on every data-parallel rank; the quotient must be a "
        "whole number of at least 1.",
    ),
    zh=(
        "global_batch_size {gbs} 不是 micro_batch_size {mbs} x DP {dp} 的整数倍（或小于 DP）",
        "每步在每个数据并行 rank 上运行 GBS / (MBS x DP) 个微批，该商必须是不小于 1 的整数。",
    ),
)
def batch_divisibility(ctx: ConfigFacts) -> CheckResult:
    t = ctx.view.train
    if t.global_batch_size is None or t.micro_batch_size is None or t.micro_batch_size <= 0:
        return None
    dp = ctx.dp or 1
    step = t.micro_batch_size * dp
    if t.global_batch_size % step != 0 or t.global_batch_size < dp:
        fixed = max(round_up(t.global_batch_size, step), step)
        return Hit(
            {
                "gbs": t.global_batch_size,
                "mbs": t.micro_batch_size,
                "dp": ctx.dp or "1 (unknown: pass --world-size)",
            },
            [override(GBS, fixed)],
        )
    return None


@rule(
    "SP018",
    ERROR,
    ("world_size", TP, PP, CP),
    RAISES,
    group="parallel",
    example=Example((override(TP, 4),), world_size=6),
    en=(
        "world size {world} is not divisible by TP x PP x CP = {mp}",
        "DP = world size / (TP x PP x CP) must be a whole number.",
    ),
    zh=(
        "world size {world} 不能被 TP x PP x CP = {mp} 整除",
        "DP = world size / (TP x PP x CP) 必须是整数。",
    ),
)
def world_size_divisible(ctx: ConfigFacts) -> CheckResult:
    if ctx.world_size is None:
        return None
    mp = ctx.view.model_parallel_size
    if ctx.world_size % mp != 0:
        return Hit({"world": ctx.world_size, "mp": mp})
    return None


# ---------------------------------------------------------------- pad multiple (bridge-format §2, §7)


@rule(
    "SP019",
    ERROR,
    (PAD_MULT, CP, TP, SP),
    RUNTIME,
    group="parallel",
    fix=(PAD_MULT,),
    example=Example(
        (override(OFFLINE, True), override(PACK_SIZE, 4096), override(CP, 2), override(PER_TOKEN, True))
    ),
    en=(
        "pad_seq_to_mult {pad} is not a multiple of {need}, the alignment this topology needs",
        "Every packed sequence must be a multiple of lcm(2*CP, CP*TP with sequence parallel); Bridge does "
        "not check it at validation and the run fails later. Changing it means re-packing.",
    ),
    zh=(
        "pad_seq_to_mult {pad} 不是 {need} 的整数倍，而当前并行拓扑需要该对齐",
        "每个打包序列的长度必须是 lcm(2*CP, 开启序列并行时的 CP*TP) 的倍数；Bridge 在校验时不检查，训练稍后"
        "才会失败。修改后需要重新打包。",
    ),
)
def pad_multiple_covers_topology(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    pad, need = v.offline_specs.pad_seq_to_mult, ctx.pad_needed
    if v.dataset.enable_offline_packing and isinstance(pad, int) and pad > 0 and pad % need != 0:
        return Hit(
            {"pad": pad, "need": need, "cp": v.model.context_parallel_size}, [override(PAD_MULT, need)]
        )
    return None


@rule(
    "SP020",
    INFO,
    (PAD_MULT, CP, TP, SP),
    BRIDGEPACK_ONLY,
    group="parallel",
    fix=(PAD_MULT,),
    example=Example((override(OFFLINE, True), override(PACK_SIZE, 4096), override(PAD_MULT, 8))),
    en=(
        "pad_seq_to_mult {pad} is larger than the {need} this topology needs",
        "A larger multiple works but pads every sequence more than necessary.",
    ),
    zh=(
        "pad_seq_to_mult {pad} 大于当前拓扑所需的 {need}",
        "更大的倍数可以运行，但会让每个序列多出不必要的填充。",
    ),
)
def pad_multiple_larger_than_needed(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    pad, need = v.offline_specs.pad_seq_to_mult, ctx.pad_needed
    if v.dataset.enable_offline_packing and isinstance(pad, int) and pad > need and pad % need == 0:
        return Hit({"pad": pad, "need": need}, [override(PAD_MULT, need)])
    return None


@rule(
    "SP021",
    ERROR,
    (PAD_MULT,),
    RAISES,
    group="parallel",
    fix=(PAD_MULT,),
    example=Example((override(OFFLINE, True), override(PACK_SIZE, 4096), override(PAD_MULT, 0))),
    en=(
        "pad_seq_to_mult is {pad}; it must be a positive integer",
        "PackedSequenceSpecs rejects a non-positive multiple when it is built.",
    ),
    zh=(
        "pad_seq_to_mult 为 {pad}；必须是正整数",
        "PackedSequenceSpecs 在构造时会拒绝非正的倍数。",
    ),
)
def pad_multiple_positive(ctx: ConfigFacts) -> CheckResult:
    pad = ctx.view.offline_specs.pad_seq_to_mult
    if ctx.view.dataset.offline_packing_specs is not None and isinstance(pad, int) and pad <= 0:
        return Hit({"pad": pad}, [override(PAD_MULT, ctx.pad_needed)])
    return None


@rule(
    "SP022",
    ERROR,
    (PAD_MULT,),
    RUNTIME,
    group="parallel",
    fix=(PAD_MULT,),
    example=Example((override(OFFLINE, True), override(PACK_SIZE, 4096), override(PAD_MULT, None))),
    en=(
        "pad_seq_to_mult is null",
        "null passes Bridge's spec check but its packed-data loader needs an integer and fails at runtime.",
    ),
    zh=(
        "pad_seq_to_mult 为 null",
        "null 能通过 Bridge 的 specs 检查，但其打包数据加载器需要整数，运行时会失败。",
    ),
)
def pad_multiple_not_null(ctx: ConfigFacts) -> CheckResult:
    if ctx.view.dataset.offline_packing_specs is not None and ctx.view.offline_specs.pad_seq_to_mult is None:
        return Hit(fix=[override(PAD_MULT, ctx.pad_needed)])
    return None


@rule(
    "SP023",
    ERROR,
    (MAX_SINGLE, PACK_SIZE),
    RAISES,
    group="parallel",
    fix=(MAX_SINGLE,),
    example=Example((override(OFFLINE, True), override(PACK_SIZE, 4096), override(MAX_SINGLE, 5000))),
    en=(
        "max_single_sequence_length {limit} is not within 1..packed_sequence_size ({size})",
        "A single sequence cannot be longer than the pack it must fit in.",
    ),
    zh=(
        "max_single_sequence_length {limit} 不在 1..packed_sequence_size（{size}）范围内",
        "单个序列不能长于容纳它的打包行。",
    ),
)
def max_single_sequence_length(ctx: ConfigFacts) -> CheckResult:
    specs = ctx.view.dataset.offline_packing_specs
    if specs is None or specs.max_single_sequence_length is None:
        return None
    limit = specs.max_single_sequence_length
    if limit <= 0 or (specs.packed_sequence_size > 0 and limit > specs.packed_sequence_size):
        fix = [override(MAX_SINGLE, specs.packed_sequence_size)] if specs.packed_sequence_size > 0 else []
        return Hit({"limit": limit, "size": specs.packed_sequence_size}, fix)
    return None


@rule(
    "SP024",
    ERROR,
    (DATA_SEQ, CP, TP, SP),
    RAISES,
    group="parallel",
    fix=(DATA_SEQ, MODEL_SEQ),
    example=Example(
        (override(DATA_SEQ, 4094), override(MODEL_SEQ, 4094), override(TP, 4), override(SP, True)),
        dataset_kind="sft_in_batch",
    ),
    en=(
        "seq_length {seq} is not divisible by {need}, the CP/SP padding multiple of in-batch datasets",
        "The in-batch collate pads every sequence to this multiple; the row width must hold whole chunks.",
    ),
    zh=(
        "seq_length {seq} 不能被 {need} 整除，这是批内打包数据集的 CP/SP 填充倍数",
        "批内打包的 collate 会把每个序列填充到该倍数；行宽必须容纳完整的块。",
    ),
)
def in_batch_seq_length_multiple(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    seq, need = v.dataset.seq_length, ctx.pad_needed
    if v.dataset.kind == "sft_in_batch" and seq is not None and seq % need != 0:
        fixed = round_up(seq, need)
        return Hit({"seq": seq, "need": need}, [override(DATA_SEQ, fixed), override(MODEL_SEQ, fixed)])
    return None


@rule(
    "SP025",
    WARNING,
    (PACK_SIZE, "kernel_chunk"),
    BRIDGEPACK_ONLY,
    group="parallel",
    fix=(PACK_SIZE,),
    example=Example(
        (
            override(OFFLINE, True),
            override(PACK_SIZE, 4096),
        ),
        kernel_chunk=3000,
    ),
    en=(
        "packed_sequence_size {size} is not divisible by the kernel chunk {chunk}",
        "The attention kernel you named processes the row in chunks of this size.",
    ),
    zh=(
        "packed_sequence_size {size} 不能被 kernel 块大小 {chunk} 整除",
        "你指定的注意力 kernel 以该大小分块处理每一行。",
    ),
)
def kernel_chunk_divides_width(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    chunk = ctx.kernel_chunk
    if not chunk or not v.dataset.enable_offline_packing:
        return None
    size = v.offline_specs.packed_sequence_size
    if size > 0 and size % chunk != 0:
        return Hit({"size": size, "chunk": chunk}, [override(PACK_SIZE, round_up(size, chunk))])
    return None
