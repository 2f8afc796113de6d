"""docs/translate.md's per-row table, generated from the flag table so the page cannot drift from the code.

Each row says what the flag writes and whether the resolved-config test (Megatron-LM's argparse and
``validate_args`` against Bridge's recipe, overrides and ``finalize()``) proves it, or why it does not.
"""

from __future__ import annotations

from bridgepack.translate._table import FLAG_TABLE, NO_BRIDGE_EQUIVALENT, NOT_PROVEN, FlagMapping


def _writes(mapping: FlagMapping) -> str:
    if mapping.kind == "value":
        return " ".join(mapping.keys)
    return " ".join(
        f"{key}={str(value).lower() if isinstance(value, bool) else value}" for key, value in mapping.sets
    )


def rows_markdown() -> str:
    """The page's section under ``## The table``: every row with its proof status, then the refused flags."""
    lines = ["| Megatron-LM flag | kind | Bridge override(s) | resolved-config test |", "|---|---|---|---|"]
    for m in FLAG_TABLE:
        status = f"not proven: {NOT_PROVEN[m.flag]}" if m.flag in NOT_PROVEN else "proven"
        lines.append(f"| `{m.flag}` | {m.kind} | `{_writes(m)}` | {status} |")
    lines += ["", "| flag | why there is no mapping |", "|---|---|"]
    lines += [f"| `{flag}` | {why} |" for flag, why in NO_BRIDGE_EQUIVALENT.items()]
    return "\n".join(lines) + "\n"
