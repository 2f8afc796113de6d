"""The range of a token id, for ids that come from a flag rather than from the data (``--eos-id``).

Ids in the data are checked by the input rule (:mod:`seqpack.data._examples`); an EOS id given on the
command line pads packs and is recorded in the metadata, so it must obey the same range: the scratch
store holds ids as uint32, where ``--eos-id 4294967296`` would wrap to 0 and pad with token 0 while the
metadata recorded the unwrapped value.
"""

from __future__ import annotations

from seqpack.data._scratch import MAX_TOKEN_ID
from seqpack.errors import UsageError


def check_eos_id(eos_id: int | None, option: str = "--eos-id") -> None:
    """Refuse an EOS id outside ``[0, MAX_TOKEN_ID]`` (a usage error, exit 2); ``None`` is "not given"."""
    if eos_id is not None and not 0 <= eos_id <= MAX_TOKEN_ID:
        raise UsageError(f"{option} must be a token id in [0, {MAX_TOKEN_ID}], got {eos_id}")
