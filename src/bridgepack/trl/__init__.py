"""Python API for Hugging Face ``datasets`` / TRL users.

* :func:`pack_dataset` -- a drop-in for ``trl.pack_dataset`` (one import changes) with a global plan, no
  Python object per token and a cache-backed result.
* :class:`PaddingFreeCollator` -- batches packed rows for a transformers model without an attention mask,
  keeping each row's sequence boundaries (``position_ids``) so the sequences stay isolated.
"""

from bridgepack.trl._collator import PaddingFreeCollator
from bridgepack.trl._fragments import STRATEGIES
from bridgepack.trl._pack import pack_dataset

__all__ = ["STRATEGIES", "PaddingFreeCollator", "pack_dataset"]
