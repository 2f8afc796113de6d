"""The one way bridgepack makes a rich console: every string printed literally.

Messages hold user text -- paths, field names, values, run names -- and rich would read it as markup
(``[red]``, ``[/x]``: styled or dropped) and as emoji codes (``b.jsonl:100: malformed JSON`` printed as
``b.jsonl💯 malformed JSON``; a file named ``:smile:.log`` as a face), on a terminal and off it alike. So no
console here parses markup or emoji codes, nor highlights; where bridgepack itself wants a style it builds a
:class:`~rich.text.Text` from plain pieces (:func:`styled`), which never parses anything::

    styled(("error:", "bold red"), " b.jsonl:100: [x] :smile:")  ->  error: b.jsonl:100: [x] :smile:
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text


def literal_console(*, stderr: bool = False, **kwargs: Any) -> Console:
    """A rich console that prints strings as they are (no markup, no emoji codes, no highlighting)."""
    return Console(stderr=stderr, markup=False, emoji=False, highlight=False, **kwargs)


def styled(*parts: str | tuple[str, str]) -> Text:
    """Plain strings and ``(text, style)`` pairs joined into one :class:`Text`; nothing in them is parsed."""
    return Text.assemble(*parts)
