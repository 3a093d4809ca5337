"""examples/matmul_warp_specialized.py on the GPU (sm_90a): every configuration the
autotuner may pick (2-block clusters sharing B by TMA multicast included) and the untuned
ones (clusters sharing A, 64-row tiles with one consumer warpgroup), float16 / bfloat16 /
float8_e4m3 inputs, odd shapes (tiles past every edge), fewer blocks than tiles (each
block walks several tiles through one ring of stages), fresh random data and a poisoned
output against torch.

One command: PYTHONPATH=python python -m pytest -q -m gpu tests/gpu/test_matmul_warp_specialized_gpu.py
"""

import math

import pytest
import torch

from tilus import bfloat16, float8_e4m3, float16

pytestmark = pytest.mark.gpu

_DTYPES = {torch.float16: float16, torch.bfloat16: bfloat16, torch.float8_e4m3fn: float8_e4m3}


def _hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


needs_hopper = pytest.mark.skipif(not _hopper(), reason="needs sm_90a (TMA, wgmma, setmaxnreg)")


def _run(ex, kernel, m, n, k, dtype):
    a = (torch.rand(m, k, device="cuda") - 0.5) * math.sqrt(12.0)
    b = (torch.rand(n, k, device="cuda") - 0.5) * math.sqrt(12.0)
    a, b = a.to(dtype), b.to(dtype)
    scale = 1.0 / math.sqrt(k)
    out_dtype = torch.bfloat16 if dtype == torch.bfloat16 else torch.float16
    c = torch.full((m, n), float("nan"), dtype=out_dtype, device="cuda")
    kernel(m, n, k, a, b, c, scale)
    torch.cuda.synchronize()
    ref = (a.float() @ b.float().T) * scale
    tol = 3e-2 if dtype == torch.bfloat16 else 2e-2
    torch.testing.assert_close(c.float(), ref, rtol=tol, atol=tol)


@needs_hopper
@pytest.mark.parametrize("dtype", list(_DTYPES))
@pytest.mark.parametrize("config", [(128, 256, 3, "tma", 1), (128, 256, 4, "tma_halves", 1),
                                    (128, 256, 4, "registers", 1), (128, 128, 5, "tma", 1), (256, 128, 3, "tma", 1),
                                    (128, 128, 6, "registers", 2), (128, 128, 6, "registers", 8),  # partials, atomics
                                    (128, 64, 8, "tma", 1), (128, 64, 8, "registers", 2), (128, 112, 6, "tma", 1),
                                    (64, 64, 13, "tma", 1), (64, 192, 6, "registers", 1),  # one consumer warpgroup
                                    (64, 128, 6, "registers", 2),
                                    # ring slots of two or three 128-byte k-boxes
                                    (64, 64, 7, "registers", 1, 2), (64, 64, 4, "tma", 1, 3),
                                    (128, 128, 3, "tma_halves", 1, 2), (128, 64, 4, "registers", 2, 2)])
@pytest.mark.parametrize("cluster_m, cluster_n", [(1, 1), (2, 1), (1, 2)])
@pytest.mark.parametrize("m, n, k, blocks", [(1000, 520, 272, 132), (129, 264, 48, 2), (300, 1032, 1040, 6)])
def test_every_config_matches_torch(example, dtype, config, cluster_m, cluster_n, m, n, k, blocks):
    ex = example("matmul_warp_specialized")
    bm, bn, stages, epilogue, split_k, k_boxes = config if len(config) == 6 else (*config, 1)
    kernel = ex.MatmulWarpSpecialized(block_m=bm, block_n=bn, stages=stages, group_m=8, cluster_m=cluster_m,
                                      cluster_n=cluster_n, epilogue=epilogue, split_k=split_k, dtype=_DTYPES[dtype],
                                      num_blocks=blocks, k_boxes=k_boxes)
    _run(ex, kernel, m, n, k, dtype)
    _run(ex, kernel, m, n, k, dtype)  # again: split-K leaves its counts (and the atomics' plane) zeroed


@needs_hopper
@pytest.mark.parametrize("dtype", list(_DTYPES))
def test_autotuned_wrapper_matches_torch(example, dtype):
    ex = example("matmul_warp_specialized")
    m, n, k = 2000, 3000, 1008
    a = torch.randn(m, k, device="cuda").to(dtype)
    b = (torch.randn(n, k, device="cuda") / math.sqrt(k)).to(dtype)
    c = ex.matmul(a, b, 0.5)
    torch.testing.assert_close(c.float(), (a.float() @ b.float().T) * 0.5, rtol=3e-2, atol=3e-2)


@needs_hopper
def test_wrapper_refuses_rows_tma_cannot_copy(example):
    ex = example("matmul_warp_specialized")
    a = torch.randn(64, 36, device="cuda", dtype=torch.float16)
    b = torch.randn(64, 36, device="cuda", dtype=torch.float16)
    with pytest.raises(ValueError, match="k=36"):
        ex.matmul(a, b)
