"""The one shape of a command's result as JSON: a document that carries its own schema version.

Every ``bridgepack`` command with ``--format json`` prints what its library result's ``to_dict()`` returns,
nothing added or dropped (the CLI's ``emit_json`` only serialises), so a Python caller that saves
``result.to_dict()`` holds the same document the command prints. The version lives on the result's class
(``SCHEMA_VERSION``), beside the ``to_dict`` whose shape it versions, and is the document's first key
``schema_version``; a change of keys or meanings raises it.

This module sits in the lowest layer (it imports nothing of bridgepack), so a result of any package can
satisfy :class:`JsonResult` -- structurally, without importing it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

__all__ = ["JsonResult"]


@runtime_checkable
class JsonResult(Protocol):
    """A result that is one JSON document: ``to_dict()`` with ``{"schema_version": SCHEMA_VERSION}`` first."""

    #: The version of :meth:`to_dict`'s document, raised when its keys or their meaning change.
    SCHEMA_VERSION: ClassVar[int]

    def to_dict(self) -> dict[str, Any]:
        """The whole document: ``schema_version`` first, then plain JSON values (numpy scalars allowed)."""
        ...
