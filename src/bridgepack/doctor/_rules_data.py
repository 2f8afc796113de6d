"""The packed data on disk against the config (group ``data``, SP032-SP099; bridge-format §3): the
facts come from one scan of the packed split (``_packed_facts``)."""

from __future__ import annotations

from pathlib import Path

from bridgepack._bridge_keys import (
    CP,
    PACK_SIZE,
    PAD_MULT,
    SP,
    SPECS,
    TP,
)
from bridgepack.data.samples.text import eos_disagreement, tokenizer_eos_id
from bridgepack.doctor._config_facts import ConfigFacts
from bridgepack.doctor._findings import (
    BRIDGEPACK_ONLY,
    ERROR,
    RAISES,
    RUNTIME,
    WARNING,
    CheckResult,
    Hit,
    override,
)
from bridgepack.doctor._registry import rule
from bridgepack.errors import InputError


@rule(
    "SP032",
    WARNING,
    (f"{SPECS}.packed_train_data_path",),
    RAISES,
    group="data",
    en=(
        "packed_train_data_path {path} does not exist here; the packed-data checks were skipped",
        "Bridge raises when an explicit packed path is missing at launch. If the data lives on the cluster "
        "only, run doctor there or pass --packed with a local copy.",
    ),
    zh=(
        "packed_train_data_path {path} 在本机不存在；已跳过打包数据检查",
        "启动时显式指定的打包路径不存在，Bridge 会报错。若数据只在集群上，请在集群上运行 doctor，或用 --pack"
        "ed 指定本地副本。",
    ),
)
def packed_path_missing(ctx: ConfigFacts) -> CheckResult:
    if ctx.missing_packed is not None:
        return Hit({"path": ctx.missing_packed})
    return None


@rule(
    "SP040",
    ERROR,
    (PACK_SIZE, "metadata.pack_size"),
    RUNTIME,
    group="data",
    fix=(PACK_SIZE,),
    en=(
        "metadata pack_size {meta} ({path}) differs from packed_sequence_size {size}",
        "The packed files were built for another pack width: the config and the data disagree.",
    ),
    zh=(
        "元数据中的 pack_size {meta}（{path}）与 packed_sequence_size {size} 不同",
        "打包文件是按另一种打包长度生成的：配置与数据不一致。",
    ),
)
def metadata_pack_size(ctx: ConfigFacts) -> CheckResult:
    facts = ctx.facts
    if facts is None or facts.pack_size is None:
        return None
    size = ctx.view.offline_specs.packed_sequence_size
    if size > 0 and facts.pack_size != size:
        return Hit(
            {"meta": facts.pack_size, "size": size, "path": facts.metadata_path},
            [override(PACK_SIZE, facts.pack_size)],
        )
    return None


@rule(
    "SP041",
    ERROR,
    (PAD_MULT, CP, TP, SP, "packed data"),
    RUNTIME,
    group="data",
    en=(
        "{bad} of {total} packed sequences have a runtime length not divisible by {need} (first: {first})",
        "Context/sequence parallelism splits every sequence into equal chunks; these packs were made for "
        "another topology. No config change fixes the data: re-pack into a new folder with pad_seq_to_mult "
        "{need} (bridgepack pack --cp/--tp/--sequence-parallel derives it).",
    ),
    zh=(
        "{total} 个打包序列中有 {bad} 个的运行时长度不能被 {need} 整除（第一个：{first}）",
        "上下文/序列并行会把每个序列切成等长的块；这些打包数据是为另一种拓扑生成的。"
        "修改配置无法修复数据：请以 pad_seq_to_mult {need} 重新打包到新目录"
        "（bridgepack pack --cp/--tp/--sequence-parallel 会自动推导）。",
    ),
)
def packed_lengths_multiple(ctx: ConfigFacts) -> CheckResult:
    """Packed sequences whose runtime length the topology cannot split. No fix: the data is stale, and a
    config override cannot make it right (SP019 sets the config's pad multiple when that is wrong too)."""
    facts = ctx.facts
    if facts is None or facts.bad_sequences == 0:
        return None
    return Hit(
        {
            "bad": facts.bad_sequences,
            "total": facts.sequences,
            "need": facts.multiple,
            "first": facts.first_bad,
        }
    )


@rule(
    "SP042",
    ERROR,
    (PAD_MULT, "metadata.bridgepack.pad_seq_to_mult"),
    BRIDGEPACK_ONLY,
    group="data",
    en=(
        "the packed data was made with pad_seq_to_mult {recorded} ({path}), the config says {configured}",
        "Stale packs: changing the pad multiple needs a fresh packed directory.",
    ),
    zh=(
        "打包数据使用的 pad_seq_to_mult 为 {recorded}（{path}），而配置为 {configured}",
        "打包数据已过期：修改对齐倍数需要重新生成打包目录。",
    ),
)
def stale_pad_multiple(ctx: ConfigFacts) -> CheckResult:
    facts = ctx.facts
    if facts is None:
        return None
    recorded = facts.record_values("pad_seq_to_mult", "pad_multiple")
    configured = ctx.view.offline_specs.pad_seq_to_mult
    if recorded and {str(configured)} != recorded:
        return Hit(
            {"recorded": ", ".join(sorted(recorded)), "configured": configured, "path": facts.metadata_path}
        )
    return None


@rule(
    "SP043",
    WARNING,
    ("tokenizer.tokenizer_model", "metadata.bridgepack.tokenizer"),
    BRIDGEPACK_ONLY,
    group="data",
    en=(
        "the packed data was tokenized with {recorded} ({path}), the config names {configured}",
        "Stale packs: token ids of another tokenizer mean different text. Re-pack with this tokenizer.",
    ),
    zh=(
        "打包数据使用 {recorded} 分词（{path}），而配置指定的是 {configured}",
        "打包数据已过期：其他分词器的 token id 代表不同的文本。请用当前分词器重新打包。",
    ),
)
def stale_tokenizer(ctx: ConfigFacts) -> CheckResult:
    facts = ctx.facts
    configured = ctx.view.tokenizer.tokenizer_model or ctx.view.offline_specs.tokenizer_model_name
    if facts is None or not configured:
        return None
    recorded = facts.record_values("tokenizer", "tokenizer_model", "tokenizer_model_name")
    if recorded and not any(_same_tokenizer(configured, r) for r in recorded):
        return Hit(
            {"recorded": ", ".join(sorted(recorded)), "configured": configured, "path": facts.metadata_path}
        )
    return None


@rule(
    "SP044",
    ERROR,
    ("tokenizer.tokenizer_model", "metadata.bridgepack.eos_id"),
    BRIDGEPACK_ONLY,
    group="data",
    en=(
        "the packed data was padded with EOS id {recorded} ({source}; {path}), the tokenizer {tokenizer} "
        "says {eos}",
        "Readers pad and mask with the recorded EOS; one guessed from rows a chat template rendered is "
        "their last token (a newline), not the EOS. Re-pack with --tokenizer (or --eos-id).",
    ),
    zh=(
        "打包数据使用 EOS id {recorded} 填充（{source}；{path}），而分词器 {tokenizer} 的 EOS 是 {eos}",
        "读取时按记录的 EOS 填充和屏蔽；从聊天模板渲染的行推断出的 EOS 是其最后一个 token（换行符），并非真"
        "正的 EOS。请使用 --tokenizer（或 --eos-id）重新打包。",
    ),
)
def stale_eos(ctx: ConfigFacts) -> CheckResult:
    """The EOS id the packs were padded with (the metadata's) against the EOS of the config's tokenizer,
    when that tokenizer is a local directory (#15 item 3: an EOS inferred from chat-rendered rows is their
    last token, a newline, not the tokenizer's EOS)."""
    facts = ctx.facts
    directory = ctx.view.tokenizer.tokenizer_model
    if facts is None or facts.eos_id is None or not directory or not Path(directory).is_dir():
        return None
    record = dict(facts.metadata.record())
    try:
        if eos_disagreement(record, Path(directory)) is None:
            return None
        eos = tokenizer_eos_id(Path(directory))
    except InputError:  # not a tokenizer directory bridgepack can load: nothing to compare
        return None
    source = record.get("eos_source") or "unknown source"
    return Hit(
        {
            "recorded": facts.eos_id,
            "source": source,
            "path": facts.metadata_path,
            "tokenizer": directory,
            "eos": eos,
        }
    )


def _same_tokenizer(a: str, b: str) -> bool:
    """Same tokenizer if equal or one path ends with the other (``/models/Llama-3-8B`` vs ``Llama-3-8B``)."""
    a, b = a.rstrip("/"), b.rstrip("/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)
