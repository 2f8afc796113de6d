"""The record's ``input_sha256``: a digest of each input's bytes, combined in input order.

Apart from the passes because both ways of running a pack compute it, in two levels so that they agree:
the local pipeline hashes every input on a background thread beside its passes; the sharded run's slices
each hash their own inputs (:class:`BackgroundHash` on the worker) and the driver only combines.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path

from bridgepack.errors import InputError


class BackgroundHash:
    """:func:`input_digest` of each input on a daemon thread (hashlib releases the GIL), overlapping with
    the passes. A daemon thread never delays the exit of a failed or interrupted run.
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        self._result: list[list[str] | BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(paths,), daemon=True, name="bridgepack-hash")
        self._thread.start()

    def _run(self, paths: Sequence[Path]) -> None:
        try:
            self._result.append([input_digest(path) for path in paths])
        except BaseException as exc:  # reported by digests()
            self._result.append(exc)

    def digests(self) -> list[str]:
        """Each input's digest, in the order given."""
        self._thread.join()
        value = self._result[0]
        if isinstance(value, BaseException):
            raise InputError(f"cannot hash the inputs ({value})")
        return value

    def result(self) -> str:
        return combine_input_digests(self.digests())


def input_digest(path: Path) -> str:
    """SHA-256 of one input's bytes (a directory: its files', sorted, one stream)."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        with open(file, "rb") as handle:
            for block in iter(lambda h=handle: h.read(1 << 20), b""):  # type: ignore[misc]
                digest.update(block)
    return digest.hexdigest()


def combine_input_digests(digests: Sequence[str]) -> str:
    """The record's ``input_sha256``: SHA-256 over the inputs' own digests in input order. Two levels, so
    that the ray engine's workers hash their own files and the driver only combines (the same value as
    the local pack of the same inputs)."""
    return hashlib.sha256(b"".join(bytes.fromhex(d) for d in digests)).hexdigest()
