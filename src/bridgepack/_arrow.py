"""numpy arrays as Arrow arrays, zero-copy and without importing pandas.

``pa.array(ndarray)`` first asks whether its argument is a pandas object, which imports pandas: ~0.35 s of
a fresh ``bridgepack pack`` process that never uses it. An array built on the numpy buffer is the same Arrow
array (same type, same values, no copy of a contiguous array).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def numpy_array(values: np.ndarray, dtype: np.dtype | type | None = None) -> pa.Array:
    """A 1-D numeric ``values`` (converted to ``dtype`` first when given) as an Arrow array of that type."""
    flat = np.ascontiguousarray(values if dtype is None else values.astype(dtype, copy=False))
    if flat.ndim != 1 or flat.dtype.kind not in "iuf":
        raise TypeError(f"numpy_array takes 1-D integers or floats, not {flat.dtype} with {flat.ndim} dims")
    arrow_type = pa.from_numpy_dtype(flat.dtype)
    return pa.Array.from_buffers(arrow_type, len(flat), [None, pa.py_buffer(flat)])


def list_array(offsets: np.ndarray, values: pa.Array | np.ndarray, *, large: bool = False) -> pa.Array:
    """``list<values>`` (``large_list`` with ``large``): row ``i`` is ``values[offsets[i]:offsets[i+1]]``."""
    items = values if isinstance(values, pa.Array) else numpy_array(values)
    if large:
        return pa.LargeListArray.from_arrays(numpy_array(offsets, np.int64), items)
    return pa.ListArray.from_arrays(numpy_array(offsets, np.int32), items)
