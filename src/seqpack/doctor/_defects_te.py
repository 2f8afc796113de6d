"""The atlas entries of Transformer Engine: one keyword block per upstream bug, in id order.

Ranges were read from the tags of Transformer Engine. Find an entry by its upstream number
(``find_defects("#2952")`` in ``_defects``) or by a text search of this file.
"""

from __future__ import annotations

from seqpack._bridge_keys import CP, IN_BATCH, OFFLINE
from seqpack.doctor._defect_model import ON_BOTH, TE_REPO, Defect
from seqpack.doctor._defect_triggers import (
    cp_packing,
    p2p_cp_packing,
)
from seqpack.doctor._versions import TE, Affected

TE_DEFECTS: tuple[Defect, ...] = (
    Defect(
        id="SP212",
        component=TE,
        launchers=ON_BOTH,
        affected=Affected(None, None),
        effect="unspecified",
        fields=(CP, OFFLINE, IN_BATCH),
        trigger=cp_packing,
        workaround=(),
        source=f"{TE_REPO}#1930 (open)",
        established=("open issue with no linked fix; no release is known to fix it"),
        text={
            "en": (
                "Transformer Engine: a reported bug when packing and context parallelism are used together",
                "The issue is open and assigned; the part of the report available here does not say which "
                "attention backend or CP mode fails. Compare a short packed CP run with CP 1.",
            ),
            "zh": (
                "Transformer Engine：已报告打包与上下文并行同时使用时存在缺陷",
                "该问题仍未关闭；此处可见的报告内容未说明是哪个注意力后端或 "
                "CP 模式出错。请用短训练对比 CP 1 与打包 CP 的结果。",
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
)
