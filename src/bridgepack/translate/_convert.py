"""Translate Megatron-LM flags to Bridge overrides and back, through :data:`FLAG_TABLE`.

Worked example::

    mlm_to_bridge(["--seq-length", "4096", "--swiglu", "--use-mcore-models"])
    -> Translation(overrides={"dataset.seq_length": 4096, "model.seq_length": 4096,
                              "model.gated_linear_unit": True, "model.activation_func": "silu"},
                   untranslated=["--use-mcore-models"], ...)
    bridge_to_mlm(that.overrides) -> ["--seq-length", "4096", "--swiglu"]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from bridgepack._bridge_keys import override
from bridgepack.errors import UsageError, shown
from bridgepack.translate._model import DEFAULT_RECIPE, RULES, Resolution, full_launch_defaults
from bridgepack.translate._table import (
    BF16_PRESET,
    BY_FLAG,
    FLAG_TABLE,
    FLOAT_FLAGS,
    FP16_PRESET,
    INT_FLAGS,
    NO_BRIDGE_EQUIVALENT,
    FlagMapping,
    Scalar,
)

#: The reason given for a flag that is neither in the table nor known to lack a Bridge field.
UNKNOWN_FLAG_REASON = "not in bridgepack's flag table; find the Bridge field by hand"

_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def parse_scalar(text: str) -> Scalar:
    """Read a flag value as argparse would hand it to Megatron-LM's typed options: int, float or string.

    ``"4096"`` -> 4096, ``"1e-2"`` and ``".01"`` -> 0.01 (YAML 1.1 reads ``1e-2`` as a string; argparse's
    ``type=float`` does not), anything else stays a string. Booleans are switches, never values.
    """
    stripped = text.strip()
    if _INT.fullmatch(stripped):
        return int(stripped)
    if _FLOAT.fullmatch(stripped):
        return float(stripped)
    return text


@dataclass
class Translation:
    """The result of :func:`mlm_to_bridge`.

    ``overrides``: Bridge key -> value, in the order of the input flags, each flag's coupled keys after it
    (:mod:`._model`), then Megatron-LM's defaults on a full launch.
    ``untranslated``: the input flags (with their values, as given) that no flat override expresses, and on a
    full launch the required flags that are missing (``--lr (not given)``).
    ``reasons``: flag -> why it is untranslated.
    ``origin``: Bridge key -> the flag (or rule) that set it.
    ``conflicts``: human-readable lines for keys two flags set to different values (the last one wins,
    as in Megatron-LM's argparse).
    ``notes``: flags Megatron-LM itself ignores or turns off, so nothing is written for them.
    ``recipe`` / ``full``: the recipe the overrides apply to, and whether the flags were the whole launch.
    """

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`); 2: notes, recipe, full,
    #: and overrides in Hydra's quoting (one argv word each, before any shell quoting).
    SCHEMA_VERSION: ClassVar[int] = 2

    overrides: dict[str, Any] = field(default_factory=dict)
    untranslated: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    recipe: str = DEFAULT_RECIPE
    full: bool = False

    def reason(self, untranslated: str) -> str:
        """Why an entry of :attr:`untranslated` (``"--flag value"``) has no Bridge override."""
        return self.reasons[untranslated.split(" ", 1)[0]]

    def words(self) -> list[str]:
        """The overrides as run_recipe.py's argv words (Hydra's quoting, no shell quoting)."""
        return [override(key, value) for key, value in self.overrides.items()]

    def to_dict(self) -> dict[str, Any]:
        """``bridgepack translate mlm-to-bridge --format json``'s document: the overrides as argv words, the
        conflicts, the notes, and each untranslated flag with its reason."""
        return {
            "schema_version": self.SCHEMA_VERSION,
            "recipe": self.recipe,
            "full": self.full,
            "overrides": self.words(),
            "conflicts": self.conflicts,
            "notes": self.notes,
            "untranslated": [{"flag": item, "reason": self.reason(item)} for item in self.untranslated],
        }


def _flag_items(flags: Sequence[str] | Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Normalise argv tokens or a ``MODEL_ARGS`` mapping to ``(flag, value)`` pairs (``True`` = switch).

    A flag takes every token up to the next ``--flag``: one is its value, several are a multi-value flag's
    values (``--data-path 0.3 A 0.7 B``), kept as a list.
    """
    if isinstance(flags, Mapping):
        items: list[tuple[str, Any]] = []
        for flag, value in flags.items():
            if not isinstance(flag, str) or not flag.startswith("--"):
                raise UsageError(f"MODEL_ARGS key {flag!r}: expected a flag starting with '--'")
            items.append((flag, value))
        return items
    items = []
    tokens = list(flags)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--"):
            raise UsageError(f"Megatron-LM arguments: expected a flag starting with '--', found {token!r}")
        if "=" in token:
            flag, value = token.split("=", 1)
            items.append((flag, value))
            i += 1
            continue
        values = []
        i += 1
        while i < len(tokens) and not tokens[i].startswith("--"):
            values.append(tokens[i])
            i += 1
        mapping = BY_FLAG.get(token)
        if mapping is not None and mapping.kind == "value" and not values:
            raise UsageError(f"Megatron-LM arguments: flag {token} expects a value")
        if mapping is not None and mapping.kind == "switch" and values:
            raise UsageError(f"Megatron-LM flag {token} is a switch and takes no value, found {values[0]!r}")
        items.append((token, True if not values else values[0] if len(values) == 1 else values))
    return items


def _render_untranslated(flag: str, value: Any) -> str:
    if value is True:
        return flag
    return f"{flag} {' '.join(map(str, value))}" if isinstance(value, list) else f"{flag} {value}"


def _multi_value(flag: str, mapping: FlagMapping, raw: Any) -> Any:
    """A multi-value flag's values as Bridge's one string (``dataset.data_path``: split on whitespace)."""
    values = raw if isinstance(raw, list) else str(raw).split()
    if any(not str(v).strip() or any(ch.isspace() for ch in str(v)) for v in values):
        raise UsageError(f"Megatron-LM flag {flag}: a value holding whitespace cannot be passed to Bridge")
    return " ".join(str(v) for v in values)


def mlm_to_bridge(
    flags: Sequence[str] | Mapping[str, Any], *, recipe: str = DEFAULT_RECIPE, full: bool = False
) -> Translation:
    """Map Megatron-LM flags (argv tokens, or a ``MODEL_ARGS`` mapping) to Bridge overrides on ``recipe``.

    ``full``: the flags are the whole launch, so Megatron-LM's defaults are written wherever the recipe may
    hold another value (:func:`~._model.full_launch_defaults`).
    """
    result = Translation(recipe=recipe, full=full)
    given: dict[str, Any] = {}
    for flag, raw in _flag_items(flags):
        mapping = BY_FLAG.get(flag)
        if raw is False:
            continue  # a switch written as "--flag: false" in MODEL_ARGS is simply not passed
        if mapping is None:
            given[flag] = raw
            result.untranslated.append(_render_untranslated(flag, raw))
            result.reasons[flag] = NO_BRIDGE_EQUIVALENT.get(flag, UNKNOWN_FLAG_REASON)
            continue
        if mapping.kind == "switch":
            if raw is not True:
                raise UsageError(
                    f"Megatron-LM flag {flag} is a switch and takes no value, found {shown(raw)}"
                )
            given[flag] = True
            pairs: Iterable[tuple[str, Any]] = mapping.sets
        else:
            if isinstance(raw, bool):
                raise UsageError(f"Megatron-LM flag {flag} expects a value, found {shown(raw)}")
            if mapping.nargs:
                value: Any = _multi_value(flag, mapping, raw)
            elif isinstance(raw, list):
                raise UsageError(f"Megatron-LM flag {flag} takes one value, found {len(raw)}: {shown(raw)}")
            else:
                value = _typed(flag, parse_scalar(raw) if isinstance(raw, str) else raw)
            given[flag] = value
            pairs = [(key, value) for key in mapping.keys]
        for key, value in pairs:
            if key in result.overrides and result.overrides[key] != value:
                result.conflicts.append(
                    f"{key}: {result.origin[key]} sets {result.overrides[key]!r}, {flag} sets {value!r}"
                )
            result.overrides[key] = value
            result.origin[key] = flag
    resolution = Resolution(given, recipe, result.overrides, result.origin)
    for rule in RULES:
        rule(resolution)
    if full:
        full_launch_defaults(resolution, recipe)
    result.notes = resolution.notes
    for flag, why in resolution.untranslated.items():
        item = _render_untranslated(flag, given[flag]) if flag in given else f"{flag} (not given)"
        if item not in result.untranslated:
            result.untranslated.append(item)
        result.reasons[flag] = why
    return result


def _typed(flag: str, value: Any) -> Any:
    """Refuse a value of the wrong type for a numeric flag (``--seq-length four``)."""
    if flag in INT_FLAGS and not (isinstance(value, int) and not isinstance(value, bool)):
        raise UsageError(f"Megatron-LM flag {flag} expects an integer, found {shown(value)}")
    if flag in FLOAT_FLAGS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"Megatron-LM flag {flag} expects a number, found {shown(value)}")
        return float(value)
    return value


#: Characters a POSIX shell reads literally outside quotes; a word holding anything else is double-quoted.
_SHELL_PLAIN = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")


def shell_word(word: str) -> str:
    """One argv word for a shell command line, double-quoted when needed so ``${VAR}`` still expands there
    (``logger.tensorboard_dir='${TB}'`` -> ``"logger.tensorboard_dir='${TB}'"``)."""
    if _SHELL_PLAIN.fullmatch(word):
        return word
    return '"' + re.sub(r'(["\\`])', r"\\\1", word) + '"'


def format_override(key: str, value: Any) -> str:
    """One override ready for a shell command line: Hydra's quoting (:func:`bridgepack._bridge_keys.override`)
    inside the shell's (:func:`shell_word`): ``"dataset.split='949,50,1'"`` reaches run_recipe.py as
    ``dataset.split='949,50,1'``, which Hydra reads as the string ``949,50,1`` (unquoted: a sweep)."""
    return shell_word(override(key, value))


def _format_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class ReverseTranslation:
    """The result of :func:`bridge_to_mlm_report`: argv tokens plus the keys no flag expresses."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    flags: list[str] = field(default_factory=list)
    untranslated: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """``bridgepack translate bridge-to-mlm --format json``'s document."""
        return {"schema_version": self.SCHEMA_VERSION, "flags": self.flags, "untranslated": self.untranslated}


def bridge_to_mlm_report(overrides: Mapping[str, Any]) -> ReverseTranslation:
    """Map Bridge overrides back to Megatron-LM argv tokens, listing the keys that have no flag.

    The couplings first (:func:`_reverse_couplings`: weight decay, grouped-query attention, seeds, the
    distributed optimizer, the precision preset), then the table: a value flag is written when any of its
    keys is given (a dual mapping needs only one); a switch when every key it sets holds its value; a single
    boolean key holding the opposite value is Megatron-LM's default and needs no flag.
    """
    remaining = dict(overrides)
    out = ReverseTranslation()
    _reverse_couplings(remaining, out)
    for mapping in FLAG_TABLE:
        if not mapping.targets():
            continue  # flags the couplings write (--group-query-attention, virtual pipeline stages)
        if mapping.kind == "value":
            present = [key for key in mapping.keys if key in remaining]
            if present and remaining[present[0]] is None:  # null: the flag is not given
                for key in present:
                    remaining.pop(key)
            elif present:
                out.flags += [mapping.flag, *_flag_values(mapping, remaining[present[0]])]
                for key in present:
                    remaining.pop(key)
        elif _switch_matches(mapping, remaining):
            out.flags.append(mapping.flag)
            for key, _ in mapping.sets:
                remaining.pop(key)
    for mapping in FLAG_TABLE:  # opposite values of single-key boolean switches: the MLM default
        if mapping.kind == "switch" and len(mapping.sets) == 1:
            key, value = mapping.sets[0]
            if isinstance(value, bool) and remaining.get(key) is (not value):
                remaining.pop(key)
    out.untranslated += [f"{key}={_format_value(value)}" for key, value in remaining.items()]
    return out


def _flag_values(mapping: FlagMapping, value: Any) -> list[str]:
    """A flag's value tokens: a multi-value flag's string splits into its values again."""
    if mapping.nargs and isinstance(value, str):
        return value.split()
    if mapping.nargs and isinstance(value, list | tuple):
        return [_format_value(v) for v in value]
    return [_format_value(value)]


#: The precision presets Megatron-LM has a switch for; ``null`` (fp32) needs none.
_PRESET_FLAGS = {BF16_PRESET: "--bf16", FP16_PRESET: "--fp16"}
_WD_KEYS = ("scheduler.start_weight_decay", "scheduler.end_weight_decay")


def _reverse_couplings(remaining: dict[str, Any], out: ReverseTranslation) -> None:
    """The Bridge keys whose Megatron-LM flag depends on other keys (the reverse of :mod:`._model`)."""
    _reverse_weight_decay(remaining, out)
    if "model.num_query_groups" in remaining:
        groups = remaining.pop("model.num_query_groups")
        if groups is not None:
            out.flags += ["--group-query-attention", "--num-query-groups", _format_value(groups)]
    seeds = {key: remaining[key] for key in ("rng.seed", "dataset.random_seed") if key in remaining}
    if len(set(map(repr, seeds.values()))) > 1:
        for key in seeds:
            remaining.pop(key)
        out.untranslated.append(
            f"rng.seed={seeds['rng.seed']} dataset.random_seed={seeds['dataset.random_seed']}"
            "  (Megatron-LM seeds init and data with one --seed)"
        )
    dist_opt = [
        remaining.pop(k)
        for k in ("ddp.use_distributed_optimizer", "optimizer.use_distributed_optimizer")
        if k in remaining
    ]
    if any(v is True for v in dist_opt):  # Bridge ORs the two fields
        out.flags.append("--use-distributed-optimizer")
    if "mixed_precision" in remaining and (remaining["mixed_precision"] is None):
        remaining.pop("mixed_precision")  # fp32: Megatron-LM's default
    elif remaining.get("mixed_precision") in _PRESET_FLAGS:
        out.flags.append(_PRESET_FLAGS[remaining.pop("mixed_precision")])


def _reverse_weight_decay(remaining: dict[str, Any], out: ReverseTranslation) -> None:
    """Bridge trains with scheduler.start/end_weight_decay; Megatron-LM's constant style takes one
    --weight-decay and asserts --start/--end-weight-decay unset (its other styles need both)."""
    style = remaining.get("scheduler.weight_decay_incr_style", "constant")
    if style != "constant" or not any(key in remaining for key in _WD_KEYS):
        if "optimizer.weight_decay" in remaining and not any(key in remaining for key in _WD_KEYS):
            value = remaining.pop("optimizer.weight_decay")
            out.untranslated.append(
                f"optimizer.weight_decay={_format_value(value)}  (Bridge trains with"
                " scheduler.start/end_weight_decay, which this does not set)"
            )
        return
    start = remaining.get(_WD_KEYS[0], remaining.get(_WD_KEYS[1]))
    end = remaining.get(_WD_KEYS[1], start)
    if start != end:
        return  # mapped one to one; Megatron-LM then needs a non-constant --weight-decay-incr-style
    for key in (*_WD_KEYS, "optimizer.weight_decay", "scheduler.weight_decay_incr_style"):
        remaining.pop(key, None)
    out.flags += ["--weight-decay", _format_value(start)]


def _switch_matches(mapping: FlagMapping, remaining: Mapping[str, Any]) -> bool:
    return all(key in remaining and remaining[key] == value for key, value in mapping.sets) and all(
        type(remaining[key]) is type(value) for key, value in mapping.sets
    )


def bridge_to_mlm(overrides: Mapping[str, Any]) -> list[str]:
    """Map Bridge overrides back to Megatron-LM argv tokens (keys without a flag are left out)."""
    return bridge_to_mlm_report(overrides).flags
