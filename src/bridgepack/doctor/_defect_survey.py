"""The survey behind the atlas: every packing / THD / context-parallel defect found in the trackers, with what
became of it.

Each :class:`Surveyed` row is one defect as found upstream (an issue or a pull request), with the trigger in
words and one status:

    cited          an atlas entry (or several: one per release range) fires on it and names it as its source
    no release     no released version carries it (the regression and its fix share a first tag, or it is on
                   a branch only): a finding would be wrong on every real stack
    not checkable  a config cannot decide it (the launch script, the data or the hardware does), with why

A cited row takes its component, effect and range from the entries it cites, so the table cannot drift from
the atlas; ``docs/doctor.md``'s survey table is :func:`survey_markdown` (a test keeps them equal).
"""

from __future__ import annotations

from dataclasses import dataclass

from bridgepack.doctor._defect_model import BRIDGE_REPO, EFFECTS, MLM_REPO, TE_REPO, Defect, Effect
from bridgepack.doctor._defects import DEFECTS
from bridgepack.doctor._versions import BRIDGE, MCORE, Affected

CITED, NO_RELEASE, NOT_CHECKABLE = "cited", "no release", "not checkable"
_SHORT = {BRIDGE_REPO: "Bridge", MLM_REPO: "Megatron-LM", TE_REPO: "TE"}


@dataclass(frozen=True)
class Ref:
    """An upstream issue or pull request, or (``path`` at ``tag``) a file of a release where the survey found
    the defect by reading the code."""

    repo: str
    number: int = 0
    pr: bool = False
    path: str = ""
    tag: str = ""

    @property
    def url(self) -> str:
        if self.path:
            return f"https://github.com/{self.repo}/blob/{self.tag}/{self.path}"
        return f"https://github.com/{self.repo}/{'pull' if self.pr else 'issues'}/{self.number}"

    def __str__(self) -> str:
        if self.path:
            return f"{_SHORT[self.repo]} {self.tag}: {self.path.rsplit('/', 1)[-1]}"
        return f"{_SHORT[self.repo]} {'PR ' if self.pr else ''}#{self.number}"


@dataclass(frozen=True, kw_only=True)
class Surveyed:
    """One defect the survey found (module docstring)."""

    ref: Ref
    #: What a run must have to hit it, in words.
    trigger: str
    #: The atlas entries that fire on it (status ``cited``).
    cited: tuple[str, ...] = ()
    #: For a row that is not cited: ``no release`` or ``not checkable``, why, and (not checkable) the range.
    status: str = CITED
    why: str = ""
    component: str = ""
    effect: Effect = "unspecified"
    affected: Affected | None = None

    def entries(self) -> list[Defect]:
        by_id = {d.id: d for d in DEFECTS}
        return [by_id[i] for i in self.cited]


def _issue(repo: str, number: int) -> Ref:
    return Ref(repo, number)


def _pr(repo: str, number: int) -> Ref:
    return Ref(repo, number, pr=True)


def _cited(ref: Ref, trigger: str, *ids: str) -> Surveyed:
    return Surveyed(ref=ref, trigger=trigger, cited=ids)


SURVEY: tuple[Surveyed, ...] = (
    # ------------------------------------------------------------ Megatron-Bridge
    _cited(_issue(BRIDGE_REPO, 2952), "packing with PP > 2 (middle stages)", "SP201"),
    _cited(_pr(BRIDGE_REPO, 4489), "offline packing with CP > 1", "SP203"),
    _cited(_pr(BRIDGE_REPO, 5213), "offline-packed chat data with EOS inside trained spans", "SP204"),
    _cited(_pr(BRIDGE_REPO, 2699), "chat-template SFT data", "SP205"),
    _cited(
        _issue(BRIDGE_REPO, 4228),
        "offline packing with CP > 1 and the dataset's attention mask loaded (mask from data, or PP > 2)",
        "SP206",
        "SP253",
    ),
    _cited(_pr(BRIDGE_REPO, 3076), "full-iteration CUDA graph with MXFP8 parameter all-gather", "SP207"),
    _cited(_pr(BRIDGE_REPO, 5470), "MoE with padded packs", "SP208"),
    _cited(_pr(BRIDGE_REPO, 2932), "in-batch packing (lengths read from pad id 0)", "SP210"),
    _cited(_pr(BRIDGE_REPO, 2932), "in-batch packing with CP, SP and TP > 2 (pad multiple)", "SP222"),
    _cited(_pr(BRIDGE_REPO, 2932), "Ministral 3 / Gemma 3 VL with CP and SP", "SP223"),
    _cited(_pr(BRIDGE_REPO, 4056), "offline-packed chat data with pre-padding", "SP214"),
    _cited(_pr(BRIDGE_REPO, 5614), "Qwen3-VL / EXAONE 4.5 packed with CP", "SP215"),
    _cited(_issue(BRIDGE_REPO, 2667), "cp_comm_type a2a+p2p without hierarchical sizes", "SP216"),
    _cited(_issue(BRIDGE_REPO, 1292), "offline packing with CP > 1 (before THD CP)", "SP217"),
    _cited(_issue(BRIDGE_REPO, 1232), "evaluation on offline-packed data", "SP218"),
    _cited(_pr(BRIDGE_REPO, 4660), "MegatronMIMO dataset with pad id equal to EOS", "SP219"),
    _cited(_pr(BRIDGE_REPO, 4675), "epoch-based training with max_train_samples", "SP220"),
    _cited(_pr(BRIDGE_REPO, 4400), "Nemotron Omni in-batch packing", "SP221"),
    _cited(_pr(BRIDGE_REPO, 2825), "in-batch packing with PP > 1", "SP224"),
    _cited(
        _pr(BRIDGE_REPO, 4598), "pre-padding a document close to the pack size (CP or pad multiple)", "SP242"
    ),
    _cited(_issue(BRIDGE_REPO, 1776), "Qwen3-VL packed with RoPE fusion on", "SP249"),
    Surveyed(
        ref=_pr(BRIDGE_REPO, 2039),
        trigger="offline packing without pre-padding (unpadded boundaries passed to TE)",
        status=NO_RELEASE,
        why="the regression (PR #1867) and its fix are both first in tag v0.3.0; v0.2.x passes no unpadded "
        "boundaries (get_packed_seq_params of v0.2.2)",
        component=BRIDGE,
        effect="slowdown",
    ),
    Surveyed(
        ref=_issue(BRIDGE_REPO, 2246),
        trigger="VLM in-batch packing without cu_seqlens_argmin (after the PR #2180 revert)",
        status=NO_RELEASE,
        why="in-batch packing is first in the 0.3.0 wheel, whose vlm_step already passes cu_seqlens_argmin "
        "(0.3.0-0.5.1 do; 0.6.x pass Megatron-Core's cu_seqlens_q, which need none; "
        "tests/doctor/test_defect_wheels.py); PR #2180 and PR #2246 are both first in tag v0.4.0",
        component=BRIDGE,
        effect="crash",
    ),
    Surveyed(
        ref=_pr(BRIDGE_REPO, 4532),
        trigger="Qwen3.5-VL in-batch packing through the generic vlm_step",
        status=NOT_CHECKABLE,
        why="which forward step runs (vlm_step or qwen3_vl_step) is chosen by the launch script, not the "
        "config",
        component=BRIDGE,
        effect="silent",
        affected=Affected(None, "0.6.0"),
    ),
    Surveyed(
        ref=_pr(BRIDGE_REPO, 5990),
        trigger="Energon native packing with MTP refused at validation (#5954)",
        status=NO_RELEASE,
        why="the refusing guard came to main after tag v0.6.0 and PR #5990 removed it; no wheel 0.3.0-0.6.2 "
        "carries it",
        component=BRIDGE,
        effect="crash",
    ),
    Surveyed(
        ref=Ref(BRIDGE_REPO, path="src/megatron/bridge/recipes/qwen_vl/qwen25_vl_dataset.py", tag="v0.6.0"),
        trigger="Qwen2.5-VL recipe dataset: loss masked where labels equal the pad id",
        status=NOT_CHECKABLE,
        why="found reading the wheels (recipes/qwen_vl/qwen25_vl_dataset.py, 0.3.0-0.6.2); it bites only "
        "when "
        "the tokenizer's pad id equals its EOS id, which the config does not record",
        component=BRIDGE,
        effect="silent",
        affected=Affected(None, None),
    ),
    # ------------------------------------------------------------ Megatron-Core / Megatron-LM
    _cited(_issue(MLM_REPO, 4092), "Megatron-LM SFT packing with PP > 2 and TP > 1", "SP202"),
    _cited(_pr(MLM_REPO, 4495), "MTP with packing and CP > 1 (roll on unpadded boundaries)", "SP209"),
    _cited(_pr(MLM_REPO, 4593), "MTP with full recomputation and packing", "SP211"),
    _cited(_issue(MLM_REPO, 1698), "MLA with packing (Q/K and V widths differ)", "SP226"),
    _cited(_issue(MLM_REPO, 6240), "MLA with packing (V padded every layer)", "SP227"),
    _cited(_issue(MLM_REPO, 3798), "Gated DeltaNet with packing", "SP228"),
    _cited(_issue(MLM_REPO, 6108), "MoE seq_aux_loss with packing", "SP229"),
    _cited(_pr(MLM_REPO, 5542), "MoE capacity factor with padded packs", "SP230"),
    _cited(_pr(MLM_REPO, 7278), "MTP with packing and CP > 1 (padding-origin targets)", "SP231"),
    _cited(_pr(MLM_REPO, 5454), "Megatron-LM packed SFT (--sft) with micro_batch_size > 1", "SP232"),
    _cited(_issue(MLM_REPO, 3883), "Gated DeltaNet with CP > 1", "SP246"),
    _cited(_pr(MLM_REPO, 4374), "Gated DeltaNet with CP > 1 and a cp_comm_type (0.18)", "SP247"),
    _cited(_issue(MLM_REPO, 1398), "MLA with packing (RoPE in the bshd layout)", "SP248"),
    _cited(_pr(MLM_REPO, 5243), "MRoPE (per-token positions) with packing and unfused RoPE", "SP250"),
    _cited(_pr(MLM_REPO, 5008), "HybridEP dispatcher with variable-width packs", "SP251"),
    _cited(_pr(MLM_REPO, 6912), "Megatron-LM inter-document masking with CP > 1", "SP252"),
    _cited(_pr(MLM_REPO, 2913), "Mamba hybrid with packing", "SP254"),
    _cited(_issue(MLM_REPO, 5100), "PP >= 4, variable sequence lengths, batched P2P", "SP255"),
    _cited(_pr(MLM_REPO, 7513), "CP > 1 with packed SFT losses averaged per micro-batch", "SP257"),
    _cited(_pr(MLM_REPO, 7498), "MTP with CP > 1 (loss normalised per rank)", "SP258"),
    Surveyed(
        ref=_pr(MLM_REPO, 5696),
        trigger="MoE seq_aux_loss with a packed micro-batch flattened from MBS > 1",
        status=NO_RELEASE,
        why="the flattening (PR #5454) and this fix are both first in tag core_v0.19.0; the 0.19.0 and "
        "0.19.2 "
        "wheels carry both, 0.18.2 neither (tests/doctor/test_defect_wheels.py); the remaining variable-pack "
        "case is SP229",
        component=MCORE,
        effect="silent",
    ),
    Surveyed(
        ref=_pr(MLM_REPO, 4103),
        trigger="Mamba seq_idx lost without total_tokens (a review finding on the PR)",
        status=NOT_CHECKABLE,
        why="a reviewer's finding on the PR itself; no release was shown to carry it",
        component=MCORE,
        effect="silent",
        affected=Affected(None, None),
    ),
    Surveyed(
        ref=_pr(MLM_REPO, 5109),
        trigger="VPP with the sequence-packing scheduler",
        status=NO_RELEASE,
        why="the scheduler is on the dev branch only, in no core_v* tag",
        component=MCORE,
        effect="crash",
    ),
    # ------------------------------------------------------------ Transformer Engine and cuDNN
    _cited(_issue(TE_REPO, 1930), "THD P2P CP with tail-only padding", "SP212"),
    _cited(_issue(TE_REPO, 3487), "THD P2P CP with distinct padded/unpadded tensors", "SP213"),
    _cited(_issue(TE_REPO, 2483), "attention sinks with packing (no backend)", "SP233"),
    _cited(_pr(TE_REPO, 2568), "attention sinks with packing on cuDNN < 9.18", "SP234"),
    _cited(_issue(TE_REPO, 2208), "hierarchical CP (a2a+p2p) with packing", "SP235"),
    _cited(_pr(TE_REPO, 2829), "all-gather CP with packing", "SP236"),
    _cited(_pr(TE_REPO, 2220), "sliding window with CP and packing (no path)", "SP237"),
    _cited(_pr(TE_REPO, 2220), "sliding window with CP and packing (a2a only)", "SP238"),
    _cited(_issue(TE_REPO, 2892), "FP8 attention (delayed / blockwise) on padded packs", "SP239"),
    _cited(_issue(TE_REPO, 3006), "head dimension above 256 with packing", "SP240"),
    _cited(_issue(TE_REPO, 1552), "MLA with P2P CP and packing", "SP241"),
    _cited(_issue(TE_REPO, 2186), "THD P2P CP with documents shorter than 2*CP, on Hopper", "SP243"),
    _cited(_issue(TE_REPO, 3249), "learnable sinks with packing, value head width not 64/128/256", "SP244"),
    _cited(_issue(TE_REPO, 923), "FP8 attention with packing under CP or MXFP8", "SP245"),
    _cited(_issue(TE_REPO, 2541), "attention sinks with CP outside a2a", "SP256"),
    _cited(_issue(TE_REPO, 3333), "fused attention with packing on sm_120 GPUs", "SP259"),
)


def _range(row: Surveyed) -> str:
    if row.status == NO_RELEASE:
        return "none released"
    if row.status == NOT_CHECKABLE:
        return row.affected.describe() if row.affected else "not established"
    parts = []
    for d in row.entries():
        needs = "".join(f" with {c} {a.describe()}" for c, a in d.also)
        parts.append(f"{d.component} {d.affected.describe()}{needs}")
    return "; ".join(dict.fromkeys(parts))


def _component(row: Surveyed) -> str:
    return ", ".join(dict.fromkeys(d.component for d in row.entries())) if row.cited else row.component


def _effect(row: Surveyed) -> str:
    effects = {d.effect for d in row.entries()} if row.cited else {row.effect}
    return ", ".join(EFFECTS[e]["en"] for e in sorted(effects))


def recall() -> dict[str, int]:
    """Counts for the docs: rows, config-checkable rows (cited, or checkable but not cited), cited rows."""
    checkable = [r for r in SURVEY if r.status == CITED]
    return {
        "surveyed": len(SURVEY),
        "checkable": len(checkable),
        "cited": sum(1 for r in checkable if r.cited),
        "no release": sum(1 for r in SURVEY if r.status == NO_RELEASE),
        "not checkable": sum(1 for r in SURVEY if r.status == NOT_CHECKABLE),
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def survey_markdown() -> str:
    """The recall line and the survey table, as ``docs/doctor.md`` carries them (a test keeps them equal)."""
    counts = recall()
    share = round(100 * counts["cited"] / counts["checkable"])
    lines = [
        f"{counts['surveyed']} defects surveyed: {counts['checkable']} a config can decide, of which the "
        f"doctor cites {counts['cited']} ({share}%); {counts['no release']} in no release; "
        f"{counts['not checkable']} a config cannot decide.",
        "",
        "| upstream | component | trigger | affected | effect | status |",
        "|---|---|---|---|---|---|",
    ]
    for row in SURVEY:
        status = f"cited: {', '.join(row.cited)}" if row.status == CITED else f"{row.status}: {row.why}"
        cells = [
            f"[{row.ref}]({row.ref.url})",
            _component(row),
            row.trigger,
            _range(row),
            _effect(row),
            status,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
