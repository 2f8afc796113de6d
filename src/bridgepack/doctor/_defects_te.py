"""The atlas entries of Transformer Engine: one keyword block per upstream bug, in id order.

Ranges were read from the tags of Transformer Engine. Find an entry by its upstream number
(``find_defects("#2952")`` in ``_defects``) or by a text search of this file.
"""

from __future__ import annotations

from bridgepack._bridge_keys import CP, IN_BATCH, OFFLINE, PAD_MULT
from bridgepack.doctor._defect_model import ON_BOTH, TE_REPO, Defect
from bridgepack.doctor._defect_triggers import (
    allgather_cp_packing,
    attention_sink_packing,
    fp8_attention_padded_packs,
    fp8_attention_thd_without_kernel,
    hierarchical_cp_packing,
    learnable_sink_generic_head_dim,
    mla_cp_p2p,
    p2p_cp_packing,
    sink_cp_outside_a2a,
    swa_cp_packing,
    swa_cp_packing_outside_a2a,
    thd_packing,
    wide_head_packing,
)
from bridgepack.doctor._findings import override
from bridgepack.doctor._versions import BLACKWELL_RTX, CUDNN, HOPPER, TE, Affected

TE_DEFECTS: tuple[Defect, ...] = (
    Defect(
        id="SP212",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, "2.18"),
        effect="silent",
        fields=(CP, "model.cp_comm_type", OFFLINE, IN_BATCH),
        trigger=p2p_cp_packing,
        workaround=(),
        source=f"{TE_REPO}#1930 (open; same defect: #3331, closed by PR #3332; routed away by PR #2898)",
        established=(
            "#3331 traces #1930's report (a length-7 sequence computed as 6 at CP 2) to the pad_between_seqs "
            "auto-detect of v2.16, which compares cu_seqlens without their last entry and so takes the P2P "
            "fast path (cu_seqlens // cp) for tail-only padding; from commit 4cd705b7 (PR #2898, first tag "
            "v2.18) distinct padded and unpadded tensors take the exact path (at SP213's cost); PR #3332 "
            "(after v2.18) adds the regression test and documents the rule"
        ),
        text={
            "en": (
                "THD P2P context parallelism mislabels the chunk-boundary rows of a pack whose only padding "
                "is after its last sequence",
                "When every sequence but the last is aligned to 2*CP (one-document packs, long documents), "
                "Transformer Engine takes the no-padding fast path and approximates each rank's lengths as "
                "cu_seqlens // CP: real keys are dropped, real query rows come out zero, gradients are "
                "nondeterministic.",
            ),
            "zh": (
                "THD P2P 上下文并行在打包行只在最后一个序列之后有填充时标错块边界行",
                "当除最后一个序列外都已按 2*CP 对齐（单文档打包行、长文档）时，Transformer Engine 走无填充的"
                "快速路径，把各 rank 的长度近似为 cu_seqlens // CP：真实的键被丢弃，真实的查询行输出为零，梯"
                "度不确定。",
            ),
        },
    ),
    Defect(
        id="SP213",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected("2.18", None),
        effect="slowdown",
        fields=(CP, "model.cp_comm_type", OFFLINE, IN_BATCH),
        trigger=p2p_cp_packing,
        workaround=(),
        source=f"{TE_REPO}#3487 (regression from PR #2898)",
        established=("the regressing commit 4cd705b7 (PR #2898) is first in tag v2.18; the issue is open"),
        text={
            "en": (
                "THD P2P context parallelism takes the slow inter-sequence-padding path when padded and "
                "unpadded cu_seqlens are separate tensors",
                "Automatic detection compares tensor identity, not values, so equal but distinct tensors "
                "select the path that recomputes per-rank cu_seqlens every step.",
            ),
            "zh": (
                "THD P2P 上下文并行在填充与未填充 cu_seqlens 为不同张量时走慢速的序列间填充路径",
                "自动检测比较的是张量身份而非数值，数值相同但不同的张量会选中每步重算各 "
                "rank cu_seqlens 的路径。",
            ),
        },
    ),
    Defect(
        id="SP233",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, "2.13"),
        effect="crash",
        fields=("model.softmax_type", OFFLINE, IN_BATCH),
        trigger=attention_sink_packing,
        workaround=(),
        source=f"{TE_REPO}#2483 (Megatron-LM #2566; fix: PR #2568)",
        established=(
            "get_attention_backend disables FusedAttention and UnfusedDotProductAttention for "
            "softmax_type != vanilla with qkv_format thd before commit 0f0e229b (PR #2568, first tag v2.13), "
            "which allows it with cuDNN >= 9.18"
        ),
        text={
            "en": (
                "attention sinks (softmax_type learnable / off-by-one) on packed sequences have no attention "
                "backend",
                "Transformer Engine turned every backend off for THD with a non-vanilla softmax (numerical "
                "issues in the cuDNN kernels), so models with sinks (GPT-OSS) cannot train packed.",
            ),
            "zh": (
                "打包序列上的注意力汇（softmax_type 为 learnable / off-by-one）没有可用的注意力后端",
                "Transformer Engine 对 THD 加非 vanilla softmax 关闭了所有后端（cuDNN 内核存在数值问题），带"
                "注意力汇的模型（GPT-OSS）无法打包训练。",
            ),
        },
    ),
    Defect(
        id="SP234",
        component=CUDNN,
        launchers=ON_BOTH,
        affected=Affected(None, "9.18"),
        effect="crash",
        fields=("model.softmax_type", OFFLINE, IN_BATCH, "cudnn"),
        trigger=attention_sink_packing,
        workaround=(),
        source=f"{TE_REPO} PR #2568 (after #2483)",
        established=(
            "from tag v2.13 Transformer Engine enables THD sink attention only with cuDNN >= 9.18.0 (PR "
            "#2568); the cuDNN version is read from the installed nvidia-cudnn distribution or --stack"
        ),
        text={
            "en": (
                "attention sinks on packed sequences need cuDNN 9.18 or newer",
                "Transformer Engine 2.13 and later route THD sink attention to cuDNN only from 9.18; older "
                "cuDNN leaves no backend.",
            ),
            "zh": (
                "打包序列上的注意力汇需要 cuDNN 9.18 或更新版本",
                "Transformer Engine 2.13 及以后只在 cuDNN 9.18 起把 THD 注意力汇交给 cuDNN；更旧的 cuDNN 没有"
                "可用后端。",
            ),
        },
        also=((TE, Affected("2.13", None)),),
    ),
    Defect(
        id="SP235",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="crash",
        fields=(CP, "model.cp_comm_type", OFFLINE, IN_BATCH),
        trigger=hierarchical_cp_packing,
        workaround=(override("model.cp_comm_type", "a2a"),),
        source=f"{TE_REPO}#2208 (fix: PR #3290)",
        established=(
            "AttnFuncWithCPAndKVP2P asserts 'thd format is not supported with hierarchical CP' up to tag "
            "v2.18; PR #3290 (commit 8ff60f8d, 2026-08-04) removes the gate after v2.18, in no release yet"
        ),
        text={
            "en": (
                "hierarchical context parallelism (cp_comm_type a2a+p2p) rejects packed THD sequences",
                "The A2A+P2P path asserted qkv_format != thd; the paths compose correctly and the gate was "
                "removed after the last tagged release.",
            ),
            "zh": (
                "分层上下文并行（cp_comm_type 为 a2a+p2p）拒绝打包的 THD 序列",
                "A2A+P2P 路径断言 qkv_format 不为 thd；两条路径本可正确组合，该限制在最后一个发布标签之后才"
                "移除。",
            ),
        },
    ),
    Defect(
        id="SP236",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, "2.18"),
        effect="crash",
        fields=(CP, "model.cp_comm_type", OFFLINE, IN_BATCH),
        trigger=allgather_cp_packing,
        workaround=(override("model.cp_comm_type", "p2p"),),
        source=f"{TE_REPO} PR #2829",
        established=(
            "AttnFuncWithCPAndKVAllGather supports only bshd/sbhd (no padding masks) before commit 70101184 "
            "(PR #2829, first tag v2.18)"
        ),
        text={
            "en": (
                "all-gather context parallelism does not take packed THD sequences before Transformer "
                "Engine 2.18",
                "The all-gather CP path had no THD layout and refused padding masks.",
            ),
            "zh": (
                "Transformer Engine 2.18 之前 all-gather 上下文并行不接受打包的 THD 序列",
                "all-gather CP 路径没有 THD 布局，并拒绝 padding 掩码。",
            ),
        },
    ),
    Defect(
        id="SP237",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, "2.11"),
        effect="crash",
        fields=("model.window_size", CP, OFFLINE, IN_BATCH),
        trigger=swa_cp_packing,
        workaround=(override(CP, 1),),
        source=f"{TE_REPO} PR #2220",
        established=(
            "sliding-window attention with CP and THD is filtered out before commit a75da0ca (PR #2220, "
            "first tag v2.11), which enables it through A2A only"
        ),
        text={
            "en": (
                "sliding-window attention with context parallelism has no THD path before Transformer "
                "Engine 2.11",
                "No CP communication type accepted a window with packed sequences.",
            ),
            "zh": (
                "Transformer Engine 2.11 之前滑动窗口注意力与上下文并行没有 THD 路径",
                "没有任何 CP 通信方式接受带窗口的打包序列。",
            ),
        },
    ),
    Defect(
        id="SP238",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected("2.11", None),
        effect="crash",
        fields=("model.window_size", CP, "model.cp_comm_type", OFFLINE, IN_BATCH),
        trigger=swa_cp_packing_outside_a2a,
        workaround=(override("model.cp_comm_type", "a2a"),),
        source=f"{TE_REPO} PR #2220",
        established=(
            "from tag v2.11 the backend filter admits sliding window + CP + THD for cp_comm_type a2a only "
            "(PR #2220); p2p and all_gather stay filtered up to v2.18"
        ),
        text={
            "en": (
                "sliding-window attention with packed CP runs only with cp_comm_type a2a",
                "P2P and all-gather context parallelism have no sliding-window THD path.",
            ),
            "zh": (
                "打包 CP 下的滑动窗口注意力只能用 cp_comm_type a2a",
                "P2P 与 all-gather 上下文并行没有滑动窗口的 THD 路径。",
            ),
        },
    ),
    Defect(
        id="SP239",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="crash",
        fields=("model.fp8_dot_product_attention", "model.fp8", "mixed_precision", CP, PAD_MULT),
        trigger=fp8_attention_padded_packs,
        workaround=(override("model.fp8_dot_product_attention", False),),
        source=f"{TE_REPO}#2892 (open)",
        established=(
            "reported on v2.12 with megatron-core 0.16; FP8 THD attention work (PR #2994, branch commits "
            "from 2026-07-31) is in no tag up to v2.18"
        ),
        text={
            "en": (
                "FP8 attention (delayed or blockwise scaling) on padded packs: padded and unpadded "
                "cu_seqlens differ and the fused kernel fails",
                "With blockwise scaling fused_attn_fwd segfaults; with delayed scaling the output has the "
                "unpadded size and later shapes mismatch. BF16 attention handles the same batch.",
            ),
            "zh": (
                "带填充打包上的 FP8 注意力（延迟或分块缩放）：填充与未填充 cu_seqlens 不同时融合内核失败",
                "分块缩放时 fused_attn_fwd 段错误；延迟缩放时输出为未填充长度，后续形状不匹配。BF16 注意力可"
                "处理同样的批次。",
            ),
        },
    ),
    Defect(
        id="SP240",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="slowdown",
        fields=("model.kv_channels", OFFLINE, IN_BATCH),
        trigger=wide_head_packing,
        workaround=(),
        source=f"{TE_REPO}#3006 (open)",
        established="open issue (TE 2.14, cuDNN 9.20); no tag up to v2.18 adds a THD kernel for head_dim 512",
        text={
            "en": (
                "head dimension above 256 (Gemma 4) on packed sequences: neither flash nor fused attention "
                "runs",
                "FlashAttention takes head_dim <= 256 and cuDNN has no THD kernel for 512, so attention "
                "falls back to the unfused path: much slower and far more memory.",
            ),
            "zh": (
                "打包序列上头维度大于 256（Gemma 4）：flash 与融合注意力都不可用",
                "FlashAttention 只支持 head_dim <= 256，cuDNN 没有 512 的 THD 内核，注意力退回非融合路径：慢"
                "得多且占用多得多的显存。",
            ),
        },
    ),
    Defect(
        id="SP241",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="crash",
        fields=("model.multi_latent_attention", CP, "model.cp_comm_type", OFFLINE, IN_BATCH),
        trigger=mla_cp_p2p,
        workaround=(override("model.cp_comm_type", "a2a"),),
        source=f"{TE_REPO}#1552 (open)",
        established=(
            "open question; the P2P path concatenates K and V for communication, which needs equal head "
            "widths (MLA's differ); commit 2e61c544 (2026-04-02) states MLA works with a2a; no tag is "
            "known to fix p2p"
        ),
        text={
            "en": (
                "multi-latent attention with P2P context parallelism: K and V of different widths cannot be "
                "sent together",
                "P2P concatenates K and V into one buffer per ring step; MLA's unequal head widths break "
                "that. A2A works.",
            ),
            "zh": (
                "多头潜在注意力与 P2P 上下文并行：宽度不同的 K 与 V 无法一起发送",
                "P2P 每步把 K 与 V 拼成一个缓冲区；MLA 的头宽不等使其失败。A2A 可用。",
            ),
        },
    ),
    Defect(
        id="SP243",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, "2.18"),
        effect="silent",
        fields=(CP, "model.cp_comm_type", OFFLINE, IN_BATCH, "cudnn", "gpu"),
        trigger=p2p_cp_packing,
        workaround=(),
        source=f"{TE_REPO}#2186 (closed; dQ/dK/dV tail zeroing: PR #2898)",
        established=(
            "reported on v2.6 (unit test: cu_seqlens_q [0, 9, ...] padded to multiples of 2*CP); the "
            "maintainer traces it to cuDNN's fused-attention backward workspace on Hopper, fixed in cuDNN "
            "9.18, Blackwell unaffected; commit 4cd705b7 (PR #2898, first tag v2.18) also zeroes the THD "
            "dQ/dK/dV tails of padded chunks (#3487 describes it), so either Transformer Engine 2.18 or "
            "cuDNN 9.18 avoids it"
        ),
        text={
            "en": (
                "fused attention with THD P2P context parallelism returns huge dK/dV on Hopper for very "
                "short documents whose CP half-chunk is all padding",
                "A document much shorter than 2*CP leaves a rank's second chunk entirely padding; on Hopper "
                "GPUs cuDNN's backward wrote unbounded values into dK/dV there, and the run went to NaN "
                "(Blackwell is not affected). Filter documents shorter than 2*CP, or upgrade cuDNN to 9.18 "
                "or Transformer Engine to 2.18.",
            ),
            "zh": (
                "Hopper 上 THD P2P 上下文并行的融合注意力对很短的文档（其 CP 半块全是填充）给出巨大的 dK/dV",
                "远短于 2*CP 的文档使某个 rank 的第二块全是填充；在 Hopper GPU 上 cuDNN 的反向传播在那里写入"
                "无界"
                ""
                "的 dK/dV，训练最终变成 NaN（Blackwell 不受影响）。请过滤短于 2*CP 的文档，或把 cuDNN 升级到 "
                "9.18、Transformer Engine 升级到 2.18。",
            ),
        },
        also=((CUDNN, Affected(None, "9.18")),),
        gpus=frozenset({HOPPER}),
    ),
    Defect(
        id="SP244",
        component=CUDNN,
        launchers=ON_BOTH,
        affected=Affected(None, "9.26"),
        effect="silent",
        fields=("model.softmax_type", "model.kv_channels", "model.v_head_dim", OFFLINE, IN_BATCH, "cudnn"),
        trigger=learnable_sink_generic_head_dim,
        workaround=(),
        source=f"{TE_REPO}#3249 (guards: PR #3470, PR #2964)",
        established=(
            "the maintainer's analysis on #3249 (2026-08, H100, TE 2.14.1 with cuDNN 9.21-9.25) finds a "
            "wrong dSink against an unfused reference; cuDNN before 9.26 runs the generic F16/BF16 sink "
            "backward for value head widths other than 64, 128 and 256, which indexes the ragged THD softmax "
            "statistics as dense; cuDNN 9.26 fixes it (the reproducer passes with 9.26.0.37); the guards "
            "that "
            "refuse the fused path on older cuDNN (PR #3470, PR #2964) are in no Transformer Engine tag up "
            "to "
            "v2.18; Transformer Engine routes THD sink attention to cuDNN from 2.13 (SP233)"
        ),
        text={
            "en": (
                "learnable attention sinks on packed sequences: cuDNN before 9.26 computes a wrong sink "
                "gradient for value head widths other than 64, 128 and 256",
                "The generic sink-backward kernel reads the ragged THD softmax statistics as if dense, so "
                "dSink is wrong (and can read out of bounds) while the forward looks right. Upgrade cuDNN "
                "to 9.26, or use a head width of 64, 128 or 256.",
            ),
            "zh": (
                "打包序列上的可学习注意力汇：cuDNN 9.26 之前对 64、128、256 以外的值头宽度算出错误的汇梯度",
                "通用的汇反向内核把不规则 THD softmax 统计量当作稠密读取，dSink 错误（还可能越界读取），而前"
                "向看"
                ""
                "起来正常。请把 cuDNN 升级到 9.26，或使用 64、128 或 256 的头宽度。",
            ),
        },
        also=((TE, Affected("2.13", None)),),
    ),
    Defect(
        id="SP245",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="crash",
        fields=("model.fp8_dot_product_attention", "mixed_precision", CP, OFFLINE, IN_BATCH),
        trigger=fp8_attention_thd_without_kernel,
        workaround=(override("model.fp8_dot_product_attention", False),),
        source=f"{TE_REPO}#923 (open; PR #2994)",
        established=(
            "get_attention_backend disables FusedAttention for FP8 attention with context parallelism and "
            "qkv_format thd in every tag from v2.4 to v2.18, and for MXFP8 with thd from v2.16 (MXFP8 "
            "attention, PR #2719); no other backend runs FP8 attention in training; PR #2994 (FP8 THD, "
            "Blackwell only) is on a branch after v2.18"
        ),
        text={
            "en": (
                "FP8 attention on packed (THD) sequences with context parallelism or MXFP8 has no attention "
                "backend",
                "Transformer Engine turns fused attention off for FP8 THD attention under CP (and for "
                "MXFP8 THD attention), and no other backend trains FP8 attention. Keep attention in BF16.",
            ),
            "zh": (
                "上下文并行或 MXFP8 下打包（THD）序列上的 FP8 注意力没有可用的注意力后端",
                "CP 下（以及 MXFP8 下）Transformer Engine 对 FP8 THD 注意力关闭融合注意力，而没有其他后端能"
                "训练 "
                ""
                "FP8 注意力。请让注意力保持 BF16。",
            ),
        },
    ),
    Defect(
        id="SP256",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="crash",
        fields=("model.softmax_type", CP, "model.cp_comm_type"),
        trigger=sink_cp_outside_a2a,
        workaround=(override("model.cp_comm_type", "a2a"),),
        source=f"{TE_REPO}#2541 (open; PR #3551 open)",
        established=(
            "attn_forward_func_with_cp asserts softmax_type == 'vanilla' or cp_comm_type == 'a2a' in every "
            "tag up to v2.18; PR #3551 (open) threads the sink through the P2P path, which also ignored "
            "the sink offset"
        ),
        text={
            "en": (
                "attention sinks (softmax_type learnable / off-by-one) with context parallelism run only "
                "with "
                "cp_comm_type a2a",
                "The P2P and all-gather context-parallel paths assert a vanilla softmax; behind the "
                "assertion the P2P kernels also dropped the sink.",
            ),
            "zh": (
                "注意力汇（softmax_type 为 learnable / off-by-one）与上下文并行只能用 cp_comm_type a2a",
                "P2P 与 all-gather 上下文并行路径断言 softmax 为 vanilla；在断言之后 P2P 内核还会丢掉汇。",
            ),
        },
    ),
    Defect(
        id="SP259",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, "2.18"),
        effect="silent",
        fields=(OFFLINE, IN_BATCH, "gpu"),
        trigger=thd_packing,
        workaround=(),
        source=f"{TE_REPO}#3333 (closed; fix: PR #3186)",
        established=(
            "reported on Transformer Engine 2.17.0 with cuDNN 9.25 on an RTX 5090 (sm_120): fused-attention "
            "THD backward gradients disagree with the unfused backend while the forward matches, with or "
            "without CP; the maintainer names commit 70957ad5 (PR #3186, cu_seqlens and token-unit ragged "
            "offsets passed to cuDNN directly) as the fix, first in tag v2.18"
        ),
        text={
            "en": (
                "fused attention on packed (THD) sequences computes wrong gradients on sm_120 GPUs (RTX "
                "5090, "
                "RTX PRO 6000)",
                "The forward pass is right and the backward is not, so the loss looks plausible while the "
                "model trains on wrong gradients. Upgrade Transformer Engine to 2.18.",
            ),
            "zh": (
                "sm_120 GPU（RTX 5090、RTX PRO 6000）上打包（THD）序列的融合注意力梯度错误",
                "前向正确而反向错误，损失看似正常，模型却按错误的梯度训练。请把 Transformer Engine 升级到 2."
                "18。"
                "",
            ),
        },
        gpus=frozenset({BLACKWELL_RTX}),
    ),
)
