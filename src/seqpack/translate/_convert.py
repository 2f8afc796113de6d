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

from seqpack.errors import UsageError, shown
from seqpack.translate._table import (
    BY_FLAG,
    FLAG_TABLE,
    FLOAT_FLAGS,
    INT_FLAGS,
    NO_BRIDGE_EQUIVALENT,
    FlagMapping,
    Scalar,
)

#: The reason given for a flag that is neither in the table nor known to lack a Bridge field.
UNKNOWN_FLAG_REASON = "not in seqpack's flag table; find the Bridge field by hand"

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

    ``overrides``: Bridge key -> value, in table-walk order of the input flags.
    ``untranslated``: the input flags (with their value, as given) that have no mapping.
    ``reasons``: flag -> why it is untranslated.
    ``origin``: Bridge key -> the flag that set it.
    ``conflicts``: human-readable lines for keys two flags set to different values (the last one wins,
    as in Megatron-LM's argparse).
    """

    #: Version of :meth:`to_dict`'s document (:class:`seqpack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    overrides: dict[str, Scalar] = field(default_factory=dict)
    untranslated: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)

    def reason(self, untranslated: str) -> str:
        """Why an entry of :attr:`untranslated` (``"--flag value"``) has no Bridge override."""
        return self.reasons[untranslated.split(" ", 1)[0]]

    def to_dict(self) -> dict[str, Any]:
        """``seqpack translate mlm-to-bridge --format json``'s document: the overrides as command-line
        text (:func:`format_override`), the conflicts, and each untranslated flag with its reason."""
        return {
            "schema_version": self.SCHEMA_VERSION,
            "overrides": [format_override(key, value) for key, value in self.overrides.items()],
            "conflicts": self.conflicts,
            "untranslated": [{"flag": item, "reason": self.reason(item)} for item in self.untranslated],
        }


def _flag_items(flags: Sequence[str] | Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Normalise argv tokens or a ``MODEL_ARGS`` mapping to ``(flag, value)`` pairs (``True`` = switch)."""
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
        mapping = BY_FLAG.get(token)
        takes_value = (
            mapping.kind == "value"
            if mapping is not None
            else i + 1 < len(tokens) and not tokens[i + 1].startswith("--")
        )
        if takes_value:
            if i + 1 >= len(tokens):
                raise UsageError(f"Megatron-LM arguments: flag {token} expects a value")
            items.append((token, tokens[i + 1]))
            i += 2
        else:
            items.append((token, True))
            i += 1
    return items


def _render_untranslated(flag: str, value: Any) -> str:
    return flag if value is True else f"{flag} {value}"


def mlm_to_bridge(flags: Sequence[str] | Mapping[str, Any]) -> Translation:
    """Map Megatron-LM flags (argv tokens, or a ``MODEL_ARGS`` mapping) to Bridge overrides."""
    result = Translation()
    for flag, raw in _flag_items(flags):
        mapping = BY_FLAG.get(flag)
        if mapping is None:
            if raw is False:
                continue  # a switch written as "--flag: false" in MODEL_ARGS is simply not passed
            result.untranslated.append(_render_untranslated(flag, raw))
            result.reasons[flag] = NO_BRIDGE_EQUIVALENT.get(flag, UNKNOWN_FLAG_REASON)
            continue
        if mapping.kind == "switch":
            if raw is False:
                continue
            if raw is not True:
                raise UsageError(
                    f"Megatron-LM flag {flag} is a switch and takes no value, found {shown(raw)}"
                )
            pairs: Iterable[tuple[str, Scalar]] = mapping.sets
        else:
            if isinstance(raw, bool):
                raise UsageError(f"Megatron-LM flag {flag} expects a value, found {shown(raw)}")
            value = _typed(flag, parse_scalar(raw) if isinstance(raw, str) else raw)
            pairs = [(key, value) for key in mapping.keys]
        for key, value in pairs:
            if key in result.overrides and result.overrides[key] != value:
                result.conflicts.append(
                    f"{key}: {result.origin[key]} sets {result.overrides[key]!r}, {flag} sets {value!r}"
                )
            result.overrides[key] = value
            result.origin[key] = flag
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


#: Characters that end an unquoted value in the Hydra override grammar run_recipe parses (a comma makes a
#: sweep, brackets a list, ...); values holding one are written quoted.
_HYDRA_SPECIAL = frozenset(" \t,[]{}()='\"\\")


def format_override(key: str, value: Any) -> str:
    """One override ready for a shell command line: ``key=value``, or ``key="'value'"`` when the value needs
    Hydra quoting (``dataset.split="'949,50,1'"``: the shell drops the double quotes, Hydra the single ones).
    ``${VAR}`` stays as written so the shell expands it."""
    text = _format_value(value)
    if isinstance(value, str) and (not text or any(ch in _HYDRA_SPECIAL for ch in text)):
        escaped = text.replace("'", "\\'").replace('"', '\\"')
        return f"{key}=\"'{escaped}'\""
    return f"{key}={text}"


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class ReverseTranslation:
    """The result of :func:`bridge_to_mlm_report`: argv tokens plus the keys no flag expresses."""

    #: Version of :meth:`to_dict`'s document (:class:`seqpack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    flags: list[str] = field(default_factory=list)
    untranslated: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """``seqpack translate bridge-to-mlm --format json``'s document."""
        return {"schema_version": self.SCHEMA_VERSION, "flags": self.flags, "untranslated": self.untranslated}


def bridge_to_mlm_report(overrides: Mapping[str, Any]) -> ReverseTranslation:
    """Map Bridge overrides back to Megatron-LM argv tokens, listing the keys that have no flag.

    A value flag is written when any of its keys is given (a dual mapping needs only one). A switch is
    written when every key it sets holds its value; a single boolean key holding the opposite value is
    Megatron-LM's default and needs no flag.
    """
    remaining = dict(overrides)
    out = ReverseTranslation()
    for mapping in FLAG_TABLE:
        if mapping.kind == "value":
            present = [key for key in mapping.keys if key in remaining]
            if present:
                out.flags += [mapping.flag, _format_value(remaining[present[0]])]
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
    out.untranslated = [f"{key}={_format_value(value)}" for key, value in remaining.items()]
    return out


def _switch_matches(mapping: FlagMapping, remaining: Mapping[str, Any]) -> bool:
    return all(key in remaining and remaining[key] == value for key, value in mapping.sets) and all(
        type(remaining[key]) is type(value) for key, value in mapping.sets
    )


def bridge_to_mlm(overrides: Mapping[str, Any]) -> list[str]:
    """Map Bridge overrides back to Megatron-LM argv tokens (keys without a flag are left out)."""
    return bridge_to_mlm_report(overrides).flags
