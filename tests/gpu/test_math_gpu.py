"""The math family, ^ / comparisons / abs() and item()/item_ptr() on the GPU, against
torch and against the CPU interpreter at odd shapes, outputs poisoned with NaN (or -99)
before every run. Tolerances per function are the ones the docstrings state."""

import math

import pytest
import torch

from tests.interp.test_math import (Items, MathTile, Operators, _REFERENCE, _TORCH, _expected,
                                    _inputs, expected_operators)
from tilus import bfloat16, float16, float32, float64, int8, int32

pytestmark = pytest.mark.gpu

# float32 against torch (accurate CUDA functions): exp2 and rsqrt are 2 ulp, round exact,
# log 1 ulp, sin/cos 2 ulp; exp's __expf grows with |x| (inputs reach |x| ~ 12). sqrt is
# correctly rounded on the GPU (and equals the interpreter exactly, below), but torch's CPU
# float32 sqrt may be SLEEF's 0.5001-ulp one: 1 ulp against torch.
_F32 = {"abs": (0, 0), "round": (0, 0), "square": (0, 0), "sqrt": (1.2e-7, 0),
        "exp2": (5e-7, 1e-30), "rsqrt": (5e-7, 0), "log": (3e-7, 3e-7),
        "sin": (5e-7, 5e-7), "cos": (5e-7, 5e-7), "exp": (1e-5, 1e-30)}
# 16-bit results: the float32 value rounded once; an approximation can land on the other
# side of a rounding boundary, so one unit of the last place.
_HALF = {float16: dict(rtol=1e-3, atol=1e-5), bfloat16: dict(rtol=8e-3, atol=1e-5),
         float64: dict(rtol=1e-13, atol=1e-300)}


def _gpu(kernel, x):
    out = torch.full(x.shape, float("nan"), device="cuda")
    kernel(x, out)
    torch.cuda.synchronize()
    return out


def _cpu(kernel, x):
    out = torch.full(x.shape, float("nan"))
    kernel(x.cpu(), out)
    return out


def _tolerance(fn, dtype):
    if dtype == float32:
        rtol, atol = _F32[fn]
        return dict(rtol=rtol, atol=atol)
    return _HALF[dtype]


@pytest.mark.parametrize("fn", sorted(_REFERENCE))
@pytest.mark.parametrize("dtype", [float16, bfloat16, float32, float64])
@pytest.mark.parametrize("m,n,warps", [(1, 1, 1), (5, 7, 2), (13, 33, 4), (64, 96, 4)])
def test_function_matches_torch_and_the_interpreter(fn, dtype, m, n, warps):
    x = _inputs(fn, m, n).cuda()
    kernel = MathTile(fn, m, n, dtype, warps=warps)
    got = _gpu(kernel, x)
    assert not got.isnan().any()
    tol = _tolerance(fn, dtype)
    torch.testing.assert_close(got.cpu(), _expected(fn, x.cpu(), dtype), **tol)
    exact = dict(rtol=0, atol=0) if (fn, dtype) == ("sqrt", float32) else tol
    torch.testing.assert_close(got.cpu(), _cpu(kernel, x), **exact)


# approx=True: within the hardware approximation's bound, on the range it is stated for.
_APPROX = {"log": dict(rtol=4e-7, atol=4e-7), "sqrt": dict(rtol=4e-7, atol=0),
           "sin": dict(rtol=0, atol=2 ** -21.41 + 1e-7), "cos": dict(rtol=0, atol=2 ** -21.41 + 1e-7)}


@pytest.mark.parametrize("fn", sorted(_APPROX))
@pytest.mark.parametrize("m,n", [(3, 5), (17, 40)])
def test_approx_variants_stay_within_their_bound(fn, m, n):
    if fn in ("sin", "cos"):
        x = (torch.rand(m, n) * 2 - 1) * math.pi
    else:
        x = torch.rand(m, n) * 8 + 0.01
    x = x.cuda()
    got = _gpu(MathTile(fn, m, n, float32, approx=True), x)
    want = _REFERENCE[fn](x.double()).float()
    torch.testing.assert_close(got, want, **_APPROX[fn])


def test_exp2_approx_flushes_only_subnormal_results():
    # the GPU (ex2.approx.ftz) and the interpreter agree: below 2^-126 is 0, the rest 2 ulp
    x = torch.cat([torch.rand(4, 40) * 40 - 30, torch.tensor([[-130.0, -140.0, -126.0, float("-inf")] * 10])])
    got = _gpu(MathTile("exp2", 5, 40, float32, approx=True), x.cuda()).cpu()
    want = _cpu(MathTile("exp2", 5, 40, float32, approx=True), x)
    assert (got[4] == want[4]).all() and got[4, 0] == 0 and got[4, 2] > 0
    torch.testing.assert_close(got, want, rtol=5e-7, atol=0)


def test_special_values():
    x = torch.tensor([[0.0, -1.0, float("inf"), float("nan"), 1e-40, 0.5, 2.5, -2.5]], device="cuda")
    for fn in ("log", "sqrt", "rsqrt", "exp2", "round", "abs"):
        got = _gpu(MathTile(fn, 1, 8, float32), x)
        torch.testing.assert_close(got, _REFERENCE[fn](x), equal_nan=True, rtol=5e-7, atol=0)


@pytest.mark.parametrize("fn", ["abs", "square"])
@pytest.mark.parametrize("dtype", [int32, int8])
def test_integer_functions(fn, dtype):
    x = torch.randint(-200, 200, (9, 13)).float()
    x[0, 0] = -128 if dtype == int8 else -(2**31)
    got = _gpu(MathTile(fn, 9, 13, dtype), x.cuda()).cpu()
    info = torch.iinfo(_TORCH[dtype])
    want = _REFERENCE[fn](x.clamp(info.min, info.max).to(_TORCH[dtype])).float()
    assert torch.equal(got, want)


@pytest.mark.parametrize("dtype,bounds", [(float32, (-1.0, 0.5)), (float16, (-2, 2)),
                                          (bfloat16, (0.0, 1.0)), (int32, (-3, 4)),
                                          (float64, (-0.25, 0.25))])
@pytest.mark.parametrize("m,n", [(5, 7), (33, 65)])
def test_clip(dtype, bounds, m, n):
    x = torch.randn(m, n) * 4
    if dtype == int32:
        x = x.round()
    got = _gpu(MathTile("clip", m, n, dtype, warps=2, bounds=bounds), x.cuda()).cpu()
    assert torch.equal(got, x.to(_TORCH[dtype]).clamp(*bounds).float())


def test_out_writes_into_the_given_tile():
    x = (torch.rand(6, 10) + 0.1).cuda()
    torch.testing.assert_close(_gpu(MathTile("sqrt", 6, 10, float32, use_out=True), x), x.sqrt())
    torch.testing.assert_close(_gpu(MathTile("exp", 6, 10, float32, use_out=True), x), x.exp(),
                               rtol=4e-6, atol=0)


@pytest.mark.parametrize("m,n", [(1, 1), (5, 7), (17, 9), (32, 64)])
def test_operators(m, n):
    a = torch.randint(-6, 7, (m, n), dtype=torch.int32, device="cuda")
    b = torch.randint(-6, 7, (m, n), dtype=torch.int32, device="cuda")
    outs = [torch.full((m, n), -99, dtype=torch.int32, device="cuda") for _ in range(3)]
    Operators(m, n)(a, b, *outs, 2)
    torch.cuda.synchronize()
    for got, want in zip(outs, expected_operators(a, b, 2)):
        assert torch.equal(got, want)


@pytest.mark.parametrize("m,n", [(1, 1), (5, 7), (12, 33), (64, 64)])
def test_item_tolist_and_item_ptr(m, n):
    x = torch.randn(m, n, device="cuda")
    out = torch.full((m, n), float("nan"), device="cuda")
    flag = torch.zeros(2, dtype=torch.int32, device="cuda")
    Items(m, n)(x, out, flag)
    torch.cuda.synchronize()
    s = x.double().sum().float()
    want = x - s + s * 0.5
    if x[-1, -1] > 0:
        want = want * 2
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    assert flag.tolist() == [3, 7]
