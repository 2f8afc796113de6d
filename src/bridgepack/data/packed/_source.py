"""A packed set opened for streaming (Bridge Parquet or a legacy ``.npy``) and what one pass over it gives:
its fingerprints, and the EOS id its sequences end with.

Both formats come out as :class:`~bridgepack.data.packed.PackedBlock` s, so every consumer (``bridgepack
fingerprint``, ``diff``, batch dumps) compares by content, never by format.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from bridgepack.data.packed._legacy_npy import read_legacy_npy
from bridgepack.data.packed._reader import PackedBlock, PackedReader, PackedRow, validate_block
from bridgepack.data.packset import LEGACY_SUFFIX, most_common_last_token
from bridgepack.errors import InputError
from bridgepack.fingerprint import FINGERPRINT_ALGORITHM, Fingerprint, PackedFingerprinter


class PackedSource:
    """A packed set opened for streaming: Bridge Parquet (file, glob, directory) or a legacy ``.npy``.

    Both formats come out as :class:`PackedBlock` s, so every comparison is by content, never by format.
    Blocks are validated as they are read (bridge-format §3); ``strict`` also refuses sequences of 0 stored
    tokens.
    """

    def __init__(self, location: str | os.PathLike[str], *, strict: bool = False) -> None:
        self.location = os.fspath(location)
        self.strict = strict
        self._legacy: PackedBlock | None = None
        self._reader: PackedReader | None = None
        if self.location.lower().endswith(LEGACY_SUFFIX):
            self._legacy = read_legacy_npy(self.location)
        else:
            self._reader = PackedReader(self.location)
        self.paths = [self.location] if self._reader is None else list(self._reader.paths)

    @property
    def num_packs(self) -> int:
        return self._legacy.num_rows if self._reader is None else len(self._reader)  # type: ignore[union-attr]

    def blocks(self, *, hashed: bool = False) -> Iterator[PackedBlock]:
        """Every block in stored order, validated (bridge-format §3 row invariants); with ``hashed`` each
        carries its fingerprint hashes, computed in the validation's pass over the tokens."""
        blocks: Iterable[PackedBlock]
        if self._reader is None:
            assert self._legacy is not None
            blocks = [self._legacy]
        else:
            blocks = self._reader.iter_blocks()
        for block in blocks:
            yield validate_block(block, allow_empty_sequences=not self.strict, hashed=hashed)

    def row(self, index: int) -> PackedRow:
        """Pack ``index`` (global, stored order)."""
        if self._reader is None:
            assert self._legacy is not None
            return self._legacy.row(index)
        return self._reader.row(index)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()


def infer_eos_id(block: PackedBlock) -> int:
    """The EOS id the block's sequences imply (:func:`bridgepack.data.packset.most_common_last_token`: their
    most
    common last stored token)."""
    return most_common_last_token(block.input_ids, block.sequence_starts() + block.sequence_lengths())


def scan_blocks(
    blocks: Iterable[PackedBlock],
    *,
    eos_id: int | None = None,
    keep_sequences: bool = False,
    on_packs: Callable[[int], None] | None = None,
    algorithm: str = FINGERPRINT_ALGORITHM,
) -> PackedFingerprinter:
    """Run the fingerprinter over ``blocks``; ``eos_id=None`` infers it from the first block.

    ``on_packs(n)`` is called after each block with its number of packs (a progress bar's advance).
    """
    fingerprinter: PackedFingerprinter | None = None
    for block in blocks:
        if fingerprinter is None:
            eos = infer_eos_id(block) if eos_id is None else eos_id
            fingerprinter = PackedFingerprinter(
                eos_id=eos, keep_sequences=keep_sequences, algorithm=algorithm
            )
        fingerprinter.update_block(block)
        if on_packs is not None:
            on_packs(block.num_rows)
    if fingerprinter is None:  # pragma: no cover - readers refuse empty files
        raise InputError("no packs to fingerprint")
    return fingerprinter


def fingerprint_packed(
    location: str | os.PathLike[str],
    *,
    on_packs: Callable[[int], None] | None = None,
    algorithm: str = FINGERPRINT_ALGORITHM,
) -> Fingerprint:
    """Both fingerprints of a packed set (Parquet file/glob/directory or legacy ``.npy``), streamed;
    ``algorithm`` one of :data:`bridgepack.fingerprint.CHECKABLE_ALGORITHMS` (a record's, to check it)."""
    source = PackedSource(location)
    try:
        # The fingerprints do not depend on the EOS id (only the diff's mask kinds do): skip inferring it.
        return scan_blocks(source.blocks(), eos_id=-1, on_packs=on_packs, algorithm=algorithm).result()
    finally:
        source.close()
