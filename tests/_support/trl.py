"""TRL's ``pack_dataset`` from the PyPI wheel of the release the ``bench`` extra pins, without installing TRL.

``trl/data_utils.py`` imports only numpy, pyarrow, datasets and transformers, so the one file is loaded by
path from the unpacked ``--no-deps`` wheel (see :mod:`_support.peers`); an installed ``trl`` of that
release is used as is.
"""

from __future__ import annotations

import types

import pytest

from _support.peers import _cached_wheel_root, load_module_by_path

#: The release pinned in pyproject's ``bench`` extra.
TRL_VERSION = "1.16.0"


def trl_data_utils() -> types.ModuleType:
    """TRL 1.16.0's ``trl.data_utils`` (``pack_dataset``, ``_pack_bfd``, ``_pack_wrapped``)."""
    pytest.importorskip("datasets")
    pytest.importorskip("transformers")
    try:
        import trl

        if trl.__version__ == TRL_VERSION:
            from trl import data_utils

            return data_utils
    except ImportError:
        pass
    root = _cached_wheel_root("trl", TRL_VERSION)
    return load_module_by_path(root / "trl" / "data_utils.py", "trl_data_utils_peer")
