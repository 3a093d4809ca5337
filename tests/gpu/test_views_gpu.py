"""Register shape changes on the GPU against torch at odd shapes (fresh random data,
outputs poisoned with NaN / a sentinel): the same cases as the interpreter's tests, the
derivable ones (register copies), one that exchanges through shared memory, bit views,
a transposed dot operand and the Tilus-0.2-style program."""

import pytest
import torch

from tests.interp.test_views import CASES, Apply, DecodeStep, DotT, ViewBits

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape,fn,want", CASES)
@pytest.mark.parametrize("warps", [1, 4])
def test_shape_changes(shape, fn, want, warps):
    x = torch.randn(*shape, device="cuda")
    ref = want(x)
    out = torch.full(ref.shape, float("nan"), device="cuda")
    Apply(list(shape), fn, list(ref.shape), warps=warps)(x, out)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,new,warps", [((6, 10), (4, 15), 1), ((6, 10), (4, 15), 4),
                                             ((12, 18), (8, 27), 2), ((64, 48), (96, 32), 8)])
def test_reshape_through_shared_memory(shape, new, warps):
    x = torch.randn(*shape, device="cuda")
    out = torch.full(new, float("nan"), device="cuda")
    Apply(list(shape), lambda s, t: s.reshape(t, list(new)), list(new), warps=warps)(x, out)
    torch.testing.assert_close(out, x.reshape(*new))


@pytest.mark.parametrize("n", [37, 128])
def test_bit_views(n):
    x = torch.randn(n, device="cuda").half()
    out = torch.full((n,), -1, dtype=torch.int16, device="cuda")
    out8 = torch.full((2 * n,), 7, dtype=torch.uint8, device="cuda")
    if n % 32 == 0:
        ViewBits(n, "bytes")(x, out, out8)
        assert torch.equal(out8, x.view(torch.uint8))
    ViewBits(n, "bits")(x, out, out8)
    assert torch.equal(out, x.view(torch.int16))


def test_transposed_dot_operand():
    a = torch.randn(32, 16, device="cuda").half()
    b = torch.randn(32, 16, device="cuda").half()
    c = torch.full((32, 32), float("nan"), device="cuda")
    DotT()(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().t(), rtol=1e-3, atol=1e-3)


def test_tilus_02_style_program():
    d, groups = 12, 3
    h, k, v, q = (torch.randn(d, d, device="cuda"), torch.randn(d, device="cuda"),
                  torch.randn(d, device="cuda"), torch.randn(d, device="cuda"))
    o = torch.full((d,), float("nan"), device="cuda")
    ht = torch.full((d, d), float("nan"), device="cuda")
    og = torch.full((groups, d), float("nan"), device="cuda")
    DecodeStep(d, groups)(h, k, v, q, o, ht, og)
    h2 = h + torch.outer(k, v)
    torch.testing.assert_close(o, q @ h2, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(ht, h2.t())
    torch.testing.assert_close(og, (q @ h2).unsqueeze(0).repeat(groups, 1), rtol=1e-4, atol=1e-4)
