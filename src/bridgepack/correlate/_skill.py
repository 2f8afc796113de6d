"""The skill's "matched" command pairs and the knobs each pair leaves unmatched (bridge-format §12,
correlation trap).

The pairs are the ones printed in Megatron-Bridge ``skills/nemo-mbridge-mlm-bridge-training/SKILL.md``
(commit 067f987df03b): a 1-GPU pair (2 layers, hidden 256) and a 2-GPU TP=2 pair. For every knob of
:data:`~._knobs.KNOBS` we work out what each side really runs with: the value on its command line, else that
launcher's default. Where the two differ the pair is not matched, however close iteration 1 looks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bridgepack.correlate._knobs import KNOBS, RECIPE_OUTPUT_DIR, effective
from bridgepack.correlate._plan import PLAN_SCHEMA_VERSION
from bridgepack.correlate._values import format_value
from bridgepack.doctor import parse_override
from bridgepack.translate import mlm_to_bridge

_MLM_PREFIX = "python -m torch.distributed.run --nproc_per_node={n} 3rdparty/Megatron-LM/pretrain_gpt.py"
_BRIDGE_PREFIX = (
    "python -m torch.distributed.run --nproc_per_node={n} scripts/training/run_recipe.py"
    " --recipe vanilla_gpt_pretrain_config"
)

#: name -> (processes, MLM flags, Bridge overrides), as the skill prints them.
SKILL_PAIRS: dict[str, tuple[int, str, str]] = {
    "1gpu": (
        1,
        "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --ffn-hidden-size 1024"
        " --seq-length 512 --max-position-embeddings 512 --micro-batch-size 4 --global-batch-size 32"
        " --train-iters 10 --eval-iters 2 --eval-interval 10 --mock-data --bf16 --use-mcore-models"
        " --tokenizer-type NullTokenizer --vocab-size 32000 --lr 3e-4 --min-lr 3e-5 --seed 1234"
        " --log-interval 1",
        "model.num_layers=2 model.hidden_size=256 model.num_attention_heads=4 model.ffn_hidden_size=1024"
        " model.seq_length=512 dataset.seq_length=512 train.train_iters=10 train.global_batch_size=32"
        " train.micro_batch_size=4 validation.eval_interval=10 validation.eval_iters=2 optimizer.lr=3e-4"
        " optimizer.min_lr=3e-5 scheduler.lr_warmup_iters=1 scheduler.lr_decay_iters=10 rng.seed=1234"
        " logger.log_interval=1",
    ),
    "tp2": (
        2,
        "--tensor-model-parallel-size 2 --sequence-parallel --num-layers 4 --hidden-size 256"
        " --num-attention-heads 4 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 2"
        " --global-batch-size 16 --train-iters 10 --eval-iters 2 --eval-interval 10 --mock-data --bf16"
        " --use-mcore-models --tokenizer-type NullTokenizer --vocab-size 1024 --lr 1e-4 --log-interval 1",
        "model.tensor_model_parallel_size=2 model.sequence_parallel=true model.num_layers=4"
        " model.hidden_size=256 model.num_attention_heads=4 model.ffn_hidden_size=1024"
        " model.seq_length=1024 dataset.seq_length=1024 train.train_iters=10 train.global_batch_size=16"
        " train.micro_batch_size=2 validation.eval_interval=10 validation.eval_iters=2"
        " scheduler.lr_warmup_iters=2 scheduler.lr_decay_iters=10 logger.log_interval=1",
    ),
}


@dataclass(frozen=True)
class Mismatch:
    """A knob the pair leaves unmatched: what each side runs with."""

    knob: str
    mlm: Any
    bridge: Any
    note: str


@dataclass(frozen=True)
class SkillReport:
    """One skill pair, the knobs it leaves unmatched and the MLM flags Bridge has no key for."""

    name: str
    mlm_command: str
    bridge_command: str
    unmatched: tuple[Mismatch, ...]
    untranslated: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mlm": self.mlm_command,
            "bridge": self.bridge_command,
            "unmatched": [m.__dict__ for m in self.unmatched],
            "untranslated": list(self.untranslated),
        }


@dataclass(frozen=True)
class SkillPairs:
    """Every skill pair analysed (``bridgepack correlate plan --from-skill``)."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`): the correlate
    #: commands' one version.
    SCHEMA_VERSION: ClassVar[int] = PLAN_SCHEMA_VERSION

    reports: list[SkillReport]

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": self.SCHEMA_VERSION, "skill_pairs": [r.to_dict() for r in self.reports]}


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["a.b=1", "c=true"]`` -> ``{"a.b": 1, "c": True}``; items without ``=`` are not overrides."""
    return dict(parse_override(item) for item in items if "=" in item)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return float(a) == float(b)
    return bool(a == b)


def unmatched_knobs(
    mlm_argv: list[str], bridge_overrides: dict[str, Any]
) -> tuple[list[Mismatch], list[str]]:
    """Knobs on which an MLM command and a Bridge command really differ, defaults included.

    Returns the mismatches and the MLM flags that have no Bridge key (listed, never dropped).
    """
    translation = mlm_to_bridge(mlm_argv)
    mlm_settings, untranslated = translation.overrides, translation.untranslated
    bridge_settings = bridge_overrides
    mlm_values: dict[str, Any] = {}
    bridge_values: dict[str, Any] = {}
    unmatched = []
    for knob in KNOBS:
        mlm_values[knob.name] = effective(knob, mlm_settings, knob.mlm_default, mlm_values)
        bridge_values[knob.name] = effective(knob, bridge_settings, knob.recipe_default, bridge_values)
        a, b = mlm_values[knob.name], bridge_values[knob.name]
        if not _same(a, b):
            unmatched.append(Mismatch(knob.name, a, b, knob.note))
    if "checkpoint.save" not in bridge_settings:
        unmatched.append(
            Mismatch(
                "output folder",
                mlm_settings.get("checkpoint.save"),
                RECIPE_OUTPUT_DIR,
                "Bridge resumes silently from an old checkpoint there; the skill's answer is an unconfirmed"
                " rm -rf",
            )
        )
    return unmatched, untranslated


def analyse_pair(name: str) -> SkillReport:
    """Compare what each command of a skill pair runs with, knob by knob."""
    nproc, mlm_text, bridge_text = SKILL_PAIRS[name]
    unmatched, untranslated = unmatched_knobs(mlm_text.split(), parse_overrides(bridge_text.split()))
    return SkillReport(
        name,
        f"{_MLM_PREFIX.format(n=nproc)} {mlm_text}",
        f"{_BRIDGE_PREFIX.format(n=nproc)} {bridge_text}",
        tuple(unmatched),
        tuple(untranslated),
    )


def render_skill(report: SkillReport) -> str:
    """One pair as text: both commands, then the unmatched knobs."""
    lines = [
        f"skill pair {report.name}:",
        f"  MLM:    {report.mlm_command}",
        f"  Bridge: {report.bridge_command}",
        f"  unmatched knobs ({len(report.unmatched)}):",
    ]
    width = max((len(m.knob) for m in report.unmatched), default=0)
    for m in report.unmatched:
        note = f"  ({m.note})" if m.note else ""
        lines.append(
            f"    {m.knob.ljust(width)}  MLM {format_value(m.mlm)}  vs  Bridge {format_value(m.bridge)}{note}"
        )
    if report.untranslated:
        lines.append(f"  MLM flags with no Bridge key: {' '.join(report.untranslated)}")
    return "\n".join(lines)
