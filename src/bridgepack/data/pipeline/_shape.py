"""Too-long handling and CP/SP pre-padding of stored examples (bridge-format §2), vectorised per chunk.

Lengths here are *runtime* lengths ``r = stored - 1``. With pad multiple ``m`` and max length ``max``::

    cap    = floor(max / m) * m                   (the longest runtime length a sample may keep)
    target = ceil(r / m) * m                      (pad input_ids with EOS and loss_mask with 0)

m = 8, max = 16, EOS = 2: stored ``[5 6 7 2]`` (r = 3) -> ``[5 6 7 2 2 2 2 2 2]`` (r = 8, mask tail 0).

A sample with ``r > cap`` is too long. bridgepack's own modes (``--too-long``):

* ``reject``   - not packed; listed in the rejects file;
* ``truncate`` - keep the head, ``cap`` tokens, then the sample's own last token (its EOS), a target only
  when the cut falls inside a trained span (a chat cut in a user turn must not learn to stop there):
  ``[u u a a a EOS]`` mask ``[0 0 1 1 1 1]``, cap 3 -> ``[u u a EOS]`` ``[0 0 1 1]``; cap 1 ->
  ``[u u EOS]`` ``[0 0 0]``;
* ``split``    - cut into pieces of ``cap`` runtime tokens that overlap by one stored token, so every
  (input, label) pair of the sample is trained on exactly once: stored ``[a b c d e 2]``, cap 2 ->
  ``[a b c] [c d e] [e 2]``; each piece keeps its own slice of the mask.

``--bridge-compat`` reproduces Bridge 0.6.2 instead: with m = 1 a long sample is dropped (its histogram
skips it); with m > 1 every sample is cut or padded to ``min(cap, target) + 1`` stored tokens (so long ones
lose their tail, EOS included).

The Hugging Face layout (``counts_stored``) counts *stored* tokens instead (``r = stored``): HF models shift
the labels inside the model, so a row holds every stored token. The same rules apply to that count; a
``split`` piece then holds ``cap`` stored tokens and still overlaps the next by one: cap 3 ->
``[a b c] [c d e] [e 2]``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numba
import numpy as np

from bridgepack.errors import UsageError, param
from bridgepack.packing import MAX_PAD_MULTIPLE


class TooLong(enum.Enum):
    """What to do with a sample whose runtime length exceeds the cap."""

    reject = "reject"
    truncate = "truncate"
    split = "split"


class Action(enum.IntEnum):
    """What happened to a sample (recorded per sample; everything but ``kept`` goes to the rejects file)."""

    kept = 0
    rejected = 1
    truncated = 2
    split = 3
    dropped = 4  # compat, m = 1: Bridge's histogram skips it


@dataclass(frozen=True)
class Shaping:
    """How pass 1 shapes every stored example before it reaches the scratch store."""

    max_seq_length: int
    pad_multiple: int
    eos_id: int
    too_long: TooLong = TooLong.reject
    bridge_compat: bool = False
    counts_stored: bool = False  # HF layout: lengths count stored tokens, not stored - 1

    @property
    def cap(self) -> int:
        """``floor(max / m) * m``: the longest counted length a packed sample keeps (bridge-format §2)."""
        return (self.max_seq_length // self.pad_multiple) * self.pad_multiple

    @property
    def shift(self) -> int:
        """Stored tokens minus counted tokens: 1 (Bridge's runtime length), 0 (HF layout)."""
        return 0 if self.counts_stored else 1

    def counted(self, stored: np.ndarray) -> np.ndarray:
        """The length the cap, the pad multiple and the pack size apply to."""
        return stored - self.shift


def check_lengths(max_seq_length: int, pad_multiple: int) -> None:
    """Usage errors of bridge-format §2: ``m >= 1``, ``m <= max`` (else the cap is 0); and bridgepack's bound
    :data:`~bridgepack.packing.MAX_PAD_MULTIPLE` (padding is materialised, so it is checked before
    reading)."""
    if pad_multiple < 1:
        raise UsageError(f"{param('pad_seq_to_mult')} must be >= 1, got {pad_multiple}")
    if pad_multiple > MAX_PAD_MULTIPLE:
        raise UsageError(
            f"{param('pad_seq_to_mult')} {pad_multiple} is larger than {MAX_PAD_MULTIPLE}, the largest "
            "pre-padding multiple bridgepack writes (2 x CP x TP of up to 32768 GPUs)"
        )
    if max_seq_length < 1:
        raise UsageError(f"{param('max_seq_length')} must be >= 1, got {max_seq_length}")
    if pad_multiple > max_seq_length:
        raise UsageError(
            f"{param('pad_seq_to_mult')} {pad_multiple} is larger than the max sequence length "
            f"{max_seq_length}"
        )


@dataclass
class Shaped:
    """A chunk after shaping: the pieces to store and, per input sample, what was done to it."""

    tokens: np.ndarray
    mask: np.ndarray
    lengths: np.ndarray  # stored length of each piece
    actions: np.ndarray  # int8 Action per input sample
    pieces: np.ndarray  # int64 number of pieces per input sample (0 when not packed)


def shape(tokens: np.ndarray, mask: np.ndarray, lengths: np.ndarray, spec: Shaping) -> Shaped:
    """Apply the too-long rule and pre-padding to a chunk of stored examples."""
    m, cap, shift = spec.pad_multiple, spec.cap, spec.shift
    runtime = spec.counted(lengths)
    long = runtime > cap
    # A split piece holds ``span`` stored tokens; the next starts ``span - 1`` later (one token overlaps).
    span = cap + shift
    if m == 1 and not long.any():  # the common case: every sample stored as it came, nothing to copy
        kept = np.full(len(lengths), Action.kept, dtype=np.int8)
        return Shaped(tokens, mask, lengths, kept, np.ones(len(lengths), dtype=np.int64))
    starts = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lengths)[:-1]])
    actions = np.zeros(len(lengths), dtype=np.int8)
    pieces = np.ones(len(lengths), dtype=np.int64)
    copy_len = lengths.copy()
    if spec.bridge_compat:
        if m == 1:
            actions[long] = Action.dropped
            pieces[long] = 0
        else:
            actions[long] = Action.truncated
            copy_len = np.minimum(lengths, np.minimum(cap, _ceil_to(runtime, m)) + 1)
    elif spec.too_long is TooLong.reject:
        actions[long] = Action.rejected
        pieces[long] = 0
    elif spec.too_long is TooLong.truncate:
        actions[long] = Action.truncated
    else:
        actions[long] = Action.split
        pieces[long] = -(-(lengths[long] - 1) // (span - 1))
    # One row per stored piece.
    sample = np.repeat(np.arange(len(lengths)), pieces)
    first_piece = np.cumsum(pieces) - pieces
    k = np.arange(len(sample), dtype=np.int64) - first_piece[sample]
    src = starts[sample] + k * (span - 1)
    n_copy = copy_len[sample]
    append_last = np.full(len(sample), -1, dtype=np.int64)
    is_long = long[sample]
    if not spec.bridge_compat and spec.too_long is TooLong.split:
        n_copy = np.where(is_long, np.minimum(span, lengths[sample] - k * (span - 1)), n_copy)
    elif not spec.bridge_compat and spec.too_long is TooLong.truncate:
        n_copy = np.where(is_long, span - 1, n_copy)
        append_last = np.where(is_long, starts[sample] + lengths[sample] - 1, -1)
    piece_runtime = n_copy + (append_last >= 0) - shift
    out_len = (
        np.minimum(_ceil_to(piece_runtime, m), cap if spec.bridge_compat else np.iinfo(np.int64).max) + shift
    )
    if m == 1:
        out_len = piece_runtime + shift
    out_tokens, out_mask = _fill(tokens, mask, src, n_copy, append_last, out_len, spec.eos_id)
    return Shaped(out_tokens, out_mask, out_len, actions, pieces)


def _ceil_to(values: np.ndarray, m: int) -> np.ndarray:
    return -(-values // m) * m


@numba.njit(cache=True, nogil=True)  # nogil: chunks are shaped on several threads
def _fill_kernel(
    tokens: np.ndarray,
    mask: np.ndarray,
    src: np.ndarray,
    n_copy: np.ndarray,
    append_last: np.ndarray,
    out_starts: np.ndarray,
    out_tokens: np.ndarray,
    out_mask: np.ndarray,
    eos_id: int,
) -> None:
    for p in range(len(src)):
        o = out_starts[p]
        end = out_starts[p + 1]
        for j in range(n_copy[p]):
            out_tokens[o] = tokens[src[p] + j]
            out_mask[o] = mask[src[p] + j]
            o += 1
        if append_last[p] >= 0:  # truncate: the sample's last token, trained only if the cut was in a
            out_tokens[o] = tokens[append_last[p]]  # trained span (the first dropped token is a target)
            out_mask[o] = mask[append_last[p]] if mask[src[p] + n_copy[p]] != 0 else 0
            o += 1
        while o < end:
            out_tokens[o] = eos_id
            out_mask[o] = 0
            o += 1


def _fill(
    tokens: np.ndarray,
    mask: np.ndarray,
    src: np.ndarray,
    n_copy: np.ndarray,
    append_last: np.ndarray,
    out_len: np.ndarray,
    eos_id: int,
) -> tuple[np.ndarray, np.ndarray]:
    out_starts = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(out_len)])
    out_tokens = np.empty(int(out_starts[-1]), dtype=np.uint32)  # the scratch store's dtype: no copy there
    out_mask = np.empty(int(out_starts[-1]), dtype=np.uint8)
    _fill_kernel(
        tokens,
        mask,
        src.astype(np.int64),
        n_copy.astype(np.int64),
        append_last,
        out_starts,
        out_tokens,
        out_mask,
        eos_id,
    )
    return out_tokens, out_mask
