"""The rule table: every packing and long-context rule, one small function each (bridge-format §7, §8).

Each rule is registered with :func:`rule` under a fixed id, severity, the fields it reads and the upstream
behaviour it mirrors; its message and why live in ``_catalog`` (English and Chinese). A rule Bridge
enforces is an error; advice is a warning or info. The CLI, the Python API and ``docs/doctor.md`` all
read :data:`RULES`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from seqpack._bridge_keys import (
    AVG_COLL,
    CP,
    DATA_SEQ,
    DEFER,
    GBS,
    GRAPH_IMPL,
    GRAPH_SCOPE,
    IN_BATCH,
    LEGACY_IN_BATCH,
    LEGACY_SPECS,
    MBS,
    MODEL_SEQ,
    MTP,
    OFFLINE,
    PACK_SIZE,
    PAD_CU,
    PAD_MULT,
    PAD_TO_MAX,
    PER_TOKEN,
    PP,
    SP,
    SPECS,
    TP,
)
from seqpack.data.samples.text import eos_disagreement, tokenizer_eos_id
from seqpack.doctor._context import Context
from seqpack.doctor._family import ASR, GLM45, QWEN3_NEXT, QWEN35_VL, QWEN_OMNI
from seqpack.doctor._findings import (
    AT_MERGE,
    DOCUMENTED,
    ERROR,
    INFO,
    RAISES,
    RUNTIME,
    SEQPACK_ONLY,
    WARNING,
    CheckResult,
    Hit,
    Rule,
    Severity,
    override,
)
from seqpack.errors import InputError

RULES: list[Rule] = []

#: The cuda_graph_impl values that capture whole training iterations or TE layers (cuda_graph.py).
FULL_ITERATION_IMPL = "full_iteration"
TE_IMPL = "transformer_engine"
LOCAL_IMPL = "local"


def rule(
    rule_id: str, severity: Severity, fields: tuple[str, ...], upstream: str
) -> Callable[[Callable[[Context], CheckResult]], Callable[[Context], CheckResult]]:
    """Register ``check`` in :data:`RULES` under ``rule_id`` (ids are unique and kept in order)."""

    def register(check: Callable[[Context], CheckResult]) -> Callable[[Context], CheckResult]:
        if any(r.id == rule_id for r in RULES):
            raise ValueError(f"duplicate rule id {rule_id}")
        RULES.append(Rule(rule_id, severity, fields, upstream, check))
        return check

    return register


def _packing_off(ctx: Context) -> list[str]:
    """Overrides that switch every kind of packing off."""
    d = ctx.view.dataset
    out = []
    if d.enable_offline_packing or d.offline_packing_specs is not None:
        out += [override(OFFLINE, False), override(SPECS, None)]
    if d.enable_in_batch_packing:
        out.append(override(IN_BATCH, False))
    if d.defer_in_batch_packing_to_step:
        out.append(override(DEFER, False))
    return out


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


# ---------------------------------------------------------------- packing switches (bridge-format §1, §8)


@rule("SP001", ERROR, (OFFLINE, IN_BATCH), RAISES)
def offline_and_in_batch(ctx: Context) -> CheckResult:
    d = ctx.view.dataset
    if d.enable_offline_packing and d.enable_in_batch_packing:
        return Hit(fix=[override(IN_BATCH, False)])
    return None


@rule("SP002", ERROR, (OFFLINE, SPECS), RAISES)
def offline_without_specs(ctx: Context) -> CheckResult:
    d = ctx.view.dataset
    if d.enable_offline_packing and d.offline_packing_specs is None:
        return Hit(fix=[override(OFFLINE, False)])
    return None


@rule("SP003", ERROR, (SPECS, OFFLINE), RAISES)
def specs_without_offline(ctx: Context) -> CheckResult:
    d = ctx.view.dataset
    if d.offline_packing_specs is not None and not d.enable_offline_packing:
        return Hit(fix=[override(OFFLINE, True)])
    return None


@rule("SP004", ERROR, (PACK_SIZE,), RAISES)
def pack_size_positive(ctx: Context) -> CheckResult:
    d = ctx.view.dataset
    specs = d.offline_packing_specs
    if d.enable_offline_packing and specs is not None and specs.packed_sequence_size <= 0:
        fix = [override(PACK_SIZE, d.seq_length)] if d.seq_length else []
        return Hit({"size": specs.packed_sequence_size}, fix)
    return None


@rule("SP005", ERROR, (MBS, GBS, PACK_SIZE), RAISES)
def offline_micro_batch(ctx: Context) -> CheckResult:
    """MBS > 1 with offline packing. The fix keeps the token slots per step: MBS 1, GBS/MBS rows of N*MBS
    (GBS rounded up to a multiple of DP when DP is known, so the batch still divides), and the sequence
    length set to the new pack size as packed training wants it (bridge-format §4; SP016 otherwise)."""
    v = ctx.view
    mbs, gbs = v.train.micro_batch_size, v.train.global_batch_size
    if not v.dataset.enable_offline_packing or mbs is None or mbs <= 1:
        return None
    size = v.offline_specs.packed_sequence_size
    fix = [override(MBS, 1)]
    if gbs is not None:
        fix.append(override(GBS, _round_up(max(gbs // mbs, 1), ctx.dp or 1)))
    if size > 0:
        fix.append(override(PACK_SIZE, size * mbs))
        if v.dataset.seq_length is not None:
            fix += [override(DATA_SEQ, size * mbs), override(MODEL_SEQ, size * mbs)]
    return Hit({"mbs": mbs, "gbs": gbs, "size": size}, fix)


@rule("SP006", ERROR, (IN_BATCH, MBS), RAISES)
def in_batch_micro_batch(ctx: Context) -> CheckResult:
    v = ctx.view
    if v.dataset.enable_in_batch_packing and v.train.micro_batch_size == 1:
        return Hit(fix=[override(IN_BATCH, False)])
    return None


@rule("SP007", ERROR, (PAD_CU, PAD_TO_MAX), RAISES)
def pad_cu_needs_fixed_width(ctx: Context) -> CheckResult:
    d = ctx.view.dataset
    if d.offline_packing_specs is not None and d.offline_packing_specs.pad_cu_seqlens and not d.fixed_width:
        return Hit(fix=[override(PAD_TO_MAX, True)])
    return None


def _graph_modules(ctx: Context) -> list[str]:
    """Per-layer graph modules named in cuda_graph_modules / cuda_graph_scope (full-iteration excluded)."""
    names: list[str] = []
    for value in (ctx.view.model.cuda_graph_modules, ctx.view.model.cuda_graph_scope):
        items = value if isinstance(value, list) else [value] if value else []
        names += [str(item).rsplit(".", 1)[-1] for item in items]
    return [
        n for n in dict.fromkeys(names) if n not in ("full_iteration", "full_iteration_inference", "full")
    ]


def _full_iteration_graph(ctx: Context) -> bool:
    m = ctx.view.model
    if m.cuda_graph_impl == FULL_ITERATION_IMPL:
        return True
    if m.cuda_graph_impl != LOCAL_IMPL:
        return False
    for value in (m.cuda_graph_modules, m.cuda_graph_scope):
        items = value if isinstance(value, list) else [value] if value else []
        if any(str(item).rsplit(".", 1)[-1] == "full_iteration" for item in items):
            return True
    return False


@rule("SP008", ERROR, (GRAPH_IMPL, OFFLINE, PAD_TO_MAX), RAISES)
def graphs_need_fixed_width(ctx: Context) -> CheckResult:
    v = ctx.view
    if v.dataset.offline_packing_specs is None or v.dataset.fixed_width:
        return None
    if _full_iteration_graph(ctx) or v.model.cuda_graph_impl == TE_IMPL:
        return Hit({"impl": v.model.cuda_graph_impl}, [override(PAD_TO_MAX, True)])
    return None


@rule("SP009", ERROR, (GRAPH_IMPL, GRAPH_SCOPE, PAD_CU), RAISES)
def attention_graphs_need_pad_cu(ctx: Context) -> CheckResult:
    v = ctx.view
    specs = v.dataset.offline_packing_specs
    if specs is None or specs.pad_cu_seqlens:
        return None
    modules = _graph_modules(ctx)
    captures_attention = _full_iteration_graph(ctx) or (
        v.model.cuda_graph_impl == TE_IMPL and (not modules or "attn" in modules)
    )
    if captures_attention:
        fix = [override(PAD_CU, True)] + ([] if v.dataset.fixed_width else [override(PAD_TO_MAX, True)])
        return Hit({"impl": v.model.cuda_graph_impl}, fix)
    return None


@rule("SP010", ERROR, (PAD_CU, f"{SPECS}.packed_metadata_path"), RUNTIME)
def pad_cu_needs_metadata(ctx: Context) -> CheckResult:
    specs = ctx.view.dataset.offline_packing_specs
    if specs is None or not specs.pad_cu_seqlens:
        return None
    if ctx.facts is not None and ctx.facts.metadata_path is None:
        return Hit({"where": ctx.packed_path or ""})
    return None


# ---------------------------------------------------------------- context parallelism (bridge-format §7, §8)


@rule("SP011", ERROR, (MODEL_SEQ, CP), RAISES)
def cp_divides_seq_length(ctx: Context) -> CheckResult:
    m = ctx.view.model
    cp = m.context_parallel_size
    if cp > 1 and m.seq_length % (2 * cp) != 0:
        fixed = _round_up(m.seq_length, ctx.pad_needed)  # a multiple of 2*CP that also suits SP (SP024)
        return Hit(
            {"seq": m.seq_length, "cp": cp, "mult": 2 * cp},
            [override(MODEL_SEQ, fixed), override(DATA_SEQ, fixed)],
        )
    return None


def _is_sft(ctx: Context) -> bool:
    return ctx.view.dataset.kind in ("sft", "sft_in_batch")


@rule("SP012", ERROR, (CP, PER_TOKEN), RAISES)
def cp_finetune_per_token_loss(ctx: Context) -> CheckResult:
    v = ctx.view
    if v.model.context_parallel_size > 1 and _is_sft(ctx) and not v.model.calculate_per_token_loss:
        return Hit({"cp": v.model.context_parallel_size}, [override(PER_TOKEN, True)])
    return None


@rule("SP013", ERROR, (CP, AVG_COLL), RAISES)
def cp_finetune_no_collective_average(ctx: Context) -> CheckResult:
    v = ctx.view
    if v.model.context_parallel_size > 1 and _is_sft(ctx) and v.ddp.average_in_collective:
        return Hit({"cp": v.model.context_parallel_size}, [override(AVG_COLL, False)])
    return None


@rule("SP014", ERROR, (PER_TOKEN, AVG_COLL), RUNTIME)
def per_token_loss_vs_collective_average(ctx: Context) -> CheckResult:
    v = ctx.view
    if v.model.calculate_per_token_loss and v.ddp.average_in_collective:
        return Hit(fix=[override(AVG_COLL, False)])
    return None


# ---------------------------------------------------------------- lengths and batches


@rule("SP015", ERROR, (MODEL_SEQ, DATA_SEQ), RAISES)
def seq_lengths_agree(ctx: Context) -> CheckResult:
    v = ctx.view
    if v.dataset.seq_length is not None and v.model.seq_length != v.dataset.seq_length:
        return Hit(
            {"model": v.model.seq_length, "data": v.dataset.seq_length},
            [override(MODEL_SEQ, v.dataset.seq_length)],
        )
    return None


@rule("SP016", WARNING, (PACK_SIZE, DATA_SEQ, GBS), DOCUMENTED)
def pack_size_matches_seq_length(ctx: Context) -> CheckResult:
    """Pack width differs from seq_length; the fix keeps the token slots per step (pack x GBS) equal."""
    v = ctx.view
    size, seq, gbs = v.offline_specs.packed_sequence_size, v.dataset.seq_length, v.train.global_batch_size
    if not v.dataset.enable_offline_packing or size <= 0 or seq is None or size == seq:
        return None
    fix = [override(PACK_SIZE, seq)]
    slots = size * gbs if gbs else None
    step = (v.train.micro_batch_size or 1) * (ctx.dp or 1)
    if slots is not None and slots % seq == 0 and (slots // seq) % step == 0:
        fix.append(override(GBS, slots // seq))
    return Hit({"size": size, "seq": seq, "slots": slots if slots is not None else "?"}, fix)


# Bridge 0.6.2's validate() already refuses it (its eval batch check; found by `seqpack verify --bridge`).
@rule("SP017", ERROR, (GBS, MBS, "data_parallel_size"), RAISES)
def batch_divisibility(ctx: Context) -> CheckResult:
    t = ctx.view.train
    if t.global_batch_size is None or t.micro_batch_size is None or t.micro_batch_size <= 0:
        return None
    dp = ctx.dp or 1
    step = t.micro_batch_size * dp
    if t.global_batch_size % step != 0 or t.global_batch_size < dp:
        fixed = max(_round_up(t.global_batch_size, step), step)
        return Hit(
            {
                "gbs": t.global_batch_size,
                "mbs": t.micro_batch_size,
                "dp": ctx.dp or "1 (unknown: pass --world-size)",
            },
            [override(GBS, fixed)],
        )
    return None


@rule("SP018", ERROR, ("world_size", TP, PP, CP), RAISES)
def world_size_divisible(ctx: Context) -> CheckResult:
    if ctx.world_size is None:
        return None
    mp = ctx.view.model_parallel_size
    if ctx.world_size % mp != 0:
        return Hit({"world": ctx.world_size, "mp": mp})
    return None


# ---------------------------------------------------------------- pad multiple (bridge-format §2, §7)


@rule("SP019", ERROR, (PAD_MULT, CP, TP, SP), RUNTIME)
def pad_multiple_covers_topology(ctx: Context) -> CheckResult:
    v = ctx.view
    pad, need = v.offline_specs.pad_seq_to_mult, ctx.pad_needed
    if v.dataset.enable_offline_packing and isinstance(pad, int) and pad > 0 and pad % need != 0:
        return Hit(
            {"pad": pad, "need": need, "cp": v.model.context_parallel_size}, [override(PAD_MULT, need)]
        )
    return None


@rule("SP020", INFO, (PAD_MULT, CP, TP, SP), SEQPACK_ONLY)
def pad_multiple_larger_than_needed(ctx: Context) -> CheckResult:
    v = ctx.view
    pad, need = v.offline_specs.pad_seq_to_mult, ctx.pad_needed
    if v.dataset.enable_offline_packing and isinstance(pad, int) and pad > need and pad % need == 0:
        return Hit({"pad": pad, "need": need}, [override(PAD_MULT, need)])
    return None


@rule("SP021", ERROR, (PAD_MULT,), RAISES)
def pad_multiple_positive(ctx: Context) -> CheckResult:
    pad = ctx.view.offline_specs.pad_seq_to_mult
    if ctx.view.dataset.offline_packing_specs is not None and isinstance(pad, int) and pad <= 0:
        return Hit({"pad": pad}, [override(PAD_MULT, ctx.pad_needed)])
    return None


@rule("SP022", ERROR, (PAD_MULT,), RUNTIME)
def pad_multiple_not_null(ctx: Context) -> CheckResult:
    if ctx.view.dataset.offline_packing_specs is not None and ctx.view.offline_specs.pad_seq_to_mult is None:
        return Hit(fix=[override(PAD_MULT, ctx.pad_needed)])
    return None


@rule("SP023", ERROR, (f"{SPECS}.max_single_sequence_length", PACK_SIZE), RAISES)
def max_single_sequence_length(ctx: Context) -> CheckResult:
    specs = ctx.view.dataset.offline_packing_specs
    if specs is None or specs.max_single_sequence_length is None:
        return None
    limit = specs.max_single_sequence_length
    if limit <= 0 or (specs.packed_sequence_size > 0 and limit > specs.packed_sequence_size):
        fix = (
            [override(f"{SPECS}.max_single_sequence_length", specs.packed_sequence_size)]
            if specs.packed_sequence_size > 0
            else []
        )
        return Hit({"limit": limit, "size": specs.packed_sequence_size}, fix)
    return None


@rule("SP024", ERROR, (DATA_SEQ, CP, TP, SP), RAISES)
def in_batch_seq_length_multiple(ctx: Context) -> CheckResult:
    v = ctx.view
    seq, need = v.dataset.seq_length, ctx.pad_needed
    if v.dataset.kind == "sft_in_batch" and seq is not None and seq % need != 0:
        fixed = _round_up(seq, need)
        return Hit({"seq": seq, "need": need}, [override(DATA_SEQ, fixed), override(MODEL_SEQ, fixed)])
    return None


@rule("SP025", WARNING, (PACK_SIZE, "kernel_chunk"), SEQPACK_ONLY)
def kernel_chunk_divides_width(ctx: Context) -> CheckResult:
    v = ctx.view
    chunk = ctx.kernel_chunk
    if not chunk or not v.dataset.enable_offline_packing:
        return None
    size = v.offline_specs.packed_sequence_size
    if size > 0 and size % chunk != 0:
        return Hit({"size": size, "chunk": chunk}, [override(PACK_SIZE, _round_up(size, chunk))])
    return None


# ---------------------------------------------------------------- model families and MTP


@rule("SP026", ERROR, ("model", OFFLINE), DOCUMENTED)
def family_without_offline_packing(ctx: Context) -> CheckResult:
    d = ctx.view.dataset
    if ctx.family in (QWEN3_NEXT, GLM45) and (
        d.enable_offline_packing or d.offline_packing_specs is not None
    ):
        return Hit(
            {"family": ctx.family, "source": ctx.family_source},
            [override(OFFLINE, False), override(SPECS, None)],
        )
    return None


@rule("SP027", ERROR, ("model", IN_BATCH, DEFER), DOCUMENTED)
def family_defers_packing_to_step(ctx: Context) -> CheckResult:
    d = ctx.view.dataset
    if ctx.family == QWEN35_VL and (d.enable_in_batch_packing or d.enable_offline_packing):
        fix = [override(IN_BATCH, False), override(DEFER, True)]
        if d.enable_offline_packing:
            fix += [override(OFFLINE, False), override(SPECS, None)]
        return Hit({"family": ctx.family, "source": ctx.family_source}, fix)
    return None


@rule("SP028", ERROR, ("model", OFFLINE, IN_BATCH), DOCUMENTED)
def family_without_packing(ctx: Context) -> CheckResult:
    if ctx.family in (QWEN_OMNI, ASR) and ctx.view.packing:
        return Hit({"family": ctx.family, "source": ctx.family_source}, _packing_off(ctx))
    return None


@rule("SP029", ERROR, (MTP, OFFLINE, IN_BATCH), DOCUMENTED)
def mtp_with_packing(ctx: Context) -> CheckResult:
    v = ctx.view
    if (v.model.mtp_num_layers or 0) > 0 and v.packing:
        return Hit({"layers": v.model.mtp_num_layers}, _packing_off(ctx))
    return None


@rule(
    "SP030",
    ERROR,
    ("dataset.packing_buffer_size", MBS, PER_TOKEN, AVG_COLL, MTP, GRAPH_IMPL, PP, IN_BATCH),
    RAISES,
)
def energon_native_packing(ctx: Context) -> CheckResult:
    v = ctx.view
    if v.dataset.packing_buffer_size is None:
        return None
    broken: list[str] = []
    fix: list[str] = []
    checks = (
        (v.train.micro_batch_size not in (None, 1), MBS, 1),
        (not v.model.calculate_per_token_loss, PER_TOKEN, True),
        (v.ddp.average_in_collective, AVG_COLL, False),
        ((v.model.mtp_num_layers or 0) > 0, MTP, None),
        (v.model.cuda_graph_impl != "none", GRAPH_IMPL, "none"),
        (v.model.pipeline_model_parallel_size > 1, PP, 1),
        (v.dataset.enable_in_batch_packing, IN_BATCH, False),
    )
    for bad, key, good in checks:
        if bad:
            broken.append(key)
            fix.append(override(key, good))
    if broken:
        return Hit({"broken": ", ".join(broken)}, fix)
    return None


@rule("SP031", ERROR, ("peft", "checkpoint.pretrained_checkpoint"), RAISES)
def peft_needs_checkpoint(ctx: Context) -> CheckResult:
    if ctx.view.peft and ctx.view.checkpoint.pretrained_checkpoint is None:
        return Hit(fix=["checkpoint.pretrained_checkpoint=/path/to/pretrained/checkpoint"])
    return None


# ---------------------------------------------------------------- packed data on disk (bridge-format §3)


@rule("SP032", WARNING, (f"{SPECS}.packed_train_data_path",), RAISES)
def packed_path_missing(ctx: Context) -> CheckResult:
    if ctx.missing_packed is not None:
        return Hit({"path": ctx.missing_packed})
    return None


@rule("SP040", ERROR, (PACK_SIZE, "metadata.pack_size"), RUNTIME)
def metadata_pack_size(ctx: Context) -> CheckResult:
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


@rule("SP041", ERROR, (PAD_MULT, CP, TP, SP, "packed data"), RUNTIME)
def packed_lengths_multiple(ctx: Context) -> CheckResult:
    facts = ctx.facts
    if facts is None or facts.bad_sequences == 0:
        return None
    return Hit(
        {
            "bad": facts.bad_sequences,
            "total": facts.sequences,
            "need": facts.multiple,
            "first": facts.first_bad,
        },
        [override(PAD_MULT, ctx.pad_needed)],
    )


@rule("SP042", ERROR, (PAD_MULT, "metadata.seqpack.pad_seq_to_mult"), SEQPACK_ONLY)
def stale_pad_multiple(ctx: Context) -> CheckResult:
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


@rule("SP043", WARNING, ("tokenizer.tokenizer_model", "metadata.seqpack.tokenizer"), SEQPACK_ONLY)
def stale_tokenizer(ctx: Context) -> CheckResult:
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


@rule("SP044", ERROR, ("tokenizer.tokenizer_model", "metadata.seqpack.eos_id"), SEQPACK_ONLY)
def stale_eos(ctx: Context) -> CheckResult:
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
    except InputError:  # not a tokenizer directory seqpack can load: nothing to compare
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


# ---------------------------------------------------------------- the input itself (loader problems)


def _problems(ctx: Context, kind: str) -> Iterator[Hit]:
    for p in ctx.problems:
        if p.kind == kind:
            fields = [p.key] + ([p.suggestion] if p.suggestion else [])
            where = f" ({p.where})" if p.where else ""
            params = {"key": p.key, "detail": p.detail, "suggestion": p.suggestion, "where": where}
            yield Hit(params, [], fields)


@rule("SP100", WARNING, ("<section>",), AT_MERGE)
def unknown_section(ctx: Context) -> CheckResult:
    return list(_problems(ctx, "unknown-section"))


@rule("SP101", WARNING, ("<field>",), AT_MERGE)
def unknown_field(ctx: Context) -> CheckResult:
    return list(_problems(ctx, "unknown-field"))


@rule("SP102", ERROR, ("<field>",), RAISES)
def wrong_type(ctx: Context) -> CheckResult:
    return list(_problems(ctx, "wrong-type"))


@rule("SP106", ERROR, ("<field>",), RAISES)
def out_of_range(ctx: Context) -> CheckResult:
    return list(_problems(ctx, "out-of-range"))


@rule("SP107", ERROR, ("<field>",), SEQPACK_ONLY)
def duplicate_key(ctx: Context) -> CheckResult:
    return list(_problems(ctx, "duplicate-key"))


@rule("SP103", ERROR, ("<field>",), SEQPACK_ONLY)
def contradictory_overrides(ctx: Context) -> CheckResult:
    return list(_problems(ctx, "contradiction"))


@rule("SP104", WARNING, ("dataset",), SEQPACK_ONLY)
def mixed_era(ctx: Context) -> CheckResult:
    return list(_problems(ctx, "mixed-era"))


@rule("SP105", INFO, (LEGACY_SPECS, LEGACY_IN_BATCH), RAISES)
def legacy_names(ctx: Context) -> CheckResult:
    if ctx.view.era != "<=v0.5":
        return None
    return Hit(fix=[])
