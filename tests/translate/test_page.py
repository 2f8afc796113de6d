"""docs/translate.md's per-row table is the generator's output (``bridgepack.translate._page``), so every
row's
proof status on the page is the code's."""

from __future__ import annotations

from pathlib import Path

from bridgepack.translate._page import rows_markdown

PAGE = Path(__file__).resolve().parents[2] / "docs" / "translate.md"


def test_the_page_table_is_generated_from_the_model() -> None:
    text = PAGE.read_text()
    section = text[text.index("## The table\n") :]
    table = section[section.index("| Megatron-LM flag |") :]
    end = table.find("\n## ")
    assert (table if end < 0 else table[: end + 1]).rstrip("\n") + "\n" == rows_markdown()
