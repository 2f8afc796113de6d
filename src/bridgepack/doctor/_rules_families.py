"""Model families, multi-token prediction, Energon native packing, PEFT (group ``families``,
SP026-SP031; bridge-format §8)."""

from __future__ import annotations

from bridgepack._bridge_keys import (
    AVG_COLL,
    DEFER,
    GRAPH_IMPL,
    IN_BATCH,
    MBS,
    MTP,
    OFFLINE,
    PACK_SIZE,
    PER_TOKEN,
    PP,
    SPECS,
)
from bridgepack.doctor._config_facts import ConfigFacts
from bridgepack.doctor._family import ASR, GLM45, QWEN3_NEXT, QWEN35_VL, QWEN_OMNI
from bridgepack.doctor._findings import (
    DOCUMENTED,
    ERROR,
    RAISES,
    CheckResult,
    Example,
    Hit,
    override,
)
from bridgepack.doctor._registry import rule
from bridgepack.doctor._rules_packing import packing_off

#: The weights PEFT adapters train on top of.
PRETRAINED = "checkpoint.pretrained_checkpoint"


@rule(
    "SP026",
    ERROR,
    ("model", OFFLINE),
    DOCUMENTED,
    group="families",
    fix=(OFFLINE, SPECS),
    example=Example(
        (
            override(OFFLINE, True),
            override(PACK_SIZE, 4096),
        ),
        model_family="qwen3-next",
    ),
    en=(
        "{family} (from {source}) does not support offline packing",
        "Bridge's recipes for this family turn offline packing off and note that packed sequences are not "
        "supported.",
    ),
    zh=(
        "{family}（来自 {source}）不支持离线打包",
        "Bridge 为该模型系列提供的 recipe 关闭了离线打包，并注明不支持打包序列。",
    ),
)
def family_without_offline_packing(ctx: ConfigFacts) -> CheckResult:
    d = ctx.view.dataset
    if ctx.family in (QWEN3_NEXT, GLM45) and (
        d.enable_offline_packing or d.offline_packing_specs is not None
    ):
        return Hit(
            {"family": ctx.family, "source": ctx.family_source},
            [override(OFFLINE, False), override(SPECS, None)],
        )
    return None


@rule(
    "SP027",
    ERROR,
    ("model", IN_BATCH, DEFER),
    DOCUMENTED,
    group="families",
    fix=(IN_BATCH, DEFER, OFFLINE, SPECS),
    example=Example((override(IN_BATCH, True), override(MBS, 2)), recipe="qwen35_vl_9b_finetune_config"),
    en=(
        "{family} (from {source}) packs inside its own training step: use defer_in_batch_packing_to_step",
        "Bridge's recipes for this family disable dataset-level packing and let the step pack the batch.",
    ),
    zh=(
        "{family}（来自 {source}）在自身训练 step 中打包：请使用 defer_in_batch_packing_to_step",
        "Bridge 为该模型系列提供的 recipe 关闭数据集层面的打包，由训练 step 自行打包。",
    ),
)
def family_defers_packing_to_step(ctx: ConfigFacts) -> CheckResult:
    d = ctx.view.dataset
    if ctx.family == QWEN35_VL and (d.enable_in_batch_packing or d.enable_offline_packing):
        fix = [override(IN_BATCH, False), override(DEFER, True)]
        if d.enable_offline_packing:
            fix += [override(OFFLINE, False), override(SPECS, None)]
        return Hit({"family": ctx.family, "source": ctx.family_source}, fix)
    return None


@rule(
    "SP028",
    ERROR,
    ("model", OFFLINE, IN_BATCH),
    DOCUMENTED,
    group="families",
    fix=(OFFLINE, SPECS, IN_BATCH, DEFER),
    example=Example(
        (
            override(OFFLINE, True),
            override(PACK_SIZE, 4096),
            "model.hf_model_id=Qwen/Qwen3-Omni-30B-A3B-Instruct",
        )
    ),
    en=(
        "{family} (from {source}) does not support sequence packing",
        "Bridge's recipes for this family train without packing.",
    ),
    zh=(
        "{family}（来自 {source}）不支持序列打包",
        "Bridge 为该模型系列提供的 recipe 均不使用打包训练。",
    ),
)
def family_without_packing(ctx: ConfigFacts) -> CheckResult:
    if ctx.family in (QWEN_OMNI, ASR) and ctx.view.packing:
        return Hit({"family": ctx.family, "source": ctx.family_source}, packing_off(ctx))
    return None


@rule(
    "SP029",
    ERROR,
    (MTP, OFFLINE, IN_BATCH),
    DOCUMENTED,
    group="families",
    fix=(OFFLINE, SPECS, IN_BATCH, DEFER),
    example=Example((override(OFFLINE, True), override(PACK_SIZE, 4096), override(MTP, 1))),
    en=(
        "multi-token prediction (mtp_num_layers {layers}) with sequence packing",
        "MTP shifts labels across the packed row and crosses sequence boundaries; Bridge documents it as "
        "unsupported for fine-tuning with packing (and enforces it only for Energon native packing).",
    ),
    zh=(
        "多 token 预测（mtp_num_layers {layers}）与序列打包同时使用",
        "MTP 会在打包行内移位标签并跨越序列边界；Bridge 文档注明打包微调不支持 MTP（仅对 Energon 原生打包强"
        "制检查）。",
    ),
)
def mtp_with_packing(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    if (v.model.mtp_num_layers or 0) > 0 and v.packing:
        return Hit({"layers": v.model.mtp_num_layers}, packing_off(ctx))
    return None


@rule(
    "SP030",
    ERROR,
    ("dataset.packing_buffer_size", MBS, PER_TOKEN, AVG_COLL, MTP, GRAPH_IMPL, PP, IN_BATCH),
    RAISES,
    group="families",
    fix=(MBS, PER_TOKEN, AVG_COLL, MTP, GRAPH_IMPL, PP, IN_BATCH),
    example=Example(("dataset.packing_buffer_size=100", override(MBS, 2))),
    en=(
        "Energon native packing (packing_buffer_size) conflicts with: {broken}",
        "Energon native packing needs MBS 1, per-token loss, no collective averaging, no MTP, no CUDA "
        "graphs, no pipeline parallelism and no in-batch packing.",
    ),
    zh=(
        "Energon 原生打包（packing_buffer_size）与以下设置冲突：{broken}",
        "Energon 原生打包要求 MBS 为 1、按 token 损失、不在集合通信中求平均、无 MTP、无 CUDA Graph、无流水线"
        "并行且不开启批内打包。",
    ),
)
def energon_native_packing(ctx: ConfigFacts) -> CheckResult:
    v = ctx.view
    if v.dataset.packing_buffer_size is None:
        return None
    broken: list[str] = []
    fix: list[str] = []
    checks = (
        (v.train.micro_batch_size not in (None, 1), MBS, 1),
        (not v.model.calculate_per_token_loss, PER_TOKEN, True),
        (v.ddp.average_in_collective, AVG_COLL, False),
        ((v.model.mtp_num_layers or 0) > 0, MTP, None),
        (v.model.cuda_graph_impl != "none", GRAPH_IMPL, "none"),
        (v.model.pipeline_model_parallel_size > 1, PP, 1),
        (v.dataset.enable_in_batch_packing, IN_BATCH, False),
    )
    for bad, key, good in checks:
        if bad:
            broken.append(key)
            fix.append(override(key, good))
    if broken:
        return Hit({"broken": ", ".join(broken)}, fix)
    return None


@rule(
    "SP031",
    ERROR,
    ("peft", PRETRAINED),
    RAISES,
    group="families",
    fix=(PRETRAINED,),
    example=Example(("peft._target_=megatron.bridge.peft.lora.LoRA",)),
    en=(
        "PEFT is configured without checkpoint.pretrained_checkpoint",
        "Adapters are trained on top of frozen pretrained weights, which must be loaded from somewhere.",
    ),
    zh=(
        "配置了 PEFT，但未设置 checkpoint.pretrained_checkpoint",
        "适配器在冻结的预训练权重之上训练，必须指定权重的加载位置。",
    ),
)
def peft_needs_checkpoint(ctx: ConfigFacts) -> CheckResult:
    if ctx.view.peft and ctx.view.checkpoint.pretrained_checkpoint is None:
        return Hit(fix=[f"{PRETRAINED}=/path/to/pretrained/checkpoint"])
    return None
