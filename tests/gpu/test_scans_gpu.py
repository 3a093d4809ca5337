"""Scans (scan, cumsum, cumprod) on the GPU against torch: fresh random data, odd shapes,
1 to 8 warps, every dtype, outputs poisoned with NaN."""

import pytest
import torch

from tests.interp.test_scans import run_scan, scan_reference
from tilus import float16, float32, float64, int8, int32, int64

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("warps", [1, 4, 8])
@pytest.mark.parametrize("op", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("m,n,dim", [(5, 7, 1), (5, 7, 0), (37, 70, 1), (37, 70, 0), (64, 128, 1),
                                     (64, 128, 0), (1, 9, 1), (3, 100, -1), (200, 8, 0)])
@pytest.mark.parametrize("exclusive", [False, True])
def test_scan(op, m, n, dim, exclusive, warps):
    x, out = run_scan(m, n, dim, op, exclusive, warps=warps, device="cuda")
    torch.testing.assert_close(out, scan_reference(x, dim, op, exclusive), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("via,op", [("cumsum", "add"), ("cumprod", "mul")])
@pytest.mark.parametrize("dtype", [float16, float32, float64, int8, int32, int64])
@pytest.mark.parametrize("dim", [0, 1])
def test_cumsum_cumprod_of_every_dtype(via, op, dtype, dim):
    x = torch.randint(-3, 4, (37, 20), device="cuda").float()
    x, out = run_scan(37, 20, dim, op, False, dtype, via=via, x=x, device="cuda")
    torch.testing.assert_close(out, scan_reference(x, dim, op, False, dtype), rtol=2e-3, atol=1e-3)
