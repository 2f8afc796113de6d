"""List columns of an Arrow table as packable sources, and the packed record batches built from them.

A source keeps, per physical row, the chunk that holds it and where its values start in that chunk's
values buffer (offsets are read, values never are); building a batch copies the fragments' runs once
into fresh buffers and wraps them in list arrays of the input's list type, as TRL's ``_pack_bfd`` does
(``type(column).from_arrays(offsets, values)``)::

    input_ids  chunk 0 [[1 2 3] [4 5]]  chunk 1 [[6] [7 8 9 10]]      seq_length 4, bfd
    packs      [[7 8 9 10] [1 2 3 6] [4 5]]     seq_lengths [[4] [3 1] [2]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from bridgepack._arrow import list_array, numpy_array
from bridgepack.trl._fragments import Fragments
from bridgepack.trl._gather import copy_runs, run_indices, spanning_view

IntArray = npt.NDArray[np.int64]

#: Tokens per output record batch at most: bounds the memory of one batch and keeps int32 offsets safe.
MAX_BATCH_TOKENS = 1 << 26


@dataclass(frozen=True)
class Source:
    """One list column: where each physical row's values start, and the values themselves.

    When the chunks hold plain numbers without nulls, ``view`` spans their value buffers (see
    :func:`spanning_view`; ``keep`` holds the chunks so the memory stays alive) and runs are copied by
    :func:`copy_runs`; otherwise ``values`` holds all chunks' values as one Arrow array, gathered with
    Arrow ``take``. ``starts`` index into whichever of the two is set.
    """

    name: str
    large: bool
    starts: IntArray
    view: np.ndarray | None
    values: pa.Array | None
    keep: tuple[pa.Array, ...] = ()

    def gather(
        self, rows: IntArray, skips: IntArray, lengths: IntArray, scratch: dict[str, np.ndarray] | None
    ) -> pa.Array:
        """The values of the runs ``(rows, skips, lengths)``, end to end; in ``scratch[name]`` (grown when
        too small, then reused) when ``scratch`` is given, else in a fresh buffer."""
        starts = self.starts[rows] + skips
        if self.view is None:
            assert self.values is not None
            return self.values.take(numpy_array(run_indices(starts, lengths)))
        size = int(lengths.sum())
        out = None if scratch is None else scratch.get(self.name)
        if out is None or out.shape[0] < size:
            out = np.empty(size, dtype=self.view.dtype)
            if scratch is not None:
                scratch[self.name] = out
        copy_runs(self.view, starts, lengths, out)
        return numpy_array(out[:size])

    def iovecs(self, rows: IntArray, skips: IntArray, lengths: IntArray) -> npt.NDArray[np.uint64]:
        """The runs ``(rows, skips, lengths)`` as ``struct iovec`` rows ``(address, bytes)``, empty runs left
        out: what :func:`bridgepack.trl._direct.write_stream` hands to ``pwritev``. Needs ``view``."""
        assert self.view is not None
        size = self.view.dtype.itemsize
        keep = lengths > 0
        out = np.empty((int(keep.sum()), 2), dtype=np.uint64)
        out[:, 0] = self.view.ctypes.data + (self.starts[rows[keep]] + skips[keep]) * size
        out[:, 1] = lengths[keep] * size
        return out


def _is_copyable(values: pa.Array) -> bool:
    """Plain numbers without nulls: their buffer is a numpy array, zero-copy."""
    kind = values.type
    return (pa.types.is_integer(kind) or pa.types.is_floating(kind)) and values.null_count == 0


def read_sources(table: pa.Table) -> tuple[list[Source], IntArray]:
    """Sources of every column of ``table`` and the tokens of each physical row.

    Errors as TRL's ``_check_if_columns_can_be_packed``: ``TypeError`` for a column that is not a list,
    ``ValueError`` when two columns disagree on a row's length. A null row counts as empty (TRL drops it).
    """
    if table.num_columns == 0:
        raise ValueError("Packing needs at least one list column; the dataset has none.")
    sources: list[Source] = []
    lengths: IntArray | None = None
    for name, column in zip(table.column_names, table.columns, strict=True):
        if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
            raise TypeError(
                f"Packing requires all columns to be lists of lists; column {name!r} is {column.type}."
            )
        if name == TOKEN_IDS:
            _check_token_ids(column)
        source, column_lengths = _read_column(name, column)
        if lengths is None:
            lengths = column_lengths
        elif not np.array_equal(lengths, column_lengths):
            row = int(np.flatnonzero(lengths != column_lengths)[0])
            raise ValueError(
                f"All columns must have values of the same length; row {row}: column "
                f"{table.column_names[0]!r} has {int(lengths[row])}, {name!r} has {int(column_lengths[row])}."
            )
        sources.append(source)
    assert lengths is not None
    return sources, lengths


#: The column that holds token ids: integers only (``bridgepack pack`` refuses floats and booleans in it; TRL
#: would pack a float column as floats, and a model's embedding fail on it or read truncated ids).
TOKEN_IDS = "input_ids"


def _check_token_ids(column: pa.ChunkedArray) -> None:
    kind = column.type.value_type
    if pa.types.is_integer(kind):
        return
    flat = pa.chunked_array([chunk.flatten() for chunk in column.chunks], type=kind)
    first = next((value for value in flat.to_pylist()[:1]), None)
    rows = [i for i, value in enumerate(column.to_pylist()) if value]
    example = "" if first is None else f" (row {rows[0]}: {first!r})"
    raise TypeError(f"column {TOKEN_IDS!r}: expected integer token ids, found {kind} values{example}")


def _read_column(name: str, column: pa.ChunkedArray) -> tuple[Source, IntArray]:
    chunks = [chunk for chunk in column.chunks if len(chunk)] or [pa.array([], type=column.type)]
    starts, lengths = [], []
    for chunk in chunks:
        offsets = chunk.offsets.to_numpy().astype(np.int64)
        size = np.diff(offsets)
        if chunk.null_count:
            size[chunk.is_null().to_numpy(zero_copy_only=False)] = 0
        starts.append(offsets[:-1])
        lengths.append(size)
    values = [chunk.values for chunk in chunks]
    rows_per_chunk = [len(chunk) for chunk in chunks]
    large = pa.types.is_large_list(column.type)
    spanned = None
    if all(_is_copyable(v) for v in values) and len({v.type for v in values}) == 1:
        spanned = spanning_view(values)
    if spanned is not None:
        view, bases = spanned
        row_starts = np.concatenate(starts) + np.repeat(bases, rows_per_chunk)
        source = Source(name, large, row_starts, view, None, tuple(values))
    else:
        bases = np.cumsum([0] + [len(v) for v in values[:-1]])
        row_starts = np.concatenate(starts) + np.repeat(bases, rows_per_chunk)
        source = Source(name, large, row_starts, None, pa.concat_arrays(values))
    return source, np.concatenate(lengths)


@dataclass(frozen=True)
class PackedBatches:
    """The packs cut into record batches: batch ``b`` holds packs ``bounds[b] .. bounds[b + 1]``.

    Each batch is built on its own (:meth:`build`), so batches can be built on threads and written while
    the next ones are built; the bounds keep at most ``rows_per_batch`` packs and
    :data:`MAX_BATCH_TOKENS` tokens in a batch (at least one pack).
    """

    sources: list[Source]
    fragments: Fragments
    rows: IntArray  # the fragments' physical rows (the indices mapping applied)
    pack_tokens: IntArray  # token position where each pack starts, and the total at the end
    bounds: IntArray
    seq_lengths: bool

    def __len__(self) -> int:
        return len(self.bounds) - 1

    @property
    def copyable(self) -> bool:
        """Every column's values are plain numbers one view spans: what :meth:`outline` needs."""
        return all(source.view is not None for source in self.sources)

    def build(self, batch: int, scratch: dict[str, np.ndarray] | None = None) -> pa.RecordBatch:
        """Record batch ``batch``; its token values in ``scratch``'s buffers when given (see
        :meth:`Source.gather`), so the batch is only valid until the same scratch is used again."""
        rows, skips, lengths = self._runs(batch)
        return self._assemble(batch, [s.gather(rows, skips, lengths, scratch) for s in self.sources])

    def outline(
        self, batch: int, placeholders: list[np.ndarray]
    ) -> tuple[pa.RecordBatch, list[npt.NDArray[np.uint64]]]:
        """Record batch ``batch`` with stand-in token values, and each column's runs as iovecs (see
        :meth:`Source.iovecs`): the batch has the built one's layout, and its values are
        ``placeholders[c]``'s first elements (never read; see :mod:`bridgepack.trl._direct`). Needs
        :attr:`copyable`."""
        rows, skips, lengths = self._runs(batch)
        size = int(lengths.sum())
        values = [numpy_array(stand_in[:size]) for stand_in in placeholders]
        iovecs = [source.iovecs(rows, skips, lengths) for source in self.sources]
        return self._assemble(batch, values), iovecs

    def max_batch_tokens(self) -> int:
        """The most tokens one batch holds (what a placeholder must cover)."""
        return int(np.diff(self.pack_tokens[self.bounds]).max(initial=0))

    def _runs(self, batch: int) -> tuple[IntArray, IntArray, IntArray]:
        """The fragments of batch ``batch``: physical rows, skips, lengths."""
        offsets = self.fragments.pack_offsets
        part = slice(int(offsets[self.bounds[batch]]), int(offsets[self.bounds[batch + 1]]))
        return self.rows[part], self.fragments.skips[part], self.fragments.lengths[part]

    def _assemble(self, batch: int, values: list[pa.Array]) -> pa.RecordBatch:
        """Batch ``batch`` from each column's token values, end to end."""
        p0, p1 = int(self.bounds[batch]), int(self.bounds[batch + 1])
        offsets = self.fragments.pack_offsets
        part = slice(int(offsets[p0]), int(offsets[p1]))
        token_offsets = self.pack_tokens[p0 : p1 + 1] - self.pack_tokens[p0]
        arrays = [
            list_array(token_offsets, column, large=source.large)
            for source, column in zip(self.sources, values, strict=True)
        ]
        names = [s.name for s in self.sources]
        if self.seq_lengths:
            pack_offsets = offsets[p0 : p1 + 1] - part.start
            arrays.append(_seq_lengths(self.sources[0].large, pack_offsets, self.fragments.lengths[part]))
            names.append("seq_lengths")
        return pa.RecordBatch.from_arrays(arrays, names=names)


def packed_batches(
    sources: list[Source],
    fragments: Fragments,
    physical: IntArray | None,
    rows_per_batch: int,
    seq_lengths: bool,
) -> PackedBatches:
    """The packs as record batches of at most ``rows_per_batch`` packs (and :data:`MAX_BATCH_TOKENS`).

    ``physical`` maps the dataset's rows to table rows (a ``datasets`` indices mapping) when given.
    """
    rows = fragments.rows if physical is None else physical[fragments.rows]
    token_ends = np.concatenate([[0], np.cumsum(fragments.lengths)])
    pack_tokens = token_ends[fragments.pack_offsets]
    bounds = [0]
    while bounds[-1] < fragments.num_packs:
        p0 = bounds[-1]
        limit = np.searchsorted(pack_tokens, pack_tokens[p0] + MAX_BATCH_TOKENS, side="right") - 1
        bounds.append(max(p0 + 1, min(p0 + rows_per_batch, int(limit), fragments.num_packs)))
    return PackedBatches(
        sources, fragments, rows, pack_tokens, np.asarray(bounds, dtype=np.int64), seq_lengths
    )


def empty_batch(table: pa.Table, strategy: str, sources: list[Source]) -> pa.RecordBatch:
    """No packs: the input's columns, empty, plus an empty ``seq_lengths`` for the bfd strategies."""
    arrays = [pa.array([], type=table.schema.field(s.name).type) for s in sources]
    names = [s.name for s in sources]
    if strategy != "wrapped":
        arrays.append(pa.array([], type=pa.list_(pa.int64() if sources[0].large else pa.int32())))
        names.append("seq_lengths")
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _seq_lengths(large: bool, offsets: IntArray, lengths: IntArray) -> pa.Array:
    """TRL's ``seq_lengths``: a list<int32> of ``list_value_length`` values (int64 for large lists)."""
    return list_array(offsets, numpy_array(lengths, np.int64 if large else np.int32))
