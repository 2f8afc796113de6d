"""Entry point of ``bridgepack diff``: two packed sets or two batch dumps, never one of each."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from bridgepack.data.packset import check_eos_id
from bridgepack.diff._batch_diff import diff_batches, is_batch_dump
from bridgepack.diff._packed_diff import diff_packed
from bridgepack.errors import UsageError


@dataclass(frozen=True)
class DiffReport:
    """A :func:`diff_paths` report as ``bridgepack diff --format json`` prints it."""

    #: Version of :meth:`to_dict`'s document (:class:`bridgepack.results.JsonResult`).
    SCHEMA_VERSION: ClassVar[int] = 1

    #: What :func:`diff_paths` returned (``kind`` ``packed`` or ``batches``, ``identical``, ...).
    report: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """``bridgepack diff --format json``'s document: the report with ``schema_version`` first."""
        return {"schema_version": self.SCHEMA_VERSION, **self.report}


def diff_paths(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str],
    *,
    eos_id: int | None = None,
    on_packs: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Compare ``a`` with ``b``: two batch dumps (``.npz``) or two packed sets (Parquet or legacy ``.npy``,
    mixed freely: they compare by content)."""
    check_eos_id(eos_id)
    sa, sb = os.fspath(a), os.fspath(b)
    dump_a, dump_b = is_batch_dump(sa), is_batch_dump(sb)
    if dump_a != dump_b:
        raise UsageError(f"{sa if dump_a else sb}: a batch dump (.npz) compares only with another batch dump")
    if dump_a:
        return diff_batches(sa, sb, eos_id=eos_id)
    return diff_packed(sa, sb, eos_id=eos_id, on_packs=on_packs)
