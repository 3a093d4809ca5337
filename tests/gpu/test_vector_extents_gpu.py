"""A runtime row length that is not a multiple of 16 takes the unaligned build and stays
correct; one that is takes the vectorised build (tests/codegen/test_vector_extents.py)."""

import pytest
import torch

from tests.codegen.test_vector_extents import RowScale

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n", [1024, 1000, 1017, 512, 16])
def test_row_scale_at_any_runtime_extent(n):
    m = 37
    x = torch.randn(m, n, device="cuda").half()
    y = torch.full_like(x, float("nan"))
    kernel = RowScale()
    for _ in range(2):  # the second call goes through the native launcher
        y.fill_(float("nan"))
        kernel(m, n, x, y)
        torch.testing.assert_close(y, (x.float() * 2).half())
