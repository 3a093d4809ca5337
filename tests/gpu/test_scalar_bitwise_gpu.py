"""Bitwise operators on runtime scalars on the GPU: the values tests/interp/test_scalar_bitwise.py
checks in the interpreter (shift amounts past the width included)."""

import numpy as np
import pytest

from tests.interp.test_scalar_bitwise import OPS, TYPES, run

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", list(TYPES), ids=lambda t: t.name)
@pytest.mark.parametrize("op", OPS)
def test_bitwise_operators_on_runtime_scalars_gpu(op, dtype):
    got, expected = run(op, dtype, "cuda")
    np.testing.assert_array_equal(got, expected)
