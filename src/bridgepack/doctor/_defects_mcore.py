"""The atlas entries of Megatron-Core (and Megatron-LM's training loop): one keyword block per upstream
bug, in id order.

Ranges were read from the ``core_v*`` tags of
Megatron-LM and the megatron-core wheels. Find an entry by its upstream number
(``find_defects("#2952")`` in ``_defects``) or by a text search of this file.
"""

from __future__ import annotations

from bridgepack._bridge_keys import CP, IN_BATCH, MTP, OFFLINE, PAD_MULT, PP, TP
from bridgepack.doctor._defect_model import MLM_REPO, ON_BOTH, ON_MLM, Defect, WheelMarker
from bridgepack.doctor._defect_triggers import (
    capacity_with_padded_packs,
    cp_masked_loss_per_microbatch,
    gdn_cp,
    gdn_cp_with_comm_type,
    gdn_packing,
    hybrid_packing,
    hybridep_variable_packing,
    mla_packing,
    mlm_inter_document_cp,
    mlm_middle_stage_tp,
    mlm_packing_mbs_above_one,
    mrope_unfused_packing,
    mtp_cp,
    mtp_cp_packing,
    mtp_full_recompute_packing,
    pp4_variable_lengths_batched_p2p,
    seq_aux_loss_packing,
)
from bridgepack.doctor._findings import override
from bridgepack.doctor._versions import MCORE, Affected

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
        wheel_marker=WheelMarker(
            ("megatron/training/utils.py", "megatron/core/utils.py"),
            "Broadcast required THD metadata",
            "fixed",
            requires="cu_seqlens",
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
        wheel_marker=WheelMarker(
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
        wheel_marker=WheelMarker(
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
        wheel_marker=WheelMarker(
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
        wheel_marker=WheelMarker(
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
        affected=Affected("0.16.0", "0.18.0"),
        effect="crash",
        fields=("model.experimental_attention_variant", "model", OFFLINE, IN_BATCH),
        trigger=gdn_packing,
        workaround=(),
        source=f"{MLM_REPO}#3798 (fix: PR #2645)",
        established=(
            "GDN is first in tag core_v0.16.0 (not in the 0.15.3 wheel); ssm/gated_delta_net.py raises 'GDN "
            "does not support packed sequence' in the wheels 0.16.1 and 0.17.1; 0.18.0 and 0.18.2 have the "
            "THD branch (PR #2645), 0.19.x moved the module to a package "
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
        wheel_marker=WheelMarker(
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
        affected=Affected("0.16.0", "0.19.0"),
        effect="silent",
        fields=("--sft", OFFLINE, "train.micro_batch_size", "launcher"),
        trigger=mlm_packing_mbs_above_one,
        workaround=(override("train.micro_batch_size", 1),),
        source=f"{MLM_REPO} PR #5454",
        established=(
            "megatron/core/utils.py has flatten_batch_for_packed_sequences in the wheels 0.19.0 and 0.19.2, "
            "not in 0.16.1-0.18.2; before it Megatron-LM's get_batch took cu_seqlens[0] (the first "
            "sample's boundaries) for the whole micro-batch; tag core_v0.15.0's get_batch carries no "
            "cu_seqlens (the 0.15.3 wheel's megatron/core/utils.py has none), so packed SFT rows start in "
            "0.16.0; in-batch packing is Bridge's own and never reaches this get_batch"
        ),
        text={
            "en": (
                "Megatron-LM packed SFT (--sft) with micro_batch_size > 1 uses the first sample's boundaries "
                "for the whole micro-batch",
                "Every other packed row of the micro-batch is attended with the wrong document boundaries.",
            ),
            "zh": (
                "Megatron-LM 打包 SFT（--sft）且 micro_batch_size > 1 时整个微批都用第一个样本的边界",
                "微批中其他打包行都按错误的文档边界做注意力。",
            ),
        },
        wheel_marker=WheelMarker(
            ("megatron/core/utils.py",),
            "def flatten_batch_for_packed_sequences",
            "fixed",
            requires="cu_seqlens",
        ),
    ),
    Defect(
        id="SP246",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected("0.16.0", "0.18.0"),
        effect="crash",
        fields=("model.experimental_attention_variant", "model", CP),
        trigger=gdn_cp,
        workaround=(override(CP, 1),),
        source=f"{MLM_REPO}#3883 (fix: PR #2642)",
        established=(
            "TransformerConfig asserts context_parallel_size == 1 for gated_delta_net in the wheels 0.16.1 "
            "and 0.17.1 (GDN is first in tag core_v0.16.0); PR #2642 (commit 20ba03fe, first tag "
            "core_v0.18.0) adds GDN context parallelism and drops the assert (absent from 0.18.0 on)"
        ),
        text={
            "en": (
                "Gated DeltaNet layers (Qwen3-Next, Qwen3.5) refuse context parallelism before megatron-core "
                "0.18",
                "The model config asserts context_parallel_size == 1 for GDN, so a long-context run with CP "
                "stops at start-up.",
            ),
            "zh": (
                "megatron-core 0.18 之前 Gated DeltaNet 层（Qwen3-Next、Qwen3.5）拒绝上下文并行",
                "模型配置对 GDN 断言 context_parallel_size == 1，带 CP 的长上下文训练在启动时即停止。",
            ),
        },
        wheel_marker=WheelMarker(
            ("megatron/core/transformer/transformer_config.py",),
            "Gated delta net does not support context parallel",
            "affected",
        ),
    ),
    Defect(
        id="SP247",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected("0.18.0", "0.19.0"),
        effect="crash",
        fields=("model.experimental_attention_variant", "model", CP, "model.cp_comm_type", "launcher"),
        trigger=gdn_cp_with_comm_type,
        workaround=(override(CP, 1),),
        source=f"{MLM_REPO} PR #4374 (closed; fixed by PR #5843)",
        established=(
            "TransformerLayer passes cp_comm_type to its self-attention module whenever CP > 1 and "
            "cp_comm_type is set (Megatron-LM's --cp-comm-type defaults to p2p); the GDN mixer of the wheels "
            "0.18.0 and 0.18.2 takes no such argument (TypeError at model build); from 0.19.0 "
            "(ssm/gated_delta_net/common.py, PR #5843) it accepts and ignores it"
        ),
        text={
            "en": (
                "Gated DeltaNet with context parallelism fails to build on megatron-core 0.18: unexpected "
                "argument cp_comm_type",
                "The transformer layer hands every self-attention module cp_comm_type under CP, and the GDN "
                "mixer of 0.18 does not take it. Bridge passes it only when model.cp_comm_type is set.",
            ),
            "zh": (
                "megatron-core 0.18 上带上下文并行的 Gated DeltaNet 构建失败：意外的参数 cp_comm_type",
                "CP 下 Transformer 层会把 cp_comm_type 交给每个自注意力模块，而 0.18 的 GDN 混合层不接受该参"
                "数。"
                ""
                "Bridge 只在设置了 model.cp_comm_type 时传入。",
            ),
        },
        wheel_marker=WheelMarker(
            ("megatron/core/ssm/gated_delta_net/common.py", "megatron/core/ssm/gated_delta_net.py"),
            "cp_comm_type",
            "fixed",
            requires="_all_to_all_cp2hp",
        ),
    ),
    Defect(
        id="SP248",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, "0.13.0"),
        effect="crash",
        fields=("model.multi_latent_attention", "model", OFFLINE, IN_BATCH, "--sft"),
        trigger=mla_packing,
        workaround=(),
        source=f"{MLM_REPO}#1398 (fix: ADLR/megatron-lm!2691)",
        established=(
            "the issue (2025-02) shows MLASelfAttention applying RoPE to 4-D (bshd) hidden states with "
            "PackedSeqParams; the fix 'Fix MLA THD format support' (commit c0b5c91a, merged 2025-04-16) is "
            "first in tag core_v0.13.0"
        ),
        text={
            "en": (
                "multi-latent attention ignores packed sequences before megatron-core 0.13: RoPE is applied "
                "in the bshd layout",
                "MLA did not take PackedSeqParams into its RoPE and core attention, so packed (THD) input "
                "fails with a size mismatch.",
            ),
            "zh": (
                "megatron-core 0.13 之前多头潜在注意力忽略打包序列：RoPE 按 bshd 布局施加",
                "MLA 的 RoPE 与核心注意力未使用 PackedSeqParams，打包（THD）输入因尺寸不匹配而失败。",
            ),
        },
    ),
    Defect(
        id="SP250",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, "0.15.0"),
        effect="silent",
        fields=("model.position_embedding_type", "model.apply_rope_fusion", "model", OFFLINE, IN_BATCH),
        trigger=mrope_unfused_packing,
        workaround=(),
        source=f"{MLM_REPO} PR #5243 (exact per-sequence mapping: ADLR/megatron-lm!3978)",
        established=(
            "the unfused THD RoPE of tags core_v0.13.0 and core_v0.14.0 slices each packed sequence's "
            "frequencies from the start of the table, so a per-token table (MRoPE) gives every sequence the "
            "first one's positions; the offset mapping for per-token tables is first in core_v0.15.0 "
            "(commit 6fe43ce2, 'Non-1D RoPE Frequency Indexing'; seq_start_offset is in the 0.15.3-0.19.2 "
            "wheels); PR #5243 (first tag core_v0.19.0) restructures that code and pins both modes with "
            "tests, without changing what 0.15-0.18 compute"
        ),
        text={
            "en": (
                "unfused THD RoPE gives every packed sequence the first sequence's MRoPE positions",
                "With a per-token position table (3-axis MRoPE of the Qwen-VL family) and RoPE unfused, each "
                "packed sequence read its frequencies from the start of the table instead of its own offset.",
            ),
            "zh": (
                "非融合 THD RoPE 让每个打包序列都使用第一个序列的 MRoPE 位置",
                "使用逐词元位置表（Qwen-VL 系列的三轴 MRoPE）且未融合 RoPE 时，每个打包序列从表头而非自身偏"
                "移处读"
                ""
                "取频率。",
            ),
        },
        wheel_marker=WheelMarker(
            ("megatron/core/models/common/embeddings/rope_utils.py",), "seq_start_offset", "fixed"
        ),
    ),
    Defect(
        id="SP251",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="crash",
        fields=(
            "model.moe_token_dispatcher_type",
            "model.moe_flex_dispatcher_backend",
            "model.moe_hybridep_pad_uneven_dispatch_inputs",
            OFFLINE,
            IN_BATCH,
        ),
        trigger=hybridep_variable_packing,
        workaround=(override("model.moe_hybridep_pad_uneven_dispatch_inputs", True),),
        source=f"{MLM_REPO} PR #5008 (dev: PR #4816)",
        established=(
            "HybridEP dispatch expects the same token count on every rank of the expert group, which "
            "variable-width packed rows do not give; PR #5008 (first tag core_v0.19.0) adds "
            "moe_hybridep_pad_uneven_dispatch_inputs (default false, in the 0.19.0 and 0.19.2 wheels) to "
            "pad to the group maximum; no release pads by default, so the entry stays open and names the "
            "switch (megatron-core >= 0.19.0) as the way round"
        ),
        text={
            "en": (
                "HybridEP dispatch with packed rows of different lengths across ranks",
                "The HybridEP kernels need equal per-rank token counts; variable-width packs break that. "
                "From megatron-core 0.19 set moe_hybridep_pad_uneven_dispatch_inputs, or pad packs to the "
                "pack size.",
            ),
            "zh": (
                "各 rank 打包行长度不同时的 HybridEP 分发",
                "HybridEP 内核要求各 rank 词元数相同，变长打包行打破了这一点。megatron-core 0.19 起可设置 "
                "moe_hybridep_pad_uneven_dispatch_inputs，或把打包行填充到打包长度。",
            ),
        },
    ),
    Defect(
        id="SP252",
        component=MCORE,
        launchers=ON_MLM,
        affected=Affected("0.19.0", None),
        effect="silent",
        fields=("--dataloader-inter-document-masking", "--sft", CP, "launcher"),
        trigger=mlm_inter_document_cp,
        workaround=(override(CP, 1),),
        source=f"{MLM_REPO} PR #6912",
        established=(
            "inter-document masking (--dataloader-inter-document-masking, PR #5298) is first in tag "
            "core_v0.19.0; there get_batch_on_this_cp_rank shards its rows with per-sequence balancing "
            "(use_per_sequence_balancing, in the 0.19.0 and 0.19.2 wheels' megatron/core/utils.py), one "
            "zigzag over the whole row, while the attention's PackedSeqParams describe per-document chunks; "
            "PR #6912 (merged after 2026-08-22, past the last tag) partitions each document"
        ),
        text={
            "en": (
                "Megatron-LM inter-document masking with CP shards each packed row as one flat sequence",
                "The tokens are split across CP ranks as one long sequence while the attention's packed "
                "parameters describe per-document chunks, so each rank attends over the wrong tokens.",
            ),
            "zh": (
                "Megatron-LM 文档间掩码与 CP：每个打包行被当作一条平铺序列切分",
                "词元按一条长序列切分到各 CP rank，而注意力的打包参数描述的是按文档的分块，每个 rank 对错误"
                "的词"
                ""
                "元做注意力。",
            ),
        },
        wheel_marker=WheelMarker(("megatron/core/utils.py",), "use_per_sequence_balancing", "affected"),
    ),
    Defect(
        id="SP254",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, "0.16.0"),
        effect="silent",
        fields=("model.hybrid_override_pattern", "model", OFFLINE, IN_BATCH, "--sft"),
        trigger=hybrid_packing,
        workaround=(),
        source=f"{MLM_REPO} PR #2913",
        established=(
            "the Mamba mixer of the 0.15.3 wheel takes no packed_seq_params (its conv and scan run over the "
            "whole packed row); PR #2913 (commit 03c07276, first tag core_v0.16.0) resets the state at "
            "packed boundaries, and every wheel from 0.16.1 passes packed_seq_params to the mixer"
        ),
        text={
            "en": (
                "Mamba layers of hybrid models (Nemotron-H, Nemotron 3) ignore packing before megatron-core "
                "0.16",
                "The Mamba mixers received no packed-sequence parameters, so their convolution and state "
                "carried across document boundaries inside each packed row.",
            ),
            "zh": (
                "megatron-core 0.16 之前混合模型（Nemotron-H、Nemotron 3）的 Mamba 层忽略打包",
                "Mamba 混合层拿不到打包序列参数，其卷积与状态在每个打包行内跨越文档边界传递。",
            ),
        },
        wheel_marker=WheelMarker(("megatron/core/ssm/mamba_mixer.py",), "packed_seq_params", "fixed"),
    ),
    Defect(
        id="SP255",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="crash",
        fields=(PP, "model.variable_seq_lengths", IN_BATCH, "model.batch_p2p_comm"),
        trigger=pp4_variable_lengths_batched_p2p,
        workaround=(override("model.batch_p2p_comm", False),),
        source=f"{MLM_REPO}#5100 (open)",
        established=(
            "open issue (2026-06): with variable_seq_lengths the pipeline exchanges shapes through the "
            "batched P2P path, whose ordering differs from the regular _p2p_ops ordering, and PP >= 4 "
            "deadlocks; Bridge turns variable_seq_lengths on for in-batch packing with PP > 1 (0.4.0+); no "
            "tag up to core_v0.19.0 changes the shape exchange"
        ),
        text={
            "en": (
                "PP >= 4 with variable sequence lengths and batched P2P communication deadlocks",
                "The shape exchange of variable-length micro-batches uses a batched P2P ordering that does "
                "not match the tensor exchange; with four or more stages the ranks wait on each other.",
            ),
            "zh": (
                "PP >= 4、可变序列长度且批量 P2P 通信时死锁",
                "变长微批的形状交换使用与张量交换不同顺序的批量 P2P；四个及以上流水线阶段时各 rank 互相等待。"
                "",
            ),
        },
    ),
    Defect(
        id="SP257",
        component=MCORE,
        launchers=ON_MLM,
        affected=Affected(None, None),
        effect="silent",
        fields=(CP, "model.calculate_per_token_loss", OFFLINE, IN_BATCH, "--sft"),
        trigger=cp_masked_loss_per_microbatch,
        workaround=(override("model.calculate_per_token_loss", True),),
        source=f"{MLM_REPO} PR #7513 (open; #7452, finding 9)",
        established=(
            "open PR (2026-09): without calculate_per_token_loss the schedule divides each CP shard's loss "
            "sum by that shard's own valid-token count and DDP then averages over DP x CP, so unequal masks "
            "across shards change the objective; the forward step of every tag up to core_v0.19.0 normalises "
            "per shard; Bridge refuses fine-tuning with CP without calculate_per_token_loss at validation "
            "(SP012), so only Megatron-LM launches reach it"
        ),
        text={
            "en": (
                "context parallelism with masked (packed SFT) losses averaged per micro-batch weights each "
                "CP "
                "shard by its own token count",
                "Shards with few trained tokens are over-weighted: the gradient differs from the unsharded "
                "run. Turn calculate_per_token_loss on.",
            ),
            "zh": (
                "上下文并行下按微批平均的带掩码（打包 SFT）损失按各 CP 分片自身的词元数加权",
                "训练词元少的分片被过度加权：梯度与不分片的训练不同。请开启 calculate_per_token_loss。",
            ),
        },
    ),
    Defect(
        id="SP258",
        component=MCORE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="silent",
        fields=(MTP, CP),
        trigger=mtp_cp,
        workaround=(override(CP, 1),),
        source=f"{MLM_REPO} PR #7498 (open)",
        established=(
            "open PR (2026-09): the MTP loss is normalised by each CP rank's local token counts, so a rank "
            "with no original targets discards the shifted MTP target's gradient and even an all-ones mask "
            "weights ranks differently; no tag up to core_v0.19.0 reduces the counts over the CP group"
        ),
        text={
            "en": (
                "multi-token prediction loss under context parallelism is normalised per CP rank",
                "Each rank divides its MTP loss by its own token count, so the MTP gradient differs from "
                "the CP 1 run even without padding.",
            ),
            "zh": (
                "上下文并行下多词元预测损失按每个 CP rank 归一化",
                "每个 rank 用自己的词元数去除 MTP 损失，即使没有填充，MTP 梯度也与 CP 为 1 时不同。",
            ),
        },
    ),
)
