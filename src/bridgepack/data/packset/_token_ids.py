"""Facts about token ids that do not come with the data: the range of a flag's id (``--eos-id``), and the
one rule by which an EOS id is inferred when nobody names it.

Ids in the data are checked by the input rule (:mod:`bridgepack.data.samples._examples`); an EOS id given on
the
command line pads packs and is recorded in the metadata, so it must obey the same range: the scratch
store holds ids as uint32, where ``--eos-id 4294967296`` would wrap to 0 and pad with token 0 while the
metadata recorded the unwrapped value.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridgepack.errors import UsageError, param

#: Largest token id a pack set holds: the scratch store keeps ids as uint32; vocabularies are far below it.
MAX_TOKEN_ID = 2**32 - 1


def check_eos_id(eos_id: int | None) -> None:
    """Refuse an EOS id outside ``[0, MAX_TOKEN_ID]`` (a usage error, exit 2); ``None`` is "not given"."""
    if eos_id is not None and not 0 <= eos_id <= MAX_TOKEN_ID:
        raise UsageError(f"{param('eos_id')} must be a token id in [0, {MAX_TOKEN_ID}], got {eos_id}")


def most_common_last_token(tokens: npt.NDArray[np.integer], sequence_ends: npt.NDArray[np.integer]) -> int:
    """The EOS id sequences imply when none is given: their most common last token (Bridge ends every
    sequence with EOS, and pre-padding appends more of it); -1 for no sequence.

    ``sequence_ends`` are exclusive end offsets into the flat ``tokens``. The one rule ``pack`` (pre-tokenized
    input without ``--eos-id``/``--tokenizer``), the trainer and the packed-data readers apply::

        tokens [5 6 2 | 7 2 | 8 9 2]  ends [3, 5, 8]  ->  last tokens [2 2 2]  ->  2

    Rows rendered by a chat template end with the template's end token and a newline (Qwen: ``198``), not
    with the tokenizer's EOS: where the inferred id pads, ``pack`` warns and names ``--eos-id`` and
    ``--tokenizer``.
    """
    ends = np.asarray(sequence_ends, dtype=np.int64)
    if ends.size == 0:
        return -1
    values, counts = np.unique(np.asarray(tokens)[ends - 1], return_counts=True)
    return int(values[np.argmax(counts)])
