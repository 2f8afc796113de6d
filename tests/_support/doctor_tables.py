"""The generated tables of ``docs/doctor.md``, each between two marker lines: the rules (from the one rule
catalog, ``bridgepack.doctor.rules_markdown``) and the defect survey (``_defect_survey.survey_markdown``).
Tests hold the page to them; after a rule or a survey entry changes,

    python tests/_support/doctor_tables.py        # rewrites both tables in place

brings the page back.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"


def tables() -> dict[str, Callable[[], str]]:
    """Each table's marker name -> the function that writes it."""
    from bridgepack.doctor import rules_markdown
    from bridgepack.doctor._defect_survey import survey_markdown

    return {"rules": rules_markdown, "survey": survey_markdown}


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name} table: start -->\n", f"<!-- {name} table: end -->"


def shown(text: str, name: str) -> str:
    """The table ``text`` carries between ``name``'s markers."""
    begin, end = markers(name)
    return text.split(begin, 1)[1].split(end, 1)[0]


def rendered(text: str) -> str:
    """``text`` with every generated table as the code writes it now."""
    for name, write in tables().items():
        begin, end = markers(name)
        before, rest = text.split(begin, 1)
        _, after = rest.split(end, 1)
        text = before + begin + write() + end + after
    return text


def main() -> int:
    text = DOC.read_text(encoding="utf-8")
    new = rendered(text)
    if new != text:
        DOC.write_text(new, encoding="utf-8")
        print(f"rewrote {DOC.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
