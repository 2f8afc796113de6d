"""Messages of every rule, in English and Chinese: ``CATALOG[id][lang] = (message, why)``.

Templates use ``str.format`` with the parameters the rule's check returns. Bridge's own wording
is never copied:
these are seqpack's words for the same conditions (bridge-format §8).
"""

from __future__ import annotations

from typing import Any

LANGS = ("en", "zh")

CATALOG: dict[str, dict[str, tuple[str, str]]] = {
    "SP001": {
        "en": (
            "offline packing and in-batch packing are both enabled",
            "The two packing modes build batches in incompatible ways; Bridge accepts exactly one.",
        ),
        "zh": (
            "离线打包与批内打包同时开启",
            "两种打包方式构造批次的方法互不兼容，Bridge 只允许开启其中一种。",
        ),
    },
    "SP002": {
        "en": (
            "enable_offline_packing is on but offline_packing_specs is not set",
            "Offline packing needs the specs (pack size, pad multiple) to find or build the packed files.",
        ),
        "zh": (
            "已开启 enable_offline_packing，但未设置 offline_packing_specs",
            "离线打包需要 specs（打包长度、对齐倍数）才能找到或生成打包文件。",
        ),
    },
    "SP003": {
        "en": (
            "offline_packing_specs is set but enable_offline_packing is off",
            "Since v0.6 the specs no longer switch packing on by "
            "themselves; Bridge refuses the half-set config.",
        ),
        "zh": (
            "设置了 offline_packing_specs，但 enable_offline_packing 未开启",
            "自 v0.6 起 specs 不再自动开启打包；Bridge 拒绝只设置一半的配置。",
        ),
    },
    "SP004": {
        "en": (
            "packed_sequence_size is {size}; it must be > 0 with offline packing",
            "The pack width is the capacity of every packed row; -1 is only the unset default.",
        ),
        "zh": (
            "packed_sequence_size 为 {size}；离线打包时必须大于 0",
            "打包长度是每个打包行的容量；-1 只是未设置时的默认值。",
        ),
    },
    "SP005": {
        "en": (
            "micro_batch_size is {mbs} with offline packing; packed training needs micro_batch_size 1",
            "A packed row already holds many samples and THD attention takes one row per micro-batch. "
            "The fix keeps the token slots per step: GBS/MBS rows of pack size x MBS.",
        ),
        "zh": (
            "离线打包时 micro_batch_size 为 {mbs}；打包训练要求 micro_batch_size 为 1",
            "一个打包行已包含多个样本，THD 注意力每个微批只接受一行。修复保持每步 token 槽位不变："
            "GBS/MBS 行，每行长度为打包长度 x MBS。",
        ),
    },
    "SP006": {
        "en": (
            "in-batch packing with micro_batch_size 1 has nothing to pack",
            "In-batch packing concatenates the sequences of one micro-batch; with one sequence it is a no-op "
            "that Bridge rejects.",
        ),
        "zh": (
            "micro_batch_size 为 1 时批内打包没有可打包的内容",
            "批内打包拼接同一微批中的多个序列；只有一个序列时毫无作用，Bridge 会拒绝。",
        ),
    },
    "SP007": {
        "en": (
            "pad_cu_seqlens is on but packed rows are not padded to a fixed width (pad_to_max_length)",
            "Padded cu_seqlens have a fixed length only when every row has the fixed pack width.",
        ),
        "zh": (
            "开启了 pad_cu_seqlens，但打包行未填充到固定宽度（pad_to_max_length）",
            "只有每行都填充到固定的打包宽度时，填充后的 cu_seqlens 才有固定长度。",
        ),
    },
    "SP008": {
        "en": (
            "CUDA graphs (cuda_graph_impl={impl}) with offline packing need pad_to_max_length",
            "A captured graph replays fixed tensor shapes; packed rows of varying width break the replay.",
        ),
        "zh": (
            "离线打包下使用 CUDA Graph（cuda_graph_impl={impl}）需要 pad_to_max_length",
            "捕获的图按固定张量形状重放；宽度变化的打包行会使重放失败。",
        ),
    },
    "SP009": {
        "en": (
            "CUDA graphs that capture attention (cuda_graph_impl={impl}) need pad_cu_seqlens",
            "Packed attention reads cu_seqlens; a captured graph needs them at a fixed length too.",
        ),
        "zh": (
            "捕获注意力的 CUDA Graph（cuda_graph_impl={impl}）需要开启 pad_cu_seqlens",
            "打包注意力读取 cu_seqlens；被捕获的图要求它们同样具有固定长度。",
        ),
    },
    "SP010": {
        "en": (
            "pad_cu_seqlens is on but no metadata file "
            "({{N}}_metadata.jsonl) is beside the packed data {where}",
            "With pad_cu_seqlens the collate reads max_samples_per_bin from the metadata; without it the run "
            "fails when the first batch is built. Re-pack, or point packed_metadata_path at the sidecar.",
        ),
        "zh": (
            "开启了 pad_cu_seqlens，但打包数据 {where} 旁没有元数据文件（{{N}}_metadata.jsonl）",
            "pad_cu_seqlens 需要从元数据读取 max_samples_per_bin；缺少时训练会在构造第一个批次时失败。"
            "请重新打包，或将 packed_metadata_path 指向该文件。",
        ),
    },
    "SP011": {
        "en": (
            "seq_length {seq} is not divisible by 2*CP = {mult} (context_parallel_size {cp})",
            "Context parallelism cuts every sequence into 2*CP chunks (zigzag layout).",
        ),
        "zh": (
            "seq_length {seq} 不能被 2*CP = {mult} 整除（context_parallel_size {cp}）",
            "上下文并行把每个序列切成 2*CP 块（之字形布局）。",
        ),
    },
    "SP012": {
        "en": (
            "fine-tuning with CP {cp} needs model.calculate_per_token_loss=true",
            "A CP rank whose shard holds only masked tokens would divide its loss by zero; per-token loss "
            "sums first and divides by the global token count.",
        ),
        "zh": (
            "CP 为 {cp} 的微调需要 model.calculate_per_token_loss=true",
            "若某个 CP rank 的分片全部被掩码，其损失会除以零；按 token 计算损失先求和，再除以全局 token 数。",
        ),
    },
    "SP013": {
        "en": (
            "fine-tuning with CP {cp} needs ddp.average_in_collective=false",
            "Averaging in the collective divides by the rank count instead of the token count, which breaks "
            "the per-token loss CP fine-tuning relies on.",
        ),
        "zh": (
            "CP 为 {cp} 的微调需要 ddp.average_in_collective=false",
            "在集合通信中求平均是除以 rank 数而非 token 数，会破坏 CP 微调所依赖的按 token 损失。",
        ),
    },
    "SP014": {
        "en": (
            "calculate_per_token_loss and average_in_collective are both on",
            "Per-token loss divides by the global token count itself; Megatron-Core asserts against also "
            "averaging in the gradient collective.",
        ),
        "zh": (
            "calculate_per_token_loss 与 average_in_collective 同时开启",
            "按 token 损失自行除以全局 token 数；Megatron-Core 会断言禁止再在梯度集合通信中求平均。",
        ),
    },
    "SP015": {
        "en": (
            "model.seq_length {model} differs from dataset.seq_length {data}",
            "The model's position and attention shapes must match the rows the data produces.",
        ),
        "zh": (
            "model.seq_length {model} 与 dataset.seq_length {data} 不一致",
            "模型的位置与注意力形状必须与数据产生的行一致。",
        ),
    },
    "SP016": {
        "en": (
            "packed_sequence_size {size} differs from seq_length {seq}",
            "Keep the pack width equal to seq_length. When changing it, keep the token slots per step "
            "(pack x GBS = {slots}) equal so the learning-rate schedule still sees the same tokens per step.",
        ),
        "zh": (
            "packed_sequence_size {size} 与 seq_length {seq} 不同",
            "请让打包长度等于 seq_length。修改打包长度时，保持每步 token "
            "槽位（打包长度 x GBS = {slots}）不变，"
            "使学习率调度每步看到的 token 数相同。",
        ),
    },
    "SP017": {
        "en": (
            "global_batch_size {gbs} is not a multiple of micro_batch_size {mbs} x DP {dp} (or is below DP)",
            "Each step runs GBS / (MBS x DP) micro-batches on every "
            "data-parallel rank; the quotient must be a "
            "whole number of at least 1.",
        ),
        "zh": (
            "global_batch_size {gbs} 不是 micro_batch_size {mbs} x DP {dp} 的整数倍（或小于 DP）",
            "每步在每个数据并行 rank 上运行 GBS / (MBS x DP) 个微批，该商必须是不小于 1 的整数。",
        ),
    },
    "SP018": {
        "en": (
            "world size {world} is not divisible by TP x PP x CP = {mp}",
            "DP = world size / (TP x PP x CP) must be a whole number.",
        ),
        "zh": (
            "world size {world} 不能被 TP x PP x CP = {mp} 整除",
            "DP = world size / (TP x PP x CP) 必须是整数。",
        ),
    },
    "SP019": {
        "en": (
            "pad_seq_to_mult {pad} is not a multiple of {need}, the alignment this topology needs",
            "Every packed sequence must be a multiple of lcm(2*CP, "
            "CP*TP with sequence parallel); Bridge does "
            "not check it at validation and the run fails later. Changing it means re-packing.",
        ),
        "zh": (
            "pad_seq_to_mult {pad} 不是 {need} 的整数倍，而当前并行拓扑需要该对齐",
            "每个打包序列的长度必须是 lcm(2*CP, 开启序列并行时的 CP*TP) 的倍数；Bridge 在校验时不检查，"
            "训练稍后才会失败。修改后需要重新打包。",
        ),
    },
    "SP020": {
        "en": (
            "pad_seq_to_mult {pad} is larger than the {need} this topology needs",
            "A larger multiple works but pads every sequence more than necessary.",
        ),
        "zh": (
            "pad_seq_to_mult {pad} 大于当前拓扑所需的 {need}",
            "更大的倍数可以运行，但会让每个序列多出不必要的填充。",
        ),
    },
    "SP021": {
        "en": (
            "pad_seq_to_mult is {pad}; it must be a positive integer",
            "PackedSequenceSpecs rejects a non-positive multiple when it is built.",
        ),
        "zh": ("pad_seq_to_mult 为 {pad}；必须是正整数", "PackedSequenceSpecs 在构造时会拒绝非正的倍数。"),
    },
    "SP022": {
        "en": (
            "pad_seq_to_mult is null",
            "null passes Bridge's spec check but its packed-data "
            "loader needs an integer and fails at runtime.",
        ),
        "zh": (
            "pad_seq_to_mult 为 null",
            "null 能通过 Bridge 的 specs 检查，但其打包数据加载器需要整数，运行时会失败。",
        ),
    },
    "SP023": {
        "en": (
            "max_single_sequence_length {limit} is not within 1..packed_sequence_size ({size})",
            "A single sequence cannot be longer than the pack it must fit in.",
        ),
        "zh": (
            "max_single_sequence_length {limit} 不在 1..packed_sequence_size（{size}）范围内",
            "单个序列不能长于容纳它的打包行。",
        ),
    },
    "SP024": {
        "en": (
            "seq_length {seq} is not divisible by {need}, the CP/SP padding multiple of in-batch datasets",
            "The in-batch collate pads every sequence to this "
            "multiple; the row width must hold whole chunks.",
        ),
        "zh": (
            "seq_length {seq} 不能被 {need} 整除，这是批内打包数据集的 CP/SP 填充倍数",
            "批内打包的 collate 会把每个序列填充到该倍数；行宽必须容纳完整的块。",
        ),
    },
    "SP025": {
        "en": (
            "packed_sequence_size {size} is not divisible by the kernel chunk {chunk}",
            "The attention kernel you named processes the row in chunks of this size.",
        ),
        "zh": (
            "packed_sequence_size {size} 不能被 kernel 块大小 {chunk} 整除",
            "你指定的注意力 kernel 以该大小分块处理每一行。",
        ),
    },
    "SP026": {
        "en": (
            "{family} (from {source}) does not support offline packing",
            "Bridge's recipes for this family turn offline packing off "
            "and note that packed sequences are not "
            "supported.",
        ),
        "zh": (
            "{family}（来自 {source}）不支持离线打包",
            "Bridge 为该模型系列提供的 recipe 关闭了离线打包，并注明不支持打包序列。",
        ),
    },
    "SP027": {
        "en": (
            "{family} (from {source}) packs inside its own training step: use defer_in_batch_packing_to_step",
            "Bridge's recipes for this family disable dataset-level packing and let the step pack the batch.",
        ),
        "zh": (
            "{family}（来自 {source}）在自身训练 step 中打包：请使用 defer_in_batch_packing_to_step",
            "Bridge 为该模型系列提供的 recipe 关闭数据集层面的打包，由训练 step 自行打包。",
        ),
    },
    "SP028": {
        "en": (
            "{family} (from {source}) does not support sequence packing",
            "Bridge's recipes for this family train without packing.",
        ),
        "zh": (
            "{family}（来自 {source}）不支持序列打包",
            "Bridge 为该模型系列提供的 recipe 均不使用打包训练。",
        ),
    },
    "SP029": {
        "en": (
            "multi-token prediction (mtp_num_layers {layers}) with sequence packing",
            "MTP shifts labels across the packed row and crosses sequence boundaries; Bridge documents it as "
            "unsupported for fine-tuning with packing (and enforces it only for Energon native packing).",
        ),
        "zh": (
            "多 token 预测（mtp_num_layers {layers}）与序列打包同时使用",
            "MTP 会在打包行内移位标签并跨越序列边界；Bridge 文档注明打包微调不支持 "
            "MTP（仅对 Energon 原生打包强制检查）。",
        ),
    },
    "SP030": {
        "en": (
            "Energon native packing (packing_buffer_size) conflicts with: {broken}",
            "Energon native packing needs MBS 1, per-token loss, no collective averaging, no MTP, no CUDA "
            "graphs, no pipeline parallelism and no in-batch packing.",
        ),
        "zh": (
            "Energon 原生打包（packing_buffer_size）与以下设置冲突：{broken}",
            "Energon 原生打包要求 MBS 为 1、按 token 损失、不在集合通信中求平均、无 MTP、无 CUDA Graph、"
            "无流水线并行且不开启批内打包。",
        ),
    },
    "SP031": {
        "en": (
            "PEFT is configured without checkpoint.pretrained_checkpoint",
            "Adapters are trained on top of frozen pretrained weights, which must be loaded from somewhere.",
        ),
        "zh": (
            "配置了 PEFT，但未设置 checkpoint.pretrained_checkpoint",
            "适配器在冻结的预训练权重之上训练，必须指定权重的加载位置。",
        ),
    },
    "SP032": {
        "en": (
            "packed_train_data_path {path} does not exist here; the packed-data checks were skipped",
            "Bridge raises when an explicit packed path is missing at launch. If the data lives on the "
            "cluster only, run doctor there or pass --packed with a local copy.",
        ),
        "zh": (
            "packed_train_data_path {path} 在本机不存在；已跳过打包数据检查",
            "启动时显式指定的打包路径不存在，Bridge 会报错。若数据只在集群上，请在集群上运行 doctor，"
            "或用 --packed 指定本地副本。",
        ),
    },
    "SP040": {
        "en": (
            "metadata pack_size {meta} ({path}) differs from packed_sequence_size {size}",
            "The packed files were built for another pack width: the config and the data disagree.",
        ),
        "zh": (
            "元数据中的 pack_size {meta}（{path}）与 packed_sequence_size {size} 不同",
            "打包文件是按另一种打包长度生成的：配置与数据不一致。",
        ),
    },
    "SP041": {
        "en": (
            "{bad} of {total} packed sequences have a runtime length "
            "not divisible by {need} (first: {first})",
            "Context/sequence parallelism splits every sequence into equal chunks; these packs were made for "
            "another topology. Re-pack with the pad multiple this topology needs.",
        ),
        "zh": (
            "{total} 个打包序列中有 {bad} 个的运行时长度不能被 {need} 整除（第一个：{first}）",
            "上下文/序列并行会把每个序列切成等长的块；这些打包数据"
            "是为另一种拓扑生成的。请按当前拓扑所需的倍数重新打包。",
        ),
    },
    "SP042": {
        "en": (
            "the packed data was made with pad_seq_to_mult {recorded} ({path}), the config says {configured}",
            "Stale packs: changing the pad multiple needs a fresh packed directory.",
        ),
        "zh": (
            "打包数据使用的 pad_seq_to_mult 为 {recorded}（{path}），而配置为 {configured}",
            "打包数据已过期：修改对齐倍数需要重新生成打包目录。",
        ),
    },
    "SP043": {
        "en": (
            "the packed data was tokenized with {recorded} ({path}), the config names {configured}",
            "Stale packs: token ids of another tokenizer mean different text. Re-pack with this tokenizer.",
        ),
        "zh": (
            "打包数据使用 {recorded} 分词（{path}），而配置指定的是 {configured}",
            "打包数据已过期：其他分词器的 token id 代表不同的文本。请用当前分词器重新打包。",
        ),
    },
    "SP044": {
        "en": (
            "the packed data was padded with EOS id {recorded} ({source}; {path}), the tokenizer {tokenizer} "
            "says {eos}",
            "Readers pad and mask with the recorded EOS; one guessed from rows a chat template rendered is "
            "their last token (a newline), not the EOS. Re-pack with --tokenizer (or --eos-id).",
        ),
        "zh": (
            "打包数据使用 EOS id {recorded} 填充（{source}；{path}），而分词器 {tokenizer} 的 EOS 是 {eos}",
            "读取时按记录的 EOS 填充和屏蔽；从聊天模板渲染的行推断出的 EOS 是其最后一个 token（换行符），"
            "并非真正的 EOS。请使用 --tokenizer（或 --eos-id）重新打包。",
        ),
    },
    "SP100": {
        "en": (
            "unknown config section '{key}'{where}{did_you_mean}",
            "Bridge skips an unknown section of a YAML with a warning when it merges the file (its values "
            "are never read) and refuses it as a command-line override.",
        ),
        "zh": (
            "未知的配置段 '{key}'{where}{did_you_mean}",
            "Bridge 合并 YAML 时跳过未知配置段并仅打印警告（其中的值永远不会被读取），"
            "作为命令行覆盖项时则直接拒绝。",
        ),
    },
    "SP101": {
        "en": (
            "unknown field '{key}'{where}{did_you_mean}",
            "Bridge skips an unknown field of a YAML with a warning when it merges the file and refuses it "
            "as a command-line override: a misspelled value is never used.",
        ),
        "zh": (
            "未知字段 '{key}'{where}{did_you_mean}",
            "Bridge 合并 YAML 时跳过未知字段并仅打印警告，"
            "作为命令行覆盖项时则直接拒绝：拼错的值永远不会生效。",
        ),
    },
    "SP102": {
        "en": (
            "field '{key}'{where} has the wrong type: {detail}",
            "Bridge builds typed dataclasses from the config; a wrong type fails or misbehaves.",
        ),
        "zh": (
            "字段 '{key}'{where} 类型错误：{detail}",
            "Bridge 根据配置构建带类型的 dataclass；类型错误会导致失败或异常行为。",
        ),
    },
    "SP106": {
        "en": (
            "field '{key}'{where} is out of range: {detail}",
            "A parallel size, batch or length outside its range divides by zero or never runs; "
            "the other rules read the default in its place.",
        ),
        "zh": (
            "字段 '{key}'{where} 超出取值范围：{detail}",
            "并行度、批大小或长度超出范围会导致除以零或无法运行；其他规则在此处按默认值检查。",
        ),
    },
    "SP107": {
        "en": (
            "field '{key}'{where} is {detail}",
            "A YAML key written twice in one mapping silently keeps the last value; the other one is lost.",
        ),
        "zh": (
            "字段 '{key}'{where} {detail}",
            "同一映射中重复的 YAML 键会静默保留最后一个值，另一个值被丢弃。",
        ),
    },
    "SP103": {
        "en": (
            "contradictory values: {detail}",
            "The same field is given two different values in one input; say which one you mean.",
        ),
        "zh": ("取值互相矛盾：{detail}", "同一输入中同一字段被赋予两个不同的值；请明确要用哪一个。"),
    },
    "SP104": {
        "en": (
            "the config mixes names of two Bridge releases: {detail}",
            "v0.6 renamed the packing fields; a config with both sets means one of them is silently stale.",
        ),
        "zh": (
            "配置混用了两个 Bridge 版本的字段名：{detail}",
            "v0.6 重命名了打包字段；同时出现两套名称说明其中一套已被静默忽略。",
        ),
    },
    "SP105": {
        "en": (
            "the config uses <= v0.5 packing names (packed_sequence_specs / pack_sequences_in_batch)",
            "Bridge 0.6 renamed them to enable_offline_packing + offline_packing_specs and "
            "enable_in_batch_packing; seqpack read them as the new names.",
        ),
        "zh": (
            "配置使用了 v0.5 及更早的打包字段名（packed_sequence_specs / pack_sequences_in_batch）",
            "Bridge 0.6 将其重命名为 enable_offline_packing + offline_packing_specs 和 "
            "enable_in_batch_packing；seqpack 已按新名称读取。",
        ),
    },
}


#: The "did you mean" tail of SP100/SP101, per language; empty when nothing is close enough to suggest.
_DID_YOU_MEAN = {"en": " (did you mean '{suggestion}'?)", "zh": "（是否想写 '{suggestion}'？）"}


def message_params(params: dict[str, Any], lang: str) -> dict[str, Any]:
    """``params`` plus the language-specific pieces a template needs (``did_you_mean``)."""
    suggestion = params.get("suggestion")
    tail = _DID_YOU_MEAN[lang].format(suggestion=suggestion) if suggestion else ""
    return {**params, "did_you_mean": tail}
