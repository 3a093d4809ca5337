"""Rows of any length in 16-byte vectors on the GPU (tests/codegen/test_partial_vectors.py):
the vector a row's end cuts is read whole and zeroed past the end, and written element by
element, so nothing past the view is written; odd lengths, poisoned outputs."""

import pytest
import torch

from tests.codegen.test_partial_vectors import ColumnBias, RowsFromTheirBoundary, TailCopy

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n, cut", [(1000, 3), (1000, 0), (777, 1), (9, 2), (4099, 4096)])
def test_a_row_of_unknown_length_gpu(n, cut):
    x = torch.randn(n, device="cuda").half()
    y = torch.full_like(x, float("nan"))
    TailCopy()(n, cut, x, y)
    torch.testing.assert_close(y[: n - cut], (x[: n - cut].float() * 2).half())
    assert torch.isnan(y[n - cut:]).all()  # past the view: untouched


@pytest.mark.parametrize("m, n", [(37, 500), (16, 496), (9, 13), (64, 512)])
def test_rows_from_their_16_byte_boundary_gpu(m, n):
    """n % 16 != 0: the partly aligned build, whose row views keep their vectors."""
    x = torch.randn(m, n, device="cuda").half()
    z = torch.full_like(x, float("nan"))
    RowsFromTheirBoundary()(m, n, x, z)
    torch.testing.assert_close(z, (x.float() + 1).half())


@pytest.mark.parametrize("n", [300, 256, 17])
def test_a_column_of_unaligned_length_gpu(n):
    b = torch.randn(n + 8, device="cuda").half()[:n]
    c = torch.full((n + 8,), float("nan"), device="cuda").half()
    ColumnBias()(n, b, c[:n])
    k = min(n, 256)
    torch.testing.assert_close(c[:k], (b[:k].float() + 1).half())
    assert torch.isnan(c[k:]).all()
