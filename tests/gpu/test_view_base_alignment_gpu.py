"""Views at element addresses at any offset run on the GPU (before the fix a view at
&x[3] was read with 16-byte vectors: a misaligned address fault);
tests/codegen/test_view_base_alignment.py checks the accesses chosen."""

import pytest
import torch

from tests.codegen.test_view_base_alignment import RowView, ShiftedCopy

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("scale", [1, 2, 4, 8])
@pytest.mark.parametrize("off", [0, 1, 3, 7, 12])
def test_shifted_view_at_any_offset(scale, off):
    n = 2048
    x = torch.randn(n, device="cuda").half()
    y = torch.full((n,), float("nan"), device="cuda").half()
    kernel = ShiftedCopy(scale)
    for _ in range(2):  # the second call goes through the native launcher
        y.fill_(float("nan"))
        kernel(n, x, y, off)
        torch.cuda.synchronize()
        start = off * scale
        assert torch.equal(y[:256], x[start:start + 256])
        assert torch.isnan(y[256:].float()).all()


@pytest.mark.parametrize("n", [256, 272, 259])
def test_row_view_at_every_row(n):
    m = 9
    x = torch.randn(m, n, device="cuda").half()
    y = torch.full((n,), float("nan"), device="cuda").half()
    kernel = RowView()
    for row in range(m):
        y.fill_(float("nan"))
        kernel(m, n, x, y, row)
        torch.cuda.synchronize()
        assert torch.equal(y[:256], x[row, :256])
