"""The atlas entries of Megatron-Core (and Megatron-LM's training loop): one keyword block per upstream
bug, in id order.

Ranges were read from the ``core_v*`` tags of
Megatron-LM and the megatron-core wheels. Find an entry by its upstream number
(``find_defects("#2952")`` in ``_defects``) or by a text search of this file.
"""

from __future__ import annotations

from seqpack._bridge_keys import CP, IN_BATCH, MTP, OFFLINE, PP, TP
from seqpack.doctor._defect_model import MLM_REPO, ON_BOTH, ON_MLM, Defect, WheelMarker
from seqpack.doctor._defect_triggers import (
    mlm_middle_stage_tp,
    mtp_cp_packing,
    mtp_full_recompute_packing,
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
)
