"""The atlas entries of Megatron-Core (and Megatron-LM's training loop): one keyword block per upstream
bug, in id order.

Ranges were read from the ``core_v*`` tags of
Megatron-LM and the megatron-core wheels. Find an entry by its upstream number
(``find_defects("#2952")`` in ``_defects``) or by a text search of this file.
"""

from __future__ import annotations

from seqpack._bridge_keys import CP, IN_BATCH, MTP, OFFLINE, PAD_MULT, PP, TP
from seqpack.doctor._defect_model import MLM_REPO, ON_BOTH, ON_MLM, Defect, WheelMarker
from seqpack.doctor._defect_triggers import (
    capacity_with_padded_packs,
    gdn_packing,
    mla_packing,
    mlm_middle_stage_tp,
    mlm_packing_mbs_above_one,
    mtp_cp_packing,
    mtp_full_recompute_packing,
    seq_aux_loss_packing,
)
from seqpack.doctor._findings import override
from seqpack.doctor._versions import MCORE, Affected

MCORE_DEFECTS: tuple[Defect, ...] = (
    Defect(
        id="SP202",
        component=MCORE,
        launchers=ON_MLM,
        affected=Affected("0.16.0", "0.18.0"),
        effect="crash",
        fields=(PP, TP, OFFLINE, "launcher"),
        trigger=mlm_middle_stage_tp,
        workaround=(override(TP, 1),),
        source=f"{MLM_REPO}#4092 (fix: PR #4103; PR #4150 closed unmerged)",
        established=(
            "megatron/training/utils.py get_batch_on_this_tp_rank broadcasts cu_seqlens/max_seqlen only on "
            "the first and last stage in tags core_v0.16.0 and core_v0.17.0 (core_v0.15.0 has no SFT "
            "cu_seqlens); PR #4103 (first tag core_v0.18.0) adds the intermediate-stage SFT broadcast; "
            "wheels: 0.17.1 lacks it, 0.18.0-0.19.2 have it (the 0.16.1 wheel ships no megatron/training)"
        ),
        text={
            "en": (
                "Megatron-LM SFT packing with PP > 2 and TP > 1: TP ranks of middle stages get no cu_seqlens",
                "Megatron-LM's get_batch broadcasts the packing "
                "metadata to the TP ranks of the first and last "
                "stages only; middle stages fall back to unpacked shapes and fail with a dimension mismatch.",
            ),
            "zh": (
                "Megatron-LM SFT 打包且 PP > 2、TP > 1：中间阶段的 TP rank 收不到 cu_seqlens",
                "Megatron-LM 的 get_batch 只向首末阶段的 TP rank 广播打包元数据；中间阶段退回非打包形状，"
                "报维度不匹配错误。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/training/utils.py", "megatron/core/utils.py"),
            "Broadcast required THD metadata",
            "fixed",
        ),
    ),
    Defect(
        id="SP209",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected("0.16.0", None),
        effect="silent",
        fields=(MTP, CP, OFFLINE, IN_BATCH),
        trigger=mtp_cp_packing,
        workaround=(override(CP, 1),),
        source=f"{MLM_REPO} PR #4495 (dev: PR #4494)",
        established=(
            "_roll_tensor_packed_seq rolls by cu_seqlens_q (unpadded) in tags core_v0.16.0-core_v0.19.0; "
            "main prefers cu_seqlens_q_padded from 2026-08-22; no release carries it (PR #4495 open, #4494 "
            "on dev); the wheels 0.16.1-0.19.2 all roll by cu_seqlens_q; run on CPU (gloo, CP 2), the 0.19.2 "
            "roll with unpadded boundaries mis-targets real tokens, with padded ones it is right"
        ),
        text={
            "en": (
                "multi-token prediction under THD + CP rolls its targets on unpadded boundaries",
                "The CP partition is cut on padded boundaries but the MTP roll used the unpadded ones, so at "
                "lengths that are not multiples of 2*CP the MTP targets are shifted to the wrong tokens (and "
                "very short sequences fail with IndexError).",
            ),
            "zh": (
                "THD + CP 下多词元预测按未填充边界滚动目标",
                "CP 分区按填充后的边界切分，MTP 的滚动却用未填充边界；"
                "长度不是 2*CP 倍数时 MTP 目标错位到错误的词元（很短的序列会报 IndexError）。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/core/transformer/multi_token_prediction.py",),
            "cu_seqlens_q_padded",
            "fixed",
            requires="def _roll_tensor_packed_seq",
        ),
    ),
    Defect(
        id="SP211",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, "0.18.0"),
        effect="crash",
        fields=(MTP, "model.recompute_granularity", OFFLINE, IN_BATCH),
        trigger=mtp_full_recompute_packing,
        workaround=(override("model.recompute_granularity", "selective"),),
        source=f"{MLM_REPO} PR #4593",
        established=(
            "fix commit first in tag core_v0.18.0; the wheels 0.16.1 and 0.17.1 checkpoint the MTP layer "
            "with recompute_granularity full through a generic forward that drops the packed parameters, "
            "0.18.0+ do not; first affected release not established"
        ),
        text={
            "en": (
                "MTP with full activation recomputation crashes on packed sequences",
                "The recomputed MTP forward did not receive the packed-sequence parameters.",
            ),
            "zh": (
                "MTP 与 full 激活重计算在打包序列上崩溃",
                "重计算的 MTP 前向没有拿到打包序列参数。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/core/transformer/multi_token_prediction.py",),
            "def _checkpointed_forward(self, forward_func",
            "affected",
        ),
    ),
    Defect(
        id="SP226",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, "0.18.0"),
        effect="crash",
        fields=("model.multi_latent_attention", OFFLINE, IN_BATCH),
        trigger=mla_packing,
        workaround=(),
        source=f"{MLM_REPO}#1698 (fix: PR #3003)",
        established=(
            "multi_latent_attention.py pads V to the QK head width on the THD path "
            "(_prepare_mla_core_attention_value) in the wheels 0.18.0-0.19.2, not in 0.16.1 and 0.17.1 "
            "(PR #3003, first tag core_v0.18.0)"
        ),
        text={
            "en": (
                "multi-latent attention on packed (THD) sequences: Q/K and V head widths differ and no "
                "attention backend accepts them",
                "MLA's V is narrower than Q/K (the RoPE part rides on Q/K only); under THD no fused or flash "
                "kernel takes unequal widths, so the layer has no backend.",
            ),
            "zh": (
                "打包（THD）序列上的多头潜在注意力：Q/K 与 V 的头宽不同，没有注意力后端接受",
                "MLA 的 V 比 Q/K 窄（RoPE 部分只在 Q/K 上）；THD 下没有融合或 flash 内核接受不等的头宽，该层"
                "无后端可用。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/core/transformer/multi_latent_attention.py",),
            "_prepare_mla_core_attention_value",
            "fixed",
            requires="class MultiLatentAttention",
        ),
    ),
    Defect(
        id="SP227",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected("0.18.0", None),
        effect="slowdown",
        fields=("model.multi_latent_attention", OFFLINE, IN_BATCH),
        trigger=mla_packing,
        workaround=(),
        source=f"{MLM_REPO}#6240 (open; PR #6241)",
        established=(
            "the THD V pad (_prepare_mla_core_attention_value) is in every wheel from 0.18.0 to 0.19.2 and "
            "applies whenever the widths differ, which for MLA is always; the issue (open) measured 6-87% "
            "of a step"
        ),
        text={
            "en": (
                "multi-latent attention on packed sequences pads V to the Q/K width in every layer",
                "The pad and trim cancel out; what remains is a 50% wider V through attention, up to 87% of "
                "a training step at long sequences on the reporter's hardware.",
            ),
            "zh": (
                "打包序列上的多头潜在注意力在每一层把 V 填充到 Q/K 宽度",
                "填充与裁剪相互抵消，剩下的是注意力中宽了 50% 的 V；报告者的硬件上长序列时最多占训练步的 "
                "87%。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/core/transformer/multi_latent_attention.py",),
            "_prepare_mla_core_attention_value",
            "affected",
            requires="class MultiLatentAttention",
        ),
    ),
    Defect(
        id="SP228",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, "0.18.0"),
        effect="crash",
        fields=("model.experimental_attention_variant", "model", OFFLINE, IN_BATCH),
        trigger=gdn_packing,
        workaround=(),
        source=f"{MLM_REPO}#3798 (fix: PR #2645)",
        established=(
            "ssm/gated_delta_net.py raises 'GDN does not support packed sequence' in the wheels 0.16.1 and "
            "0.17.1; 0.18.0 and 0.18.2 have the THD branch (PR #2645), 0.19.x moved the module to a package "
            "that keeps it"
        ),
        text={
            "en": (
                "Gated DeltaNet layers (Qwen3-Next, Qwen3.5) refuse packed sequences before megatron-core "
                "0.18",
                "The GDN mixer had no cu_seqlens path and raised on THD input.",
            ),
            "zh": (
                "megatron-core 0.18 之前 Gated DeltaNet 层（Qwen3-Next、Qwen3.5）拒绝打包序列",
                "GDN 混合层没有 cu_seqlens 路径，遇到 THD 输入即报错。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/core/ssm/gated_delta_net.py",),
            "does not support packed sequence",
            "affected",
            requires="class GatedDeltaNet",
        ),
    ),
    Defect(
        id="SP229",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="silent",
        fields=("model.moe_router_load_balancing_type", "model.num_moe_experts", OFFLINE, IN_BATCH),
        trigger=seq_aux_loss_packing,
        workaround=(override("model.moe_router_load_balancing_type", "aux_loss"),),
        source=f"{MLM_REPO}#6108 (open; PR #6115 open)",
        established=(
            "the wheels 0.16.1-0.18.2 route THD packs as one sequence; 0.19.0 and 0.19.2 restore the sample "
            "dimension only for fixed-width packs (tokens_per_sample), which a variable pack cannot give; "
            "the fix is open"
        ),
        text={
            "en": (
                "sequence-level MoE aux loss treats a whole packed row as one sequence",
                "seq_aux_loss balances experts per sample; a variable-length THD pack has no batch "
                "dimension, so the loss and its gradients differ from the unpacked run.",
            ),
            "zh": (
                "序列级 MoE 辅助损失把整条打包行当作一个序列",
                "seq_aux_loss 按样本做专家均衡；变长 THD 打包行没有批维度，损失与梯度和不打包的训练不同。",
            ),
        },
    ),
    Defect(
        id="SP230",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="silent",
        fields=("model.moe_expert_capacity_factor", "model.num_moe_experts", PAD_MULT, CP),
        trigger=capacity_with_padded_packs,
        workaround=(override(PAD_MULT, 1),),
        source=f"{MLM_REPO} PR #5542 (dev; main: PR #5535 open)",
        established=(
            "the routers of the wheels 0.16.1-0.19.2 mask padding only in the auxiliary losses; clearing "
            "padding from the routing map before capacity enforcement is on the dev branch (PR #5542, "
            "2026-06-30) and in no release"
        ),
        text={
            "en": (
                "MoE expert capacity is spent on the alignment padding of packed rows",
                "With a capacity factor, padding tokens are routed and dispatched like real ones, so real "
                "tokens are dropped when an expert fills up.",
            ),
            "zh": (
                "MoE 专家容量被打包行的对齐填充占用",
                "设置容量因子时填充词元像真实词元一样被路由和分发，专家满载时丢弃的是真实词元。",
            ),
        },
    ),
    Defect(
        id="SP231",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="silent",
        fields=(MTP, CP, OFFLINE, IN_BATCH),
        trigger=mtp_cp_packing,
        workaround=(override(CP, 1),),
        source=f"{MLM_REPO} PR #7278 (open; follows PR #6912)",
        established=(
            "open PR; no release masks the MTP roll past each sequence's logical end under CP (the wheels "
            "0.16.1-0.19.2 roll without a logical-length mask)"
        ),
        text={
            "en": (
                "multi-token prediction under THD + CP keeps padding-origin targets past each sequence's end",
                "After the padded CP roll the last logical position of a padded sequence takes its target "
                "from padding and the mask stays on, so MTP trains on it.",
            ),
            "zh": (
                "THD + CP 下多词元预测在序列末尾之后保留了来自填充的目标",
                "按填充边界做 CP 滚动后，带填充序列的最后一个逻辑位置从填充取目标且掩码未关闭，MTP 在其上训"
                "练。",
            ),
        },
    ),
    Defect(
        id="SP232",
        component=MCORE,
        launchers=ON_MLM,
        affected=Affected(None, "0.19.0"),
        effect="silent",
        fields=(OFFLINE, "train.micro_batch_size", "launcher"),
        trigger=mlm_packing_mbs_above_one,
        workaround=(override("train.micro_batch_size", 1),),
        source=f"{MLM_REPO} PR #5454",
        established=(
            "megatron/core/utils.py has flatten_batch_for_packed_sequences in the wheels 0.19.0 and 0.19.2, "
            "not in 0.16.1-0.18.2; before it Megatron-LM's get_batch took cu_seqlens[0] (the first "
            "sample's boundaries) for the whole micro-batch"
        ),
        text={
            "en": (
                "Megatron-LM packed SFT with micro_batch_size > 1 uses the first sample's boundaries for the "
                "whole micro-batch",
                "Every other packed row of the micro-batch is attended with the wrong document boundaries.",
            ),
            "zh": (
                "Megatron-LM 打包 SFT 且 micro_batch_size > 1 时整个微批都用第一个样本的边界",
                "微批中其他打包行都按错误的文档边界做注意力。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/core/utils.py",), "def flatten_batch_for_packed_sequences", "fixed"
        ),
    ),
)
