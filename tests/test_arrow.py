"""``bridgepack._arrow``: numpy arrays as Arrow arrays equal to ``pa.array``'s, without importing pandas."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from bridgepack._arrow import list_array, numpy_array

DTYPES = st.sampled_from([np.int8, np.int32, np.int64, np.uint16, np.uint64, np.float32, np.float64])


@given(hnp.arrays(DTYPES, st.integers(0, 50), elements={"allow_nan": False}))
def test_numpy_array_equals_pa_array(values: np.ndarray) -> None:
    built = numpy_array(values)
    assert built.equals(pa.array(values))
    assert built.type == pa.from_numpy_dtype(values.dtype)


@given(st.lists(st.integers(0, 5), max_size=20), st.booleans())
def test_list_array_rows_are_the_slices(lengths: list[int], large: bool) -> None:
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = np.arange(int(offsets[-1]), dtype=np.int32)
    built = list_array(offsets, values, large=large)
    assert built.type == (pa.large_list(pa.int32()) if large else pa.list_(pa.int32()))
    assert built.to_pylist() == [values[a:b].tolist() for a, b in itertools.pairwise(offsets)]


def test_a_strided_view_and_a_converted_dtype() -> None:
    values = np.arange(10, dtype=np.int64)[::3]
    assert numpy_array(values).to_pylist() == [0, 3, 6, 9]
    assert numpy_array(values, np.int32).type == pa.int32()


@pytest.mark.parametrize("values", [np.zeros((2, 2), np.int32), np.array([True]), np.array(["a"])])
def test_refuses_what_has_no_plain_buffer(values: np.ndarray) -> None:
    with pytest.raises(TypeError, match="1-D integers or floats"):
        numpy_array(values)


def test_pandas_stays_unimported() -> None:
    code = (
        "import sys, numpy as np; from bridgepack._arrow import list_array; "
        "list_array(np.array([0, 2]), np.array([1, 2])); print('pandas' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
