"""exp and sum on the GPU against torch at odd shapes, outputs poisoned with NaN."""

import pytest
import torch

from tests.interp.test_exp_sum import ExpTile, SumTile, _TORCH, expected_sum
from tilus import bfloat16, float16, float32, float64, int32

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", [float16, bfloat16, float32, float64])
@pytest.mark.parametrize("m,n", [(1, 1), (5, 7), (13, 33)])
def test_exp(dtype, m, n):
    x = torch.randn(m, n, device="cuda") * 4
    out = torch.full((m, n), float("nan"), device="cuda")
    ExpTile(m, n, dtype)(x, out)
    want = torch.exp(x.to(_TORCH[dtype])).float()
    torch.testing.assert_close(out, want, rtol=2e-2 if dtype in (float16, bfloat16) else 1e-5, atol=0)


@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("m,n,dim", [(5, 7, 0), (5, 7, 1), (3, 100, 1), (33, 17, 0),
                                     (64, 128, 1), (64, 128, 0), (1, 9, 1)])
@pytest.mark.parametrize("keepdim", [True, False])
def test_sum(m, n, dim, keepdim, warps):
    x = torch.randn(m, n, device="cuda")
    shape = [m, n]
    shape[dim] = 1
    out = torch.full(shape, float("nan"), device="cuda")
    SumTile(m, n, dim, keepdim, warps=warps)(x, out)
    torch.testing.assert_close(out, expected_sum(x, dim, float32), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [float16, int32, float64])
def test_sum_of_other_dtypes(dtype):
    x = torch.randint(-50, 50, (37, 70), device="cuda").float()
    out = torch.full((1, 70), float("nan"), device="cuda")
    SumTile(37, 70, 0, True, dtype=dtype)(x, out)
    torch.testing.assert_close(out, expected_sum(x, 0, dtype))
