"""The atlas entries of Megatron-Bridge: one keyword block per upstream bug, in id order.

Ranges were read from the wheels 0.3.0-0.6.2
(``tests/doctor/test_defect_wheels.py`` re-checks each fingerprint). Find an entry by its upstream number
(``find_defects("#2952")`` in ``_defects``) or by a text search of this file.
"""

from __future__ import annotations

from seqpack._bridge_keys import (
    CHAT,
    CP,
    GRAPH_IMPL,
    IN_BATCH,
    LEGACY_IN_BATCH,
    LOSS_MODE,
    OFFLINE,
    PAD_MULT,
    PAD_TO_MAX,
    PP,
)
from seqpack.doctor._defect_model import BRIDGE_REPO, ON_BRIDGE, Defect, WheelMarker
from seqpack.doctor._defect_triggers import (
    chat_data,
    chat_prepadding,
    cp_dense_mask,
    cp_offline_packing,
    eos_in_trained_spans,
    in_batch_packing,
    middle_stage_packing,
    moe_packed_padding,
    mxfp8_full_graph,
    qwen3_vl_cp_packing,
)
from seqpack.doctor._findings import override
from seqpack.doctor._versions import BRIDGE, Affected

BRIDGE_DEFECTS: tuple[Defect, ...] = (
    Defect(
        id="SP201",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected(None, "0.5.0"),
        effect="silent",
        fields=(PP, OFFLINE, IN_BATCH),
        trigger=middle_stage_packing,
        workaround=(override(PP, 2),),
        source=f"{BRIDGE_REPO}#2952 (fix: PR #3926)",
        established=(
            "gpt_step.get_batch returns an all-None batch on middle PP stages in tags v0.1.0a0 and v0.2.0 "
            "and in the wheels 0.3.0-0.4.2; the wheels 0.5.0-0.6.2 keep the packed metadata there "
            "(_middle_pp_stage_needs_batch, PR #3926, first tag v0.5.0)"
        ),
        text={
            "en": (
                "middle pipeline stages (PP > 2) get no cu_seqlens, so packed documents attend to each other",
                "Stages that are neither first nor last receive no packing metadata and run plain causal "
                "attention over the whole pack; the report measured a 10-20 point drop on benchmarks.",
            ),
            "zh": (
                "流水线中间阶段（PP > 2）拿不到 cu_seqlens，打包在一起的文档互相注意",
                "既非首阶段也非末阶段的流水线阶段收不到打包元数据，对整个打包行做普通因果注意力；"
                "报告中各基准下降 10-20 分。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/bridge/training/gpt_step.py",), "_middle_pp_stage_needs_batch", "fixed"
        ),
    ),
    Defect(
        id="SP203",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.3.0", "0.5.1"),
        effect="crash",
        fields=(CP, OFFLINE, PAD_MULT),
        trigger=cp_offline_packing,
        workaround=(),
        source=f"{BRIDGE_REPO} PR #4489",
        established=(
            "_trim_padded_cu_seqlens_for_cp is in the wheels 0.5.1 and 0.6.x, not in 0.3.0-0.5.0 (PR #4489, "
            "tag v0.6.0, carried into 0.5.1); run on CPU, the 0.5.0 packed collate + CP partitioning hand "
            "thd_get_partitioned_indices cu_seqlens [0, 4, 12, -1], 0.5.1 hands [0, 4, 12]; 0.3.0 is the "
            "first wheel with the packed THD CP partitioning"
        ),
        text={
            "en": (
                "packed THD context parallelism hands the -1 padding of cu_seqlens to TE's partition-index "
                "helper",
                "The packed collate pads the boundary list with -1 (always one entry, more with "
                "pad_cu_seqlens); the CP slicing passed it to Transformer Engine untrimmed, and the Parquet "
                "packed dataset ignored pad_seq_to_mult. The fix was made after an observed failure.",
            ),
            "zh": (
                "打包 THD 上下文并行把 cu_seqlens 中的 -1 填充交给了 TE 的分区索引函数",
                "打包 collate 用 -1 补齐边界列表（至少一个，开启 pad_cu_seqlens 时更多）；"
                "CP 切分未截掉就交给 Transformer Engine，且 Parquet 打包数据集忽略了 pad_seq_to_mult。"
                "该修复源于一次实际出现的故障。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/bridge/training/gpt_step.py",),
            "_trim_padded_cu_seqlens_for_cp",
            "fixed",
            requires="def _partition_packed_batch_for_cp",
        ),
    ),
    Defect(
        id="SP204",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected(None, None),
        effect="silent",
        fields=(OFFLINE, CHAT, LOSS_MODE, "packed data"),
        trigger=eos_in_trained_spans,
        workaround=(),
        source=f"{BRIDGE_REPO} PR #5213",
        established=(
            "every wheel 0.3.0-0.6.2 clears loss_mask wherever the input token is eos_id in the packed "
            "collate; the fix (PR #5213, main 2026-07-31) is in no release up to 0.6.2"
        ),
        text={
            "en": (
                "the packed collate drops the loss after every EOS inside a trained span",
                "Bridge's packed collate zeroes the loss of each position whose input is the EOS id, so with "
                "a chat template that puts EOS between turns (or loss_mode full) the token after each "
                "delimiter is never trained: packed and unpacked runs optimise different objectives. "
                "Avoid EOS inside trained spans (a turn delimiter other than eos_id), train unpacked, or "
                "use a Bridge that has PR #5213.",
            ),
            "zh": (
                "打包 collate 丢弃了训练区间内每个 EOS 之后的损失",
                "Bridge 的打包 collate 把输入为 EOS id 的位置损失置零；若对话模板在轮次之间放 EOS（或 "
                "loss_mode 为 full），每个分隔符后的词元永远不被训练，打包与不打包的训练目标不同。"
                "请避免训练区间内出现 EOS（换用非 eos_id 的轮次分隔符）、"
                "不打包训练，或使用包含 PR #5213 的 Bridge。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/bridge/data/packing/gpt_sft.py", "megatron/bridge/data/datasets/sft.py"),
            "loss_mask[tokens == self.tokenizer.eos_id] = 0",
            "affected",
        ),
    ),
    Defect(
        id="SP205",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected(None, "0.4.0"),
        effect="silent",
        fields=(CHAT, LOSS_MODE),
        trigger=chat_data,
        workaround=(),
        source=f"{BRIDGE_REPO} PR #2699",
        established=(
            "_chat_preprocess appends a trained eos_id in the wheels 0.3.0 and 0.3.1, not in 0.4.0 and later "
            "(PR #2699, first tag v0.4.0)"
        ),
        text={
            "en": (
                "chat preprocessing appends an extra, trained EOS to conversations that do not end in EOS",
                "Templates whose last token is not eos_id (ChatML, Llama 3) got one more target token per "
                "conversation, with loss, that the model never sees at inference.",
            ),
            "zh": (
                "对话预处理给不以 EOS 结尾的对话额外追加一个参与训练的 EOS",
                "末尾词元不是 eos_id 的模板（ChatML、Llama "
                "3）每段对话多出一个计入损失的目标词元，推理时并不存在。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/bridge/data/datasets/utils.py",), "input_ids += [tokenizer.eos_id]", "affected"
        ),
    ),
    Defect(
        id="SP206",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.3.0", "0.5.1"),
        effect="crash",
        fields=(CP, OFFLINE, PP, "dataset.skip_getting_attention_mask_from_dataset"),
        trigger=cp_dense_mask,
        workaround=(),
        source=f"{BRIDGE_REPO}#4228 (fixes: PR #4519, PR #4354)",
        established=(
            "the packed collate of the wheels 0.3.0-0.5.0 emits a dense attention_mask placeholder that the "
            "CP partitioning slices along dim 1; 0.5.1 emits None (PR #4519), 0.6.0 also skips the key (PR "
            "#4354); middle PP stages load the mask from 0.5.0 on (PR #3926)"
        ),
        text={
            "en": (
                "packed THD context parallelism tries to partition the placeholder attention_mask",
                "When the batch carries the packed collate's attention_mask (middle PP stages, or "
                "skip_getting_attention_mask_from_dataset false), CP slicing indexes its missing sequence "
                "dimension and raises IndexError.",
            ),
            "zh": (
                "打包 THD 上下文并行试图切分占位的 attention_mask",
                "当批次带有打包 collate 的 attention_mask（流水线中间阶段，或 "
                "skip_getting_attention_mask_from_dataset "
                "为 false）时，CP 切分访问其不存在的序列维度并抛出 IndexError。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/bridge/data/packing/gpt_sft.py", "megatron/bridge/data/datasets/sft.py"),
            '"attention_mask": None',
            "fixed",
        ),
    ),
    Defect(
        id="SP207",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected(None, "0.5.0"),
        effect="silent",
        fields=(GRAPH_IMPL, "mixed_precision", "mixed_precision.fp8_param_gather"),
        trigger=mxfp8_full_graph,
        workaround=(override(GRAPH_IMPL, "transformer_engine"),),
        source=f"{BRIDGE_REPO} PR #3076",
        established=("fix commit first in tag v0.5.0 (and the r0.5.0 / r0.6.0 branches); not in v0.4.x"),
        text={
            "en": (
                "a full-iteration CUDA graph with MXFP8 parameter all-gather replays the gather into stale "
                "parameter buffers",
                "The captured graph replays the all-gather unconditionally; on the first iteration the "
                "parameter buffers were not populated, so training converged wrongly.",
            ),
            "zh": (
                "整轮 CUDA 图与 MXFP8 参数 all-gather 一起使用时，重放的 gather 读到过期的参数缓冲",
                "捕获的图无条件重放 all-gather；第一轮时参数缓冲尚未填充，导致收敛错误。",
            ),
        },
    ),
    Defect(
        id="SP208",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected(None, None),
        effect="silent",
        fields=("model.num_moe_experts", PAD_MULT, PAD_TO_MAX),
        trigger=moe_packed_padding,
        workaround=(override(PAD_MULT, 1),),
        source=f"{BRIDGE_REPO} PR #5470",
        established=(
            "no wheel up to 0.6.2 emits a padding_mask from the packed collate; the fix (PR #5470, main "
            "2026-08-12) is in no release up to 0.6.2"
        ),
        text={
            "en": (
                "MoE router statistics count the alignment padding of packed rows",
                "Padding tokens added for pad_seq_to_mult or fixed-width rows are routed like real tokens, "
                "skewing the load-balancing loss and expert-usage statistics.",
            ),
            "zh": (
                "MoE 路由统计把打包行的对齐填充也算了进去",
                "为 pad_seq_to_mult "
                "或定宽行加入的填充词元像真实词元一样参与路由，扭曲负载均衡损失和专家使用统计。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/bridge/data/packing/gpt_sft.py", "megatron/bridge/data/datasets/sft.py"),
            '"padding_mask"',
            "fixed",
        ),
    ),
    Defect(
        id="SP210",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.3.0", "0.4.0"),
        effect="silent",
        fields=(IN_BATCH, LEGACY_IN_BATCH),
        trigger=in_batch_packing,
        workaround=(),
        source=f"{BRIDGE_REPO} PR #2932",
        established=(
            "vlm_step.pack_batch_sequences (first in the 0.3.0 wheel; not in tag v0.2.0) measures lengths "
            "with pad_token_id=0 in the wheels 0.3.0 and 0.3.1; 0.4.0 takes the collator's padding mask (PR "
            "#2932, first tag v0.4.0); the wheels' function is run on CPU by "
            "tests/doctor/test_defect_wheels.py"
        ),
        text={
            "en": (
                "in-batch (VLM) packing takes each sequence to end at its last token whose id is not 0",
                "With a pad id other than 0 no padding is removed (every row packs at full width); a real "
                "token with id 0 at the end of a sequence is cut off with its loss.",
            ),
            "zh": (
                "批内（VLM）打包把每个序列的结尾当作最后一个 id 不为 0 的词元",
                "pad id 不是 0 时一点填充都不会被去掉（每行按满宽打包）；"
                "序列末尾 id 为 0 的真实词元连同其损失被截掉。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/bridge/training/vlm_step.py",),
            "length = int(padding_mask[i].sum().item())",
            "fixed",
            requires="def pack_batch_sequences",
        ),
    ),
    Defect(
        id="SP214",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.3.0", "0.6.0"),
        effect="crash",
        fields=(OFFLINE, CHAT, PAD_MULT, CP),
        trigger=chat_prepadding,
        workaround=(),
        source=f"{BRIDGE_REPO} PR #4056",
        established=(
            "_pre_pad_data_point (pads loss_mask with the ids, accepts tensors) is in the wheels 0.6.0 and "
            "0.6.2, not in 0.3.0-0.5.1 (PR #4056, first tag v0.6.0); 0.3.0 is the first wheel that pre-pads "
            "for CP"
        ),
        text={
            "en": (
                "offline packing of chat data with pre-padding fails: the chat path's tensors and the "
                "unpadded loss_mask",
                "Pre-padding for pad_seq_to_mult (or CP) added "
                "list padding to the tensors chat preprocessing "
                "returns and left loss_mask shorter than input_ids, "
                "so packing raised or built ragged arrays.",
            ),
            "zh": (
                "带预填充的对话数据离线打包失败：对话路径返回张量且 loss_mask 未填充",
                "为 pad_seq_to_mult（或 CP）做的预填充把列表拼到对话预处理返回的张量上，"
                "且 loss_mask 比 input_ids "
                "短，打包报错或生成不规则数组。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/bridge/data/packing/offline.py", "megatron/bridge/data/datasets/packed_sequence.py"),
            "_pre_pad_data_point",
            "fixed",
        ),
    ),
    Defect(
        id="SP215",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.4.0", None),
        effect="crash",
        fields=("model", CP, IN_BATCH),
        trigger=qwen3_vl_cp_packing,
        workaround=(),
        source=f"{BRIDGE_REPO} PR #5614",
        established=(
            "preprocess_packed_seqs (Qwen3-VL; EXAONE 4.5 from 0.6.0) is in the wheels from 0.4.0 and slices "
            "the first CP chunk unclamped up to 0.6.2; the fix (PR #5614, main 2026-08-21) is in no release"
        ),
        text={
            "en": (
                "Qwen3-VL / EXAONE 4.5 packed CP: a row shorter than its alignment padding raises in "
                "preprocess_packed_seqs",
                "The first CP chunk is sliced in padded coordinates from the valid tokens only; when a row's "
                "valid length is below the padding the slice is empty and the assignment fails.",
            ),
            "zh": (
                "Qwen3-VL / EXAONE 4.5 打包 CP：有效长度小于对齐填充的行在 preprocess_packed_seqs 中报错",
                "第一个 CP 块按填充坐标从有效词元中切取；行的有效长度小于填充时切片为空，赋值失败。",
            ),
        },
        fingerprint=WheelMarker(
            ("megatron/bridge/models/qwen_vl/modelling_qwen3_vl/utils.py",),
            "first_end = min(half_seqlen * (cp_rank + 1)",
            "fixed",
            requires="def preprocess_packed_seqs",
        ),
    ),
)
