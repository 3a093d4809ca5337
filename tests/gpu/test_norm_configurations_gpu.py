"""examples/norms.py's `shifted` rows (not a multiple of 16: x and y in 16-byte vectors
from each row's 16-byte boundary, the weight and bias read realigned, the head element
by element) at fixed configurations, against torch on poisoned outputs: rows of 781 and
8191 start at every misalignment, rows of 4104 fp16 at 0 or 8 bytes; rows longer than a
tile."""

import pytest
import torch

import tilus

pytestmark = pytest.mark.gpu

_TILUS = {torch.float16: tilus.float16, torch.float32: tilus.float32}


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("n", [781, 4104, 8191])
def test_shifted_norm_rows_gpu(example, dtype, n):
    nm = example("norms")
    m = 301
    x = (torch.randn(m, n, device="cuda") * 2 + 0.5).to(dtype)
    w, b = torch.randn(n, device="cuda").to(dtype), torch.randn(n, device="cuda").to(dtype)
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    ln = torch.nn.functional.layer_norm(x.float(), [n], w.float(), b.float(), 1e-5).to(dtype)
    rms = nm._rms_reference(x, w, 1e-6)
    block_n = 1 << (n - 1).bit_length()
    for warps in (4, 8, 16):
        y, z = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
        nm.LayerNorm(_TILUS[dtype], block_n, block_m=1, warps=warps, shifted=True)(m, n, x, w, b, y, 1e-5)
        nm.RMSNorm(_TILUS[dtype], block_n, block_m=1, warps=warps, shifted=True)(m, n, x, w, z, 1e-6)
        torch.testing.assert_close(y, ln, **tol, msg=lambda text: f"layer norm, {warps} warps: {text}")
        torch.testing.assert_close(z, rms, **tol, msg=lambda text: f"RMS norm, {warps} warps: {text}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("n, block_n", [(8191, 2048), (20001, 4096), (40007, 16384)])
def test_shifted_norm_rows_longer_than_a_tile_gpu(example, dtype, n, block_n):
    # (rows of several tiles: the walk's three passes, or two for RMS norm; 40007 over
    # 16384-wide tiles, which spill with the realigned weight and bias but stay correct)
    nm = example("norms")
    m = 97
    x = (torch.randn(m, n, device="cuda") * 2 + 0.5).to(dtype)
    w, b = torch.randn(n, device="cuda").to(dtype), torch.randn(n, device="cuda").to(dtype)
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    y, z = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
    nm.LayerNorm(_TILUS[dtype], block_n, block_m=1, warps=8, shifted=True)(m, n, x, w, b, y, 1e-5)
    nm.RMSNorm(_TILUS[dtype], block_n, block_m=1, warps=8, shifted=True)(m, n, x, w, z, 1e-6)
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x.float(), [n], w.float(), b.float(), 1e-5).to(dtype),
                               **tol)
    torch.testing.assert_close(z, nm._rms_reference(x, w, 1e-6), **tol)


@pytest.mark.parametrize("n", [781, 8191, 40007])
def test_the_wrappers_walk_unaligned_rows_from_their_boundary_gpu(example, n):
    nm = example("norms")
    x = (torch.randn(64, n, device="cuda") * 2).half()
    w, b = torch.randn(n, device="cuda").half(), torch.randn(n, device="cuda").half()
    y = torch.full_like(x, float("nan"))
    nm.layer_norm(x, w, b, 1e-5, out=y, shifted=True)
    assert any(key[-1] is True for key in nm._SCRIPTS)  # (the shifted script)
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x.float(), [n], w.float(), b.float(), 1e-5).half(),
                               atol=2e-2, rtol=2e-2)
