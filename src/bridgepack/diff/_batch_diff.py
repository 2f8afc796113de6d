"""``bridgepack diff`` for two batch dumps (``bridgepack inspect --dump-batches K --out F.npz``).

A dump holds the first K collated batches as plain arrays, ``batch{i}.{key}`` (e.g. ``batch0.tokens``,
``batch0.cu_seqlens_q``), plus ``eos_id`` when the collator knew it. Both files are loaded with
``allow_pickle=False``: a dump never carries code. The comparison goes key by key: keys only on one side,
dtype and shape changes, the number of differing elements and the first differing index with both values.
Where the tokens agree, loss-mask changes are split into EOS positions and the rest -- the difference
Bridge 0.6.2's EOS zeroing makes::

    tokens     [10 11  2 20  2]
    loss_mask  [ 1  1  0  1  0]   (A, EOS inputs silenced)
    loss_mask  [ 1  1  1  1  1]   (B)  ->  EOS positions supervised in B, not in A: 2 tokens
"""

from __future__ import annotations

import os
import zipfile
from typing import Any

import numpy as np
import numpy.typing as npt

from bridgepack._io import unreadable
from bridgepack.batching.dump import EOS_KEY
from bridgepack.errors import InputError

#: Key of the EOS id in a dump (a 0-d integer array).
#: Suffixes of the keys whose masks are classified by token kind.
TOKENS_SUFFIX = "tokens"
MASK_SUFFIX = "loss_mask"


def is_batch_dump(path: str) -> bool:
    """Whether ``path`` names a batch dump (``.npz``) rather than packed data."""
    return path.lower().endswith(".npz")


def load_dump(path: str) -> dict[str, npt.NDArray[Any]]:
    """All arrays of a dump, read without unpickling; unreadable files raise :class:`InputError`."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except FileNotFoundError as exc:
        raise unreadable(path, exc) from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"{path}: not a readable .npz batch dump without pickles ({exc})") from None


def _value(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else x


def _compare_key(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> dict[str, Any] | None:
    """What differs between two arrays of one key, ``None`` when equal (dtype, shape and values)."""
    out: dict[str, Any] = {}
    if a.dtype != b.dtype:
        out["dtype"] = [str(a.dtype), str(b.dtype)]
    if a.shape != b.shape:
        out["shape"] = [list(a.shape), list(b.shape)]
        return out
    unequal = a != b
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        unequal &= ~(np.isnan(a) & np.isnan(b))
    count = int(np.count_nonzero(unequal))
    if count:
        first = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(unequal)[0]), a.shape))
        out.update(
            differing_elements=count,
            first_index=list(first),
            a_value=_value(a[first]),
            b_value=_value(b[first]),
        )
    return out or None


def _mask_kinds(
    tokens: npt.NDArray[Any], mask_a: npt.NDArray[Any], mask_b: npt.NDArray[Any], eos_id: int | None
) -> dict[str, dict[str, int]]:
    """Mask changes split into EOS positions (input token is EOS) and the rest."""
    at_eos = tokens == eos_id if eos_id is not None else np.zeros(tokens.shape, bool)
    on_a, on_b = mask_a != 0, mask_b != 0
    out = {}
    for kind, where_kind in (("eos_input", at_eos), ("other", ~at_eos)):
        gained = int(np.count_nonzero(on_b & ~on_a & where_kind))
        lost = int(np.count_nonzero(on_a & ~on_b & where_kind))
        if gained or lost:
            out[kind] = {"supervised_in_b_not_a": gained, "supervised_in_a_not_b": lost}
    return out


def diff_batches(path_a: str, path_b: str, *, eos_id: int | None = None) -> dict[str, Any]:
    """Compare two batch dumps key by key; the JSON-ready report."""
    a, b = load_dump(path_a), load_dump(path_b)
    if eos_id is None:
        for dump in (a, b):
            if EOS_KEY in dump and dump[EOS_KEY].ndim == 0:
                eos_id = int(dump[EOS_KEY])
                break
    keys: dict[str, Any] = {}
    kinds: dict[str, dict[str, int]] = {}
    for key in sorted(set(a) & set(b)):
        found = _compare_key(a[key], b[key])
        if found is not None:
            keys[key] = found
        if key.endswith(MASK_SUFFIX) and found is not None and "shape" not in found:
            tokens_key = key[: -len(MASK_SUFFIX)] + TOKENS_SUFFIX
            ta, tb = a.get(tokens_key), b.get(tokens_key)
            if ta is not None and tb is not None and ta.shape == a[key].shape and np.array_equal(ta, tb):
                for kind, counts in _mask_kinds(ta, a[key], b[key], eos_id).items():
                    total = kinds.setdefault(kind, {"supervised_in_b_not_a": 0, "supervised_in_a_not_b": 0})
                    for name, n in counts.items():
                        total[name] += n
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    identical = not keys and not only_a and not only_b
    return {
        "kind": "batches",
        "identical": identical,
        "verdict": "identical" if identical else "batches differ",
        "eos_id": eos_id,
        "a": {"path": os.fspath(path_a), "keys": len(a)},
        "b": {"path": os.fspath(path_b), "keys": len(b)},
        "only_in_a": only_a,
        "only_in_b": only_b,
        "differences": keys,
        "loss_mask_kinds": kinds,
    }
