"""The known-defect atlas: upstream bugs in Megatron-Bridge, Megatron-Core and Transformer Engine that a valid
packing / context-parallel / THD / CUDA-graph / MTP / loss-mask config can walk into.

One :class:`Defect` per upstream bug, in one table (:data:`DEFECTS`), like the rule table: an id ``SP2xx``,
the component and its affected releases (first affected, first fixed; ``None`` where it is not established), a
trigger on the config (and the packed data where that decides it), the effect, the workaround overrides, the
source (repository, issue and fix PR) and how the range was established. The doctor turns a triggered entry
into a finding (``_atlas``); ``docs/doctor.md`` lists the table (``_atlas.atlas_markdown``).

Ranges were read from the release artifacts, not only the trackers: Bridge entries from the wheels' code
(``tests/doctor/test_defect_wheels.py`` re-checks each fingerprint on every wheel it can download),
Megatron-Core entries from the ``core_v*`` tags of Megatron-LM, Transformer Engine entries from its tags.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from seqpack._bridge_keys import (
    CHAT,
    CP,
    GRAPH_IMPL,
    IN_BATCH,
    LEGACY_IN_BATCH,
    LOSS_MODE,
    MTP,
    OFFLINE,
    PAD_MULT,
    PAD_TO_MAX,
    PP,
    TP,
)
from seqpack.doctor._defect_facts import BRIDGE_LAUNCHER, MLM_LAUNCHER, DefectContext
from seqpack.doctor._findings import override
from seqpack.doctor._rules import _full_iteration_graph
from seqpack.doctor._versions import BRIDGE, MCORE, TE, Affected

Effect = Literal["silent", "crash", "slowdown", "unspecified"]
#: What each effect means in the docs and messages.
EFFECTS: dict[str, dict[str, str]] = {
    "silent": {"en": "silent wrong training", "zh": "静默地训练错误"},
    "crash": {"en": "crash", "zh": "崩溃"},
    "slowdown": {"en": "slowdown", "zh": "变慢"},
    "unspecified": {"en": "a failure the report does not detail", "zh": "报告未详述的故障"},
}
#: Which launchers run the defective code: Bridge's own step and data code never runs under Megatron-LM's
#: ``pretrain_gpt.py``; Megatron-Core and Transformer Engine run under both; Megatron-LM's training loop only
#: under Megatron-LM.
ON_BRIDGE = frozenset({BRIDGE_LAUNCHER})
ON_MLM = frozenset({MLM_LAUNCHER})
ON_BOTH = ON_BRIDGE | ON_MLM


@dataclass(frozen=True)
class WheelMarker:
    """A line of code that tells an affected release's wheel from a fixed one.

    ``present_when`` says whether ``text`` appears in ``path`` (relative to the wheel's root; the first of
    several paths that exists is read) on the affected releases or on the fixed ones. ``requires`` names the
    code the defect lives in: a release without it (or without the file) does not run that code.
    """

    paths: tuple[str, ...]
    text: str
    present_when: Literal["affected", "fixed"]
    requires: str | None = None


@dataclass(frozen=True)
class Defect:
    id: str
    component: str
    #: Launchers whose runs execute the defective code (:data:`ON_BRIDGE`, :data:`ON_MLM` or :data:`ON_BOTH`).
    launchers: frozenset[str]
    affected: Affected
    effect: Effect
    #: The config fields (and data) the trigger reads.
    fields: tuple[str, ...]
    trigger: Callable[[DefectContext], bool]
    #: Overrides that avoid the defect on an affected release (not applied by ``--fix``: they change the run).
    workaround: tuple[str, ...]
    #: ``owner/repo#issue`` and the fix PR.
    source: str
    #: How the affected range was established.
    established: str
    #: ``{"en": (title, why), "zh": (...)}``: what goes wrong, and the way round it in words.
    text: dict[str, tuple[str, str]]
    fingerprint: WheelMarker | None = None


BRIDGE_REPO = "NVIDIA-NeMo/Megatron-Bridge"
MLM_REPO = "NVIDIA/Megatron-LM"
TE_REPO = "NVIDIA/TransformerEngine"


# ---------------------------------------------------------------- trigger pieces


def _offline(d: DefectContext) -> bool:
    ds = d.ctx.view.dataset
    return ds.enable_offline_packing or ds.offline_packing_specs is not None


def _cp(d: DefectContext) -> int:
    return d.ctx.view.model.context_parallel_size


def _chat(d: DefectContext) -> bool:
    """Chat-template SFT data: the v0.6 preprocessing config, the legacy ``dataset_kwargs.chat`` switch, or an
    HF dataset without preprocessing (Bridge 0.6 defaults those to chat)."""
    target = str(d.get("dataset.preprocessing._target_", ""))
    return (
        "Chat" in target
        or d.get(LOSS_MODE) in ("assistant", "last_turn")
        or d.truthy(CHAT, "dataset.dataset_kwargs.use_hf_tokenizer_chat_template")
        or (d.get("dataset.hf_dataset") is not None and d.get("dataset.preprocessing") is None)
    )


def _full_loss(d: DefectContext) -> bool:
    return "full" in (d.get(LOSS_MODE), d.get("dataset.dataset_kwargs.chat_loss_mode"))


def _mtp(d: DefectContext) -> bool:
    return (d.ctx.view.model.mtp_num_layers or 0) > 0


def _pad_multiple(d: DefectContext) -> int:
    pad = d.ctx.view.offline_specs.pad_seq_to_mult
    return pad if isinstance(pad, int) else 1


# ---------------------------------------------------------------- triggers, one per entry


def _middle_stage_packing(d: DefectContext) -> bool:
    return d.ctx.view.model.pipeline_model_parallel_size > 2 and d.ctx.view.packing


def _mlm_middle_stage_tp(d: DefectContext) -> bool:
    m = d.ctx.view.model
    return m.pipeline_model_parallel_size > 2 and m.tensor_model_parallel_size > 1 and d.ctx.view.packing


def _cp_offline_packing(d: DefectContext) -> bool:
    return _offline(d) and _cp(d) > 1


def _eos_in_trained_spans(d: DefectContext) -> bool:
    if not (_offline(d) and _chat(d)):
        return False
    scan = d.eos_scan()
    return scan.hits > 0 if scan is not None else _full_loss(d)


def _chat_data(d: DefectContext) -> bool:
    return _chat(d)


def _cp_dense_mask(d: DefectContext) -> bool:
    mask_from_data = d.get("dataset.skip_getting_attention_mask_from_dataset", True) is False
    return (
        _offline(d) and _cp(d) > 1 and (mask_from_data or d.ctx.view.model.pipeline_model_parallel_size > 2)
    )


def _mxfp8_full_graph(d: DefectContext) -> bool:
    recipe = f"{d.ctx.view.mixed_precision or ''} {d.get('mixed_precision.fp8_recipe', '')}"
    param_gather = d.truthy(
        "mixed_precision.fp8_param_gather",
        "mixed_precision.fp8_param",
        "model.fp8_param",
        "ddp.fp8_param_gather",
    )
    return _full_iteration_graph(d.ctx) and "mxfp8" in recipe.lower() and param_gather


def _moe_packed_padding(d: DefectContext) -> bool:
    ds = d.ctx.view.dataset
    moe = (d.get("model.num_moe_experts") or 0) > 0
    padded = (_offline(d) and (_pad_multiple(d) > 1 or ds.fixed_width)) or (
        ds.enable_in_batch_packing and ds.in_batch_packing_pad_to_multiple_of > 1
    )
    return moe and padded


def _mtp_cp_packing(d: DefectContext) -> bool:
    return _mtp(d) and _cp(d) > 1 and d.ctx.view.packing


def _in_batch_packing(d: DefectContext) -> bool:
    return d.ctx.view.dataset.enable_in_batch_packing


def _mtp_full_recompute_packing(d: DefectContext) -> bool:
    return _mtp(d) and d.ctx.view.packing and d.get("model.recompute_granularity") == "full"


def _cp_packing(d: DefectContext) -> bool:
    return _cp(d) > 1 and d.ctx.view.packing


def _p2p_cp_packing(d: DefectContext) -> bool:
    """Packed CP with point-to-point communication (Megatron-Core's default ``cp_comm_type``)."""
    return _cp_packing(d) and d.get("model.cp_comm_type", "p2p") == "p2p"


def _chat_prepadding(d: DefectContext) -> bool:
    return _offline(d) and _chat(d) and (_pad_multiple(d) > 1 or _cp(d) > 1)


def _qwen3_vl_cp_packing(d: DefectContext) -> bool:
    m = d.ctx.view.model
    names = f"{m.target or ''} {m.hf_model_id or ''} {d.ctx.family or ''}".lower().replace("-", "_")
    model = any(key in names for key in ("qwen3_vl", "qwen3vl", "exaone4_5", "exaone45"))
    return model and _cp(d) > 1 and d.ctx.view.packing


# ---------------------------------------------------------------- the table


DEFECTS: list[Defect] = [
    Defect(
        "SP201",
        BRIDGE,
        ON_BRIDGE,
        Affected(None, "0.5.0"),
        "silent",
        (PP, OFFLINE, IN_BATCH),
        _middle_stage_packing,
        (override(PP, 2),),
        f"{BRIDGE_REPO}#2952 (fix: PR #3926)",
        "gpt_step.get_batch returns an all-None batch on middle PP stages in tags v0.1.0a0 and v0.2.0 and in "
        "the wheels 0.3.0-0.4.2; the wheels 0.5.0-0.6.2 keep the packed metadata there "
        "(_middle_pp_stage_needs_batch, PR #3926, first tag v0.5.0)",
        {
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
        WheelMarker(("megatron/bridge/training/gpt_step.py",), "_middle_pp_stage_needs_batch", "fixed"),
    ),
    Defect(
        "SP202",
        MCORE,
        ON_MLM,
        Affected("0.16.0", "0.18.0"),
        "crash",
        (PP, TP, OFFLINE, "launcher"),
        _mlm_middle_stage_tp,
        (override(TP, 1),),
        f"{MLM_REPO}#4092 (fix: PR #4103; PR #4150 closed unmerged)",
        "megatron/training/utils.py get_batch_on_this_tp_rank broadcasts cu_seqlens/max_seqlen only on the "
        "first and last stage in tags core_v0.16.0 and core_v0.17.0 (core_v0.15.0 has no SFT cu_seqlens); "
        "PR #4103 (first tag core_v0.18.0) adds the intermediate-stage SFT broadcast; wheels: 0.17.1 lacks "
        "it, 0.18.0-0.19.2 have it (the 0.16.1 wheel ships no megatron/training)",
        {
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
        WheelMarker(
            ("megatron/training/utils.py", "megatron/core/utils.py"),
            "Broadcast required THD metadata",
            "fixed",
        ),
    ),
    Defect(
        "SP203",
        BRIDGE,
        ON_BRIDGE,
        Affected("0.3.0", "0.5.1"),
        "crash",
        (CP, OFFLINE, PAD_MULT),
        _cp_offline_packing,
        (),
        f"{BRIDGE_REPO} PR #4489",
        "_trim_padded_cu_seqlens_for_cp is in the wheels 0.5.1 and 0.6.x, not in 0.3.0-0.5.0 (PR #4489, tag "
        "v0.6.0, carried into 0.5.1); run on CPU, the 0.5.0 packed collate + CP partitioning hand "
        "thd_get_partitioned_indices cu_seqlens [0, 4, 12, -1], 0.5.1 hands [0, 4, 12]; 0.3.0 is the first "
        "wheel with the packed THD CP partitioning",
        {
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
        WheelMarker(
            ("megatron/bridge/training/gpt_step.py",),
            "_trim_padded_cu_seqlens_for_cp",
            "fixed",
            requires="def _partition_packed_batch_for_cp",
        ),
    ),
    Defect(
        "SP204",
        BRIDGE,
        ON_BRIDGE,
        Affected(None, None),
        "silent",
        (OFFLINE, CHAT, LOSS_MODE, "packed data"),
        _eos_in_trained_spans,
        (),
        f"{BRIDGE_REPO} PR #5213",
        "every wheel 0.3.0-0.6.2 clears loss_mask wherever the input token is eos_id in the packed collate; "
        "the fix (PR #5213, main 2026-07-31) is in no release up to 0.6.2",
        {
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
        WheelMarker(
            ("megatron/bridge/data/packing/gpt_sft.py", "megatron/bridge/data/datasets/sft.py"),
            "loss_mask[tokens == self.tokenizer.eos_id] = 0",
            "affected",
        ),
    ),
    Defect(
        "SP205",
        BRIDGE,
        ON_BRIDGE,
        Affected(None, "0.4.0"),
        "silent",
        (CHAT, LOSS_MODE),
        _chat_data,
        (),
        f"{BRIDGE_REPO} PR #2699",
        "_chat_preprocess appends a trained eos_id in the wheels 0.3.0 and 0.3.1, not in 0.4.0 and later "
        "(PR #2699, first tag v0.4.0)",
        {
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
        WheelMarker(
            ("megatron/bridge/data/datasets/utils.py",), "input_ids += [tokenizer.eos_id]", "affected"
        ),
    ),
    Defect(
        "SP206",
        BRIDGE,
        ON_BRIDGE,
        Affected("0.3.0", "0.5.1"),
        "crash",
        (CP, OFFLINE, PP, "dataset.skip_getting_attention_mask_from_dataset"),
        _cp_dense_mask,
        (),
        f"{BRIDGE_REPO}#4228 (fixes: PR #4519, PR #4354)",
        "the packed collate of the wheels 0.3.0-0.5.0 emits a dense attention_mask placeholder that the CP "
        "partitioning slices along dim 1; 0.5.1 emits None (PR #4519), 0.6.0 also skips the key (PR #4354); "
        "middle PP stages load the mask from 0.5.0 on (PR #3926)",
        {
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
        WheelMarker(
            ("megatron/bridge/data/packing/gpt_sft.py", "megatron/bridge/data/datasets/sft.py"),
            '"attention_mask": None',
            "fixed",
        ),
    ),
    Defect(
        "SP207",
        BRIDGE,
        ON_BRIDGE,
        Affected(None, "0.5.0"),
        "silent",
        (GRAPH_IMPL, "mixed_precision", "mixed_precision.fp8_param_gather"),
        _mxfp8_full_graph,
        (override(GRAPH_IMPL, "transformer_engine"),),
        f"{BRIDGE_REPO} PR #3076",
        "fix commit first in tag v0.5.0 (and the r0.5.0 / r0.6.0 branches); not in v0.4.x",
        {
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
        "SP208",
        BRIDGE,
        ON_BRIDGE,
        Affected(None, None),
        "silent",
        ("model.num_moe_experts", PAD_MULT, PAD_TO_MAX),
        _moe_packed_padding,
        (override(PAD_MULT, 1),),
        f"{BRIDGE_REPO} PR #5470",
        "no wheel up to 0.6.2 emits a padding_mask from the packed collate; the fix (PR #5470, main "
        "2026-08-12) is in no release up to 0.6.2",
        {
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
        WheelMarker(
            ("megatron/bridge/data/packing/gpt_sft.py", "megatron/bridge/data/datasets/sft.py"),
            '"padding_mask"',
            "fixed",
        ),
    ),
    Defect(
        "SP209",
        MCORE,
        ON_BOTH,
        Affected("0.16.0", None),
        "silent",
        (MTP, CP, OFFLINE, IN_BATCH),
        _mtp_cp_packing,
        (override(CP, 1),),
        f"{MLM_REPO} PR #4495 (dev: PR #4494)",
        "_roll_tensor_packed_seq rolls by cu_seqlens_q (unpadded) in tags core_v0.16.0-core_v0.19.0; main "
        "prefers cu_seqlens_q_padded from 2026-08-22; no release carries it (PR #4495 open, #4494 on dev); "
        "the wheels 0.16.1-0.19.2 all roll by cu_seqlens_q; run on CPU (gloo, CP 2), the 0.19.2 roll with "
        "unpadded boundaries mis-targets real tokens, with padded ones it is right",
        {
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
        WheelMarker(
            ("megatron/core/transformer/multi_token_prediction.py",),
            "cu_seqlens_q_padded",
            "fixed",
            requires="def _roll_tensor_packed_seq",
        ),
    ),
    Defect(
        "SP210",
        BRIDGE,
        ON_BRIDGE,
        Affected("0.3.0", "0.4.0"),
        "silent",
        (IN_BATCH, LEGACY_IN_BATCH),
        _in_batch_packing,
        (),
        f"{BRIDGE_REPO} PR #2932",
        "vlm_step.pack_batch_sequences (first in the 0.3.0 wheel; not in tag v0.2.0) measures lengths with "
        "pad_token_id=0 in the wheels 0.3.0 and 0.3.1; 0.4.0 takes the collator's padding mask (PR #2932, "
        "first tag v0.4.0); the wheels' function is run on CPU by tests/doctor/test_defect_wheels.py",
        {
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
        WheelMarker(
            ("megatron/bridge/training/vlm_step.py",),
            "length = int(padding_mask[i].sum().item())",
            "fixed",
            requires="def pack_batch_sequences",
        ),
    ),
    Defect(
        "SP211",
        MCORE,
        ON_BOTH,
        Affected(None, "0.18.0"),
        "crash",
        (MTP, "model.recompute_granularity", OFFLINE, IN_BATCH),
        _mtp_full_recompute_packing,
        (override("model.recompute_granularity", "selective"),),
        f"{MLM_REPO} PR #4593",
        "fix commit first in tag core_v0.18.0; the wheels 0.16.1 and 0.17.1 checkpoint the MTP layer with "
        "recompute_granularity full through a generic forward that drops the packed parameters, 0.18.0+ do "
        "not; first affected release not established",
        {
            "en": (
                "MTP with full activation recomputation crashes on packed sequences",
                "The recomputed MTP forward did not receive the packed-sequence parameters.",
            ),
            "zh": (
                "MTP 与 full 激活重计算在打包序列上崩溃",
                "重计算的 MTP 前向没有拿到打包序列参数。",
            ),
        },
        WheelMarker(
            ("megatron/core/transformer/multi_token_prediction.py",),
            "def _checkpointed_forward(self, forward_func",
            "affected",
        ),
    ),
    Defect(
        "SP212",
        TE,
        ON_BOTH,
        Affected(None, None),
        "unspecified",
        (CP, OFFLINE, IN_BATCH),
        _cp_packing,
        (),
        f"{TE_REPO}#1930 (open)",
        "open issue with no linked fix; no release is known to fix it",
        {
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
        "SP213",
        TE,
        ON_BOTH,
        Affected("2.18", None),
        "slowdown",
        (CP, "model.cp_comm_type", OFFLINE, IN_BATCH),
        _p2p_cp_packing,
        (),
        f"{TE_REPO}#3487 (regression from PR #2898)",
        "the regressing commit 4cd705b7 (PR #2898) is first in tag v2.18; the issue is open",
        {
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
        "SP214",
        BRIDGE,
        ON_BRIDGE,
        Affected("0.3.0", "0.6.0"),
        "crash",
        (OFFLINE, CHAT, PAD_MULT, CP),
        _chat_prepadding,
        (),
        f"{BRIDGE_REPO} PR #4056",
        "_pre_pad_data_point (pads loss_mask with the ids, "
        "accepts tensors) is in the wheels 0.6.0 and 0.6.2, "
        "not in 0.3.0-0.5.1 (PR #4056, first tag v0.6.0); 0.3.0 is the first wheel that pre-pads for CP",
        {
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
        WheelMarker(
            ("megatron/bridge/data/packing/offline.py", "megatron/bridge/data/datasets/packed_sequence.py"),
            "_pre_pad_data_point",
            "fixed",
        ),
    ),
    Defect(
        "SP215",
        BRIDGE,
        ON_BRIDGE,
        Affected("0.4.0", None),
        "crash",
        ("model", CP, IN_BATCH),
        _qwen3_vl_cp_packing,
        (),
        f"{BRIDGE_REPO} PR #5614",
        "preprocess_packed_seqs (Qwen3-VL; EXAONE 4.5 from 0.6.0) is in the wheels from 0.4.0 and slices the "
        "first CP chunk unclamped up to 0.6.2; the fix (PR #5614, main 2026-08-21) is in no release",
        {
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
        WheelMarker(
            ("megatron/bridge/models/qwen_vl/modelling_qwen3_vl/utils.py",),
            "first_end = min(half_seqlen * (cp_rank + 1)",
            "fixed",
            requires="def preprocess_packed_seqs",
        ),
    ),
]

DEFECT_IDS = frozenset(d.id for d in DEFECTS)
