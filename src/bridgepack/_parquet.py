"""Every Parquet file bridgepack reads is opened here, so that every reader verifies page checksums and words
a
damaged file the same way.

``bridgepack pack`` writes a CRC-32 in every page header (:mod:`bridgepack.data.pipeline._row_groups`);
pyarrow
checks them only when asked, and a reader that does not ask decodes a flipped byte into another token id (a
byte flipped at offset 5000 of a packed file read as id 18346451021070591, and ``inspect`` passed it).
Pages written without a checksum (other tools, older bridgepack) are read as before.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bridgepack.errors import InputError

#: What a page that fails its checksum is called in every message.
BAD_CHECKSUM = "a data page fails its checksum: the file changed after it was written"


def open_parquet(path: str | os.PathLike[str], *, memory_map: bool = False) -> pq.ParquetFile:
    """``path`` opened with page checksums verified on every read; an :class:`InputError` if it is not
    Parquet."""
    try:
        return pq.ParquetFile(path, memory_map=memory_map, page_checksum_verification=True)
    except (pa.ArrowException, OSError, ValueError) as exc:  # ValueError: undecodable column names
        raise InputError(f"{os.fspath(path)}: cannot read as Parquet ({exc})") from None


def damage(exc: BaseException) -> str:
    """Why pyarrow could not decode data, in the words every reader uses."""
    text = str(exc)
    return BAD_CHECKSUM if "CRC" in text or "checksum" in text else f"cannot be decoded: {text}"


def read_row_group(
    handle: pq.ParquetFile, path: str | os.PathLike[str], group: int, columns: list[str] | None = None
) -> pa.Table:
    """Row group ``group``, checked; an :class:`InputError` naming the file and the group if damaged."""
    try:
        return handle.read_row_group(group, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{os.fspath(path)}: row group {group} is damaged ({damage(exc)})") from None


def read_table(path: str | os.PathLike[str], **kwargs: Any) -> pa.Table:
    """A whole (small) Parquet file, checked like :func:`read_row_group`."""
    handle = open_parquet(path)
    try:
        return handle.read(**kwargs)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{os.fspath(path)}: damaged ({damage(exc)})") from None
