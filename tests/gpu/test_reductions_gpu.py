"""Reductions (sum max min any all) on the GPU against torch: fresh random data, odd
shapes, every dtype, 1 to 8 warps, outputs poisoned with NaN before the run."""

import pytest
import torch

from tests.interp.test_reductions import Reduce, expected
from tilus import bfloat16, float16, float32, float64, int8, int16, int32, int64, uint8

pytestmark = pytest.mark.gpu


def run_gpu(op, m, n, dim, keepdim, dtype=float32, warps=4, x=None, use_out=False):
    if x is None:
        x = torch.randn(m, n, device="cuda") * 8
    kernel = Reduce(op, m, n, dim, keepdim, dtype, warps, use_out)
    out = torch.full(kernel.rshape, float("nan"), device="cuda")
    kernel(x, out)
    torch.cuda.synchronize()
    return x.cpu(), out.cpu()


@pytest.mark.parametrize("op", ["sum", "max", "min", "any", "all"])
@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("m,n,dim", [(5, 7, 0), (5, 7, 1), (3, 100, 1), (33, 17, 0), (64, 128, 1),
                                     (64, 128, 0), (1, 9, 1), (37, 70, 1), (37, 70, 0)])
@pytest.mark.parametrize("keepdim", [True, False])
def test_reduction(op, m, n, dim, keepdim, warps):
    x, out = run_gpu(op, m, n, dim, keepdim, warps=warps)
    torch.testing.assert_close(out, expected(op, x, dim, keepdim), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["sum", "max", "min", "any", "all"])
@pytest.mark.parametrize("dim", [None, (0, 1), [-1, 0]])
def test_reduction_over_several_dims(op, dim):
    x, out = run_gpu(op, 19, 45, dim, True)
    torch.testing.assert_close(out, expected(op, x, dim, True), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("dtype", [float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8])
@pytest.mark.parametrize("dim", [0, 1])
def test_reduction_of_every_dtype(op, dtype, dim):
    low = 0 if dtype == uint8 else -50
    x = torch.randint(low, 50, (37, 70), device="cuda").float()
    x, out = run_gpu(op, 37, 70, dim, True, dtype, x=x)
    torch.testing.assert_close(out, expected(op, x, dim, True, dtype))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1])
def test_nan_wins(op, dim):
    x = torch.randn(40, 70, device="cuda")
    x[13, 29] = float("nan")
    x, out = run_gpu(op, 40, 70, dim, True, warps=8, x=x)
    torch.testing.assert_close(out, expected(op, x, dim, True), equal_nan=True)


@pytest.mark.parametrize("op", ["sum", "max", "all"])
def test_out_receives_the_result(op):
    x, out = run_gpu(op, 21, 33, 1, True, use_out=True)
    torch.testing.assert_close(out, expected(op, x, 1, True), rtol=1e-4, atol=1e-4)
