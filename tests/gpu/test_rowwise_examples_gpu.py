"""examples/softmax.py and examples/norms.py on the GPU at odd and large shapes, every
input dtype, both paths (one tile per row; rows longer than the tile), against torch."""

import pytest
import torch

pytestmark = pytest.mark.gpu

DTYPES = [torch.float16, torch.bfloat16, torch.float32]


def _tol(dtype):
    return dict(atol=1e-5, rtol=1e-4) if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("dtype", DTYPES)
# (the wrapper copies rows of 4097 to 65536 16-bit elements, 8193 to 32768 float32, to
# shared memory: 8191 and 50257 shifted, 65536 in 16 tiles, 128 KB)
@pytest.mark.parametrize("m,n,block_n", [(1823, 781, None), (3, 1, None), (64, 4097, None), (9, 8191, None),
                                         (7, 20000, None), (37, 3000, 1024), (5, 32768, None),
                                         (1000, 32768, None), (300, 50257, None), (11, 65536, None)])
@pytest.mark.parametrize("persistent,staged", [(False, False), (True, False), (True, True)])
def test_softmax_gpu(example, dtype, m, n, block_n, persistent, staged):
    sm = example("softmax")
    x = (torch.randn(m, n, device="cuda") * 4).to(dtype)
    y = torch.full_like(x, float("nan"))
    sm.softmax(x, y, block_n=block_n, persistent=persistent, staged=staged)
    torch.testing.assert_close(y, torch.softmax(x.float(), dim=1).to(dtype), **_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,n,block_n", [(1823, 781, None), (33, 4096, None), (9, 5000, 1024)])
def test_norms_gpu(example, dtype, m, n, block_n):
    nm = example("norms")
    x = (torch.randn(m, n, device="cuda") * 2 + 0.5).to(dtype)
    w, b = torch.randn(n, device="cuda").to(dtype), torch.randn(n, device="cuda").to(dtype)
    y = torch.full_like(x, float("nan"))
    nm.layer_norm(x, w, b, 1e-5, out=y, block_n=block_n)
    ref = torch.nn.functional.layer_norm(x.float(), [n], w.float(), b.float(), 1e-5).to(dtype)
    torch.testing.assert_close(y, ref, **_tol(dtype))
    z = torch.full_like(x, float("nan"))
    nm.rms_norm(x, w, 1e-6, out=z, block_n=block_n)
    xf = x.float()
    ref = (xf * torch.rsqrt(xf.pow(2).mean(1, keepdim=True) + 1e-6) * w.float()).to(dtype)
    torch.testing.assert_close(z, ref, **_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_past_the_int32_limit_run_in_slices_gpu(example, monkeypatch, dtype):
    # the per-call limit (2^31 - 1 elements) lowered to 5 rows of 1000: 1003 rows in 201
    # calls, each on a slice whose pointer is offset into x and out
    sm, nm = example("softmax"), example("norms")
    for module in (sm, nm):
        monkeypatch.setitem(module.row_slices.__globals__, "INT32_ELEMENTS", 5000)
    x = (torch.randn(1003, 1000, device="cuda") * 4).to(dtype)
    y = torch.full_like(x, float("nan"))
    sm.softmax(x, y)
    torch.testing.assert_close(y, torch.softmax(x.float(), dim=1).to(dtype), **_tol(dtype))
    w = torch.randn(1000, device="cuda").to(dtype)
    z = torch.full_like(x, float("nan"))
    nm.rms_norm(x, w, 1e-6, out=z)
    xf = x.float()
    ref = (xf * torch.rsqrt(xf.pow(2).mean(1, keepdim=True) + 1e-6) * w.float()).to(dtype)
    torch.testing.assert_close(z, ref, **_tol(dtype))
