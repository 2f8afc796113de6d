"""The atlas entries of Megatron-Bridge: one keyword block per upstream bug, in id order.

Ranges were read from the wheels 0.3.0-0.6.2
(``tests/doctor/test_defect_wheels.py`` re-checks each wheel marker). Find an entry by its upstream number
(``find_defects("#2952")`` in ``_defects``) or by a text search of this file.
"""

from __future__ import annotations

from bridgepack._bridge_keys import (
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
    TP,
)
from bridgepack.doctor._defect_model import BRIDGE_REPO, ON_BRIDGE, Defect, WheelMarker
from bridgepack.doctor._defect_triggers import (
    a2a_p2p_without_hierarchy,
    chat_data,
    chat_prepadding,
    cp_mask_from_data,
    cp_middle_stages,
    cp_offline_packing,
    eos_in_trained_spans,
    epoch_padding_rows,
    evaluation_on_packed_data,
    in_batch_packing,
    in_batch_packing_pp,
    middle_stage_packing,
    mimo_dataset,
    ministral_gemma_vl_cp_sp,
    moe_packed_padding,
    mxfp8_full_graph,
    nemotron_omni_in_batch,
    prepadded_offline_packing,
    qwen3_vl_cp_packing,
    qwen3_vl_fused_rope_packing,
    vlm_cp_sp_wide_tp,
)
from bridgepack.doctor._findings import override
from bridgepack.doctor._versions import BRIDGE, Affected

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
        wheel_marker=WheelMarker(
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
        wheel_marker=WheelMarker(
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
        wheel_marker=WheelMarker(
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
        wheel_marker=WheelMarker(
            ("megatron/bridge/data/datasets/utils.py",), "input_ids += [tokenizer.eos_id]", "affected"
        ),
    ),
    Defect(
        id="SP206",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.3.0", "0.5.1"),
        effect="crash",
        fields=(CP, OFFLINE, "dataset.skip_getting_attention_mask_from_dataset"),
        trigger=cp_mask_from_data,
        workaround=(override("dataset.skip_getting_attention_mask_from_dataset", True),),
        source=f"{BRIDGE_REPO}#4228 (fixes: PR #4519, PR #4354)",
        established=(
            "the packed collate of the wheels 0.3.0-0.5.0 emits a dense attention_mask placeholder (shape "
            "[1]) that the CP partitioning slices along dim 1; 0.5.1 emits None (PR #4519), 0.6.0 also skips "
            "the key (PR #4354); get_batch loads the mask only when skip_getting_attention_mask_from_dataset "
            "is false or on a middle pipeline stage (SP253), so PP 1 and 2 with the default are not affected "
            "(run on CPU by tests/doctor/test_defect_wheels.py)"
        ),
        text={
            "en": (
                "packed THD context parallelism tries to partition the placeholder attention_mask",
                "With skip_getting_attention_mask_from_dataset false the batch carries the packed collate's "
                "attention_mask placeholder, whose missing sequence dimension the CP slicing indexes: "
                "IndexError before the first step.",
            ),
            "zh": (
                "打包 THD 上下文并行试图切分占位的 attention_mask",
                "skip_getting_attention_mask_from_dataset 为 false 时批次带有打包 collate 的 attention_mask "
                "占位"
                ""
                "张量，CP 切分访问其不存在的序列维度，在第一步之前抛出 IndexError。",
            ),
        },
        wheel_marker=WheelMarker(
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
        wheel_marker=WheelMarker(
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
        wheel_marker=WheelMarker(
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
        wheel_marker=WheelMarker(
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
        wheel_marker=WheelMarker(
            ("megatron/bridge/models/qwen_vl/modelling_qwen3_vl/utils.py",),
            "first_end = min(half_seqlen * (cp_rank + 1)",
            "fixed",
            requires="def preprocess_packed_seqs",
        ),
    ),
    Defect(
        id="SP216",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected(None, "0.4.0"),
        effect="silent",
        fields=(CP, "model.cp_comm_type", "model.hierarchical_context_parallel_sizes"),
        trigger=a2a_p2p_without_hierarchy,
        workaround=(override("model.cp_comm_type", "p2p"),),
        source=f"{BRIDGE_REPO}#2667 (fix: PR #2665)",
        established=(
            "training/config.py rejects cp_comm_type a2a+p2p without hierarchical_context_parallel_sizes "
            "in the wheels 0.4.0-0.6.2, not in 0.3.0 and 0.3.1 (PR #2665, first tag v0.4.0); Megatron-LM's "
            "own argument check already refused it, so only Bridge launches are affected"
        ),
        text={
            "en": (
                "cp_comm_type a2a+p2p without hierarchical_context_parallel_sizes silently turns context "
                "parallelism off",
                "Without the hierarchical groups the attention layers get no CP group and each rank attends "
                "only to its own 1/CP slice: throughput looks too good and the loss stays high. Set "
                "hierarchical_context_parallel_sizes or use another cp_comm_type.",
            ),
            "zh": (
                "cp_comm_type 为 a2a+p2p 却未设 hierarchical_context_parallel_sizes 时上下文并行被静默关闭",
                "缺少分层通信组时注意力层拿不到 CP 组，每个 rank 只关注自己的 1/CP 片段：吞吐量异常偏高而损失"
                "偏高。请设置 hierarchical_context_parallel_sizes 或换用其他 cp_comm_type。",
            ),
        },
        wheel_marker=WheelMarker(("megatron/bridge/training/config.py",), "a2a+p2p", "fixed"),
    ),
    Defect(
        id="SP217",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected(None, "0.3.0"),
        effect="crash",
        fields=(CP, OFFLINE),
        trigger=cp_offline_packing,
        workaround=(override(CP, 1),),
        source=f"{BRIDGE_REPO}#1292 (fix: PR #1867)",
        established=(
            "reported against v0.2.x (2025-11); the THD CP partitioning of packed batches (PR #1867, "
            "thd_get_partitioned_indices) is first in the 0.3.0 wheel, which every later wheel keeps"
        ),
        text={
            "en": (
                "offline packing with context parallelism fails before Bridge 0.3",
                "Releases before 0.3.0 had no THD partitioning of packed batches across CP ranks and "
                "sliced the packed row like an unpacked one.",
            ),
            "zh": (
                "Bridge 0.3 之前离线打包与上下文并行一起使用会失败",
                "0.3.0 之前的版本没有按 CP rank 切分打包批次的 THD 分区，而是像非打包行一样切分。",
            ),
        },
    ),
    Defect(
        id="SP218",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected(None, "0.3.0"),
        effect="crash",
        fields=(OFFLINE, "train.eval_iters"),
        trigger=evaluation_on_packed_data,
        workaround=(override("train.eval_iters", 0),),
        source=f"{BRIDGE_REPO}#1232",
        established=(
            "reported against main before tag v0.2.0 (2025-11-07, closed); the issue's traceback is "
            "get_packed_seq_params turning a batched tensor into a scalar during evaluation; the 0.3.0 "
            "wheel's get_packed_seq_params squeezes the batch dimension and carries precomputed argmins "
            "(not re-run on a pre-0.3 wheel: none is in the test cache)"
        ),
        text={
            "en": (
                "evaluation on a packed dataset fails in get_packed_seq_params before Bridge 0.3",
                "The validation step handed get_packed_seq_params a batched cu_seqlens and failed converting "
                "it to a scalar; training steps ran, the first evaluation crashed.",
            ),
            "zh": (
                "Bridge 0.3 之前在打包数据集上评估会在 get_packed_seq_params 中失败",
                "验证步骤把带批维度的 cu_seqlens 交给 get_packed_seq_params，转换为标量时出错；训练步正常，"
                "第一次评估时崩溃。",
            ),
        },
    ),
    Defect(
        id="SP219",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.5.0", "0.6.0"),
        effect="silent",
        fields=("dataset._target_",),
        trigger=mimo_dataset,
        workaround=(),
        source=f"{BRIDGE_REPO} PR #4660",
        established=(
            "data/megatron_mimo/dataset.py masks loss_mask[labels == pad_token_id] in the wheels 0.5.0 and "
            "0.5.1; 0.6.0 and 0.6.2 mask padding by position (num_real_tokens, PR #4660); the 0.4.x "
            "data/mimo/dataset.py does not mask by pad id"
        ),
        text={
            "en": (
                "MegatronMIMO dataset: with pad id equal to EOS every real EOS loses its loss",
                "The dataset masked every label equal to the pad id; tokenizers without a pad token use EOS "
                "as pad, so the model was never trained to stop. Use a tokenizer with its own pad token.",
            ),
            "zh": (
                "MegatronMIMO 数据集：pad id 等于 EOS 时每个真实 EOS 都失去损失",
                "数据集屏蔽所有等于 pad id 的标签；没有 pad 词元的分词器用 EOS 作 pad，模型因此学不会停止。"
                "请使用有独立 pad 词元的分词器。",
            ),
        },
        wheel_marker=WheelMarker(
            ("megatron/bridge/data/megatron_mimo/dataset.py",),
            "loss_mask[labels == pad_token_id] = 0.0",
            "affected",
        ),
    ),
    Defect(
        id="SP220",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected(None, "0.6.0"),
        effect="silent",
        fields=("train.num_epochs", "dataset.max_train_samples"),
        trigger=epoch_padding_rows,
        workaround=(),
        source=f"{BRIDGE_REPO} PR #4675",
        established=(
            "the SFT datasets of the wheels 0.3.0-0.5.1 map a -1 padding index through samples_mapping "
            "before testing it; 0.6.0 and 0.6.2 record auto_gen_idx = idx < 0 first (PR #4675, first tag "
            "v0.6.0)"
        ),
        text={
            "en": (
                "epoch-based training with max_train_samples: the padding rows of the last global batch "
                "keep their loss",
                "The sampler pads the final partial global batch with -1; the sample mapping turned that "
                "sentinel into a real row, so duplicated samples were trained again. Make the sample count "
                "a multiple of the global batch size.",
            ),
            "zh": (
                "按 epoch 训练并设置 max_train_samples：最后一个全局批的填充行保留了损失",
                "采样器用 -1 补齐最后一个不完整的全局批；样本映射把该哨兵变成真实行，重复样本被再次训练。"
                "请让样本数为全局批大小的整数倍。",
            ),
        },
        wheel_marker=WheelMarker(
            ("megatron/bridge/data/datasets/gpt_sft.py", "megatron/bridge/data/datasets/sft.py"),
            "auto_gen_idx = idx < 0",
            "fixed",
        ),
    ),
    Defect(
        id="SP221",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.5.0", None),
        effect="crash",
        fields=("model", IN_BATCH),
        trigger=nemotron_omni_in_batch,
        workaround=(),
        source=f"{BRIDGE_REPO} PR #4400",
        established=(
            "data/energon/nemotron_omni_task_encoder.py is in the wheels from 0.5.0 and carries no "
            "cu_seqlens_unpadded_argmin up to 0.6.2; the fix (PR #4400, main 2026-06-16) is in no release"
        ),
        text={
            "en": (
                "Nemotron Omni in-batch packing drops cu_seqlens_unpadded_argmin, so the unpadded boundaries "
                "are cut to nothing",
                "Without the argmin get_packed_seq_params falls back to torch.argmin, which is 0 for valid "
                "boundaries; the empty cu_seqlens surface as a Transformer Engine / cuDNN bad-parameter "
                "error.",
            ),
            "zh": (
                "Nemotron Omni 批内打包丢失 cu_seqlens_unpadded_argmin，未填充边界被截为空",
                "没有 argmin 时 get_packed_seq_params 退回 torch.argmin，对有效边界它为 0；空的 cu_seqlens "
                "表现为 Transformer Engine / cuDNN 参数错误。",
            ),
        },
        wheel_marker=WheelMarker(
            ("megatron/bridge/data/energon/nemotron_omni_task_encoder.py",),
            "cu_seqlens_unpadded_argmin",
            "fixed",
            requires="class NemotronOmniTaskEncoder",
        ),
    ),
    Defect(
        id="SP222",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.3.0", "0.4.0"),
        effect="crash",
        fields=(IN_BATCH, CP, TP, "model.sequence_parallel"),
        trigger=vlm_cp_sp_wide_tp,
        workaround=(),
        source=f"{BRIDGE_REPO} PR #2932",
        established=(
            "vlm_step of the wheels 0.3.0 and 0.3.1 pads packed rows to 2*CP; 0.4.0 pads to lcm(2*CP, "
            "CP*TP) with sequence parallelism (tp_size in pack_batch_sequences, PR #2932, first tag v0.4.0)"
        ),
        text={
            "en": (
                "in-batch (VLM) packing with CP and sequence parallelism pads to 2*CP, not to a multiple of "
                "CP*TP",
                "After the CP split each rank's tokens must divide by TP for the sequence-parallel "
                "reduce-scatter; with TP > 2 they do not and the step fails.",
            ),
            "zh": (
                "批内（VLM）打包在 CP 与序列并行下按 2*CP 而非 CP*TP 的倍数填充",
                "CP 切分后每个 rank 的词元数须能被 TP 整除才能做序列并行的 reduce-scatter；TP > 2 时不能整除"
                "，训练步失败。",
            ),
        },
    ),
    Defect(
        id="SP223",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected(None, "0.4.0"),
        effect="silent",
        fields=("model", CP, "model.sequence_parallel"),
        trigger=ministral_gemma_vl_cp_sp,
        workaround=(override("model.sequence_parallel", False),),
        source=f"{BRIDGE_REPO} PR #2932",
        established=(
            "the Ministral 3 and Gemma 3 VL models scatter for sequence parallelism before the CP slice in "
            "the wheels 0.3.0 and 0.3.1; PR #2932 (first tag v0.4.0) slices first, as Megatron-Core's LLaVA "
            "does"
        ),
        text={
            "en": (
                "Ministral 3 / Gemma 3 VL with CP and sequence parallelism scatter the tokens before the CP "
                "slice",
                "These models pass decoder_input straight to the language model; scattering for SP first "
                "and slicing for CP second hands each rank tokens of the wrong positions.",
            ),
            "zh": (
                "Ministral 3 / Gemma 3 VL 在 CP 与序列并行下先做序列并行分散再做 CP 切分",
                "这些模型把 decoder_input 直接交给语言模型；先按 SP 分散再按 CP 切分，使每个 rank 拿到错误位"
                "置的词元。",
            ),
        },
    ),
    Defect(
        id="SP224",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.3.0", "0.4.0"),
        effect="crash",
        fields=(IN_BATCH, PP),
        trigger=in_batch_packing_pp,
        workaround=(override(PP, 1),),
        source=f"{BRIDGE_REPO} PR #2825",
        established=(
            "in-batch packing (first in the 0.3.0 wheel) runs with fixed sequence lengths across pipeline "
            "stages in 0.3.0 and 0.3.1; 0.4.0 enables variable_seq_lengths and lets non-last stages pack "
            "without labels (PR #2825, first tag v0.4.0)"
        ),
        text={
            "en": (
                "in-batch packing with pipeline parallelism fails: packed shapes vary between micro-batches",
                "The pipeline schedule expected one fixed shape and stages other than the last carried no "
                "labels or loss mask to pack.",
            ),
            "zh": (
                "批内打包与流水线并行一起使用失败：打包后的形状在微批之间变化",
                "流水线调度假定形状固定，且非末阶段没有可打包的 labels 或 loss mask。",
            ),
        },
    ),
    Defect(
        id="SP242",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.3.0", "0.6.0"),
        effect="crash",
        fields=(OFFLINE, CP, PAD_MULT),
        trigger=prepadded_offline_packing,
        workaround=(),
        source=f"{BRIDGE_REPO} PR #4598 (#4593; follow-up PR #4605 closed)",
        established=(
            "the pre-padding of the wheels 0.3.0-0.5.1 pads to min(max_seq_length, ceil(len, mult)); 0.6.0 "
            "and 0.6.2 cap the runtime pad target below the pack size (max_runtime_pad_cap, PR #4598, first "
            "tag v0.6.0)"
        ),
        text={
            "en": (
                "pre-padding a document close to the pack size overflows the pack or leaves a length CP "
                "cannot split",
                "A document within pad_seq_to_mult of the pack size was padded to one token past the pack; "
                "one between the last multiple and the pack size kept a runtime length not divisible by "
                "2*CP, and THD CP partitioning failed. Long-document datasets under CP hit it.",
            ),
            "zh": (
                "对接近打包长度的文档做预填充会溢出打包行，或留下 CP 无法切分的长度",
                "与打包长度相差不到 pad_seq_to_mult 的文档被填充到超出打包行一个词元；介于最后一个倍数与打包"
                "长度之间的文档运行时长度不能被 2*CP 整除，THD CP 分区失败。CP 下的长文档数据集会遇到。",
            ),
        },
        wheel_marker=WheelMarker(
            ("megatron/bridge/data/packing/offline.py", "megatron/bridge/data/datasets/packed_sequence.py"),
            "max_runtime_pad_cap",
            "fixed",
        ),
    ),
    Defect(
        id="SP249",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected(None, "0.4.0"),
        effect="silent",
        fields=("model", "model.apply_rope_fusion", OFFLINE, IN_BATCH),
        trigger=qwen3_vl_fused_rope_packing,
        workaround=(override("model.apply_rope_fusion", False),),
        source=f"{BRIDGE_REPO}#1776 (fixes: PR #1868, PR #1943; generic vlm_step: PR #4532)",
        established=(
            "Qwen3-VL computes per-token MRoPE positions; with apply_rope_fusion the packed (THD) path runs "
            "Transformer Engine's fused RoPE, which indexes the table by each sequence's own positions "
            "from 0, so every sequence after the first takes the first one's positions; the wheels 0.3.0 and "
            "0.3.1 accept apply_rope_fusion for Qwen3-VL, from 0.4.0 rope.py refuses it (assert, PR #1943, "
            "first tag v0.4.0) and PR #1868 (first tag v0.3.0) builds the indices from the packed rows; the "
            "issue stays open for the generic vlm_step path (PR #4532, first tag v0.6.0)"
        ),
        text={
            "en": (
                "Qwen3-VL packed with RoPE fusion: every packed sequence after the first gets the first "
                "one's "
                "MRoPE positions",
                "The fused THD RoPE kernel reads the position table from 0 for each sequence, but Qwen3-VL's "
                "table holds one 3-axis position per token of the whole row; image and text positions of "
                "later sequences are wrong. Turn RoPE fusion off.",
            ),
            "zh": (
                "打包的 Qwen3-VL 开启 RoPE 融合：第一个之后的每个打包序列都用了第一个序列的 MRoPE 位置",
                "融合的 THD RoPE 内核按每个序列从 0 开始读取位置表，而 Qwen3-VL 的表为整行每个词元保存一个三"
                "轴"
                ""
                "位置；后续序列的图像与文本位置都是错的。请关闭 RoPE 融合。",
            ),
        },
        wheel_marker=WheelMarker(
            ("megatron/bridge/models/qwen_vl/modelling_qwen3_vl/rope.py",),
            "assert not config.apply_rope_fusion",
            "fixed",
        ),
    ),
    Defect(
        id="SP253",
        component=BRIDGE,
        launchers=ON_BRIDGE,
        affected=Affected("0.5.0", "0.5.1"),
        effect="crash",
        fields=(CP, OFFLINE, PP),
        trigger=cp_middle_stages,
        workaround=(override(PP, 2),),
        source=f"{BRIDGE_REPO}#4228 (fix: PR #4519; middle stages load the batch since PR #3926)",
        established=(
            "from 0.5.0 (PR #3926) middle pipeline stages load the whole packed batch, the collate's "
            "attention_mask placeholder included, and the CP partitioning indexes its missing sequence "
            "dimension (the #4228 traceback: include_full_batch_fields); 0.5.1 collates None (PR #4519, "
            "cherry-picked into r0.5.0); before 0.5.0 middle stages received no batch at all (SP201)"
        ),
        text={
            "en": (
                "packed THD context parallelism with PP > 2: middle stages partition the placeholder "
                "attention_mask",
                "Middle pipeline stages load the whole packed batch, the collate's placeholder mask "
                "included, and the CP slicing indexes its missing sequence dimension: IndexError before "
                "the first step.",
            ),
            "zh": (
                "打包 THD 上下文并行且 PP > 2：中间阶段切分占位的 attention_mask",
                "流水线中间阶段加载整个打包批次（包括 collate 的占位掩码），CP 切分访问其不存在的序列维度，"
                "在第"
                ""
                "一步之前抛出 IndexError。",
            ),
        },
    ),
)
