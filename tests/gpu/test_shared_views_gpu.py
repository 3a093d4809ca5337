"""Loads, stores and copy_async through reshaped and permuted shared views on the GPU
against torch (fresh random data, outputs poisoned with NaN), swizzled allocations
included, and a dot reading its operand through a transposed view."""

import pytest
import torch

from tests.interp.test_shared_views import VIEWS, DotThroughTransposedView, ThroughView
from tilus import float16, float32

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape,fn,want", VIEWS)
@pytest.mark.parametrize("write", [None, "store", "copy"])
@pytest.mark.parametrize("warps", [1, 4])
def test_views_address_the_allocation(shape, fn, want, write, warps):
    view_shape = list(want(torch.zeros(shape)).shape)
    if write:
        y = torch.randn(view_shape, device="cuda")
        out = torch.full(shape, float("nan"), device="cuda")
        ThroughView(list(shape), fn, view_shape, write, warps=warps)(y, out)
        ref = torch.full(shape, float("nan"), device="cuda")
        want(ref).copy_(y)
        written = ~ref.isnan()  # the rest of the tile is never written
        torch.testing.assert_close(out[written], ref[written])
    else:
        x = torch.randn(shape, device="cuda")
        out = torch.full(view_shape, float("nan"), device="cuda")
        ThroughView(list(shape), fn, view_shape, warps=warps)(x, out)
        torch.testing.assert_close(out, want(x).contiguous())


@pytest.mark.parametrize("shape,dtype,write", [
    (shape, float16, write) for shape in [(32, 64), (64, 64), (2, 32, 64)] for write in [None, "store"]
] + [(shape, float32, write) for shape in [(32, 32), (2, 16, 32)] for write in [None, "store", "copy"]])
def test_views_of_swizzled_tiles(shape, dtype, write):
    # 128-byte rows: the allocation's layout is swizzled; the view must follow it
    # (copy_async reads x with the tile's dtype, so it runs on float32 tiles)
    def fn(s, v):
        return v.transpose() if len(shape) == 2 else s.reshape_shared(v, [shape[0] * shape[1], shape[2]]).transpose()

    def want(x):
        return x.t() if len(shape) == 2 else x.reshape(shape[0] * shape[1], shape[2]).t()

    view_shape = list(want(torch.zeros(shape)).shape)
    kernel = ThroughView(list(shape), fn, view_shape, write, dtype=dtype, warps=4)
    if write:
        y = torch.randn(view_shape, device="cuda").half().float()
        out = torch.full(shape, float("nan"), device="cuda")
        kernel(y, out)
        ref = torch.full(shape, float("nan"), device="cuda")
        want(ref).copy_(y)
        torch.testing.assert_close(out, ref)
    else:
        x = torch.randn(shape, device="cuda").half().float()
        out = torch.full(view_shape, float("nan"), device="cuda")
        kernel(x, out)
        torch.testing.assert_close(out, want(x).contiguous())


def test_dot_through_a_transposed_view():
    a = torch.randn(64, 32, device="cuda").half()
    b = torch.randn(64, 32, device="cuda").half()
    c = torch.full((64, 64), float("nan"), device="cuda")
    DotThroughTransposedView()(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().t(), rtol=1e-3, atol=1e-3)
