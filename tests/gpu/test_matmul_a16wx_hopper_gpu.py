"""examples/matmul_a16wx_hopper.py on an sm_90 GPU against torch (dequantise, then matmul in
fp32): odd m, n, k, several weight types, zero points, float16 and bfloat16, outputs
poisoned before each run, fresh random data per run; every autotuned configuration."""

import pytest
import torch

import tilus
from tilus import bfloat16, float16

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
                                 reason="needs an sm_90 GPU (TMA, wgmma)")]

TYPES = [("uint4b", 128, True, float16), ("int4b", 64, False, bfloat16), ("int8", 128, False, float16),
         ("float8_e4m3", 128, False, bfloat16), ("int3b", 128, False, float16),
         ("float6_e3m2", 64, True, float16), ("uint2b", 128, True, float16),
         ("int3b", 32, False, float16), ("uint4b", 32, True, bfloat16)]  # groups of 32: two scale rows a step
SHAPES = [(4096, 4096, 4096), (1000, 1032, 4104), (257, 14336, 520)]


def _check(ex, hx, kernel, w_dtype, group, has_zero, a_dtype, m, n, k):
    t = torch.float16 if a_dtype == float16 else torch.bfloat16
    codes, scales, zeros = ex.random_weights(k, n, w_dtype, group, a_dtype, has_zero, "cuda",
                                             seed=int(torch.randint(0, 1 << 30, ())))
    x = torch.randn(m, k, device="cuda").to(t)
    out = torch.full((m, n), float("nan"), dtype=t, device="cuda")
    kernel(m, n, k, x, hx.prepack_hopper(codes, w_dtype), scales, zeros if has_zero else scales, out)
    ref = x.float() @ ex.dequantize(codes, w_dtype, scales, zeros, group, a_dtype).float()
    tol = 1e-2 if a_dtype == float16 else 3e-2
    torch.testing.assert_close(out.float(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("w_name,group,has_zero,a_dtype", TYPES)
def test_autotuned_matches_torch(example, w_name, group, has_zero, a_dtype, m, n, k):
    ex, hx = example("matmul_a16wx"), example("matmul_a16wx_hopper")
    w_dtype = getattr(tilus, w_name)
    kernel = hx.MatmulA16WxHopper(a_dtype, w_dtype, group, has_zero)
    _check(ex, hx, kernel, w_dtype, group, has_zero, a_dtype, m, n, k)


@pytest.mark.parametrize("block_m,stages", [(256, 3), (256, 4), (256, 5)])
@pytest.mark.parametrize("group_m", [8, 16])
def test_every_configuration_matches_torch(example, block_m, stages, group_m):
    ex, hx = example("matmul_a16wx"), example("matmul_a16wx_hopper")
    kernel = hx.MatmulA16WxHopper(float16, tilus.uint4b, 128, True, block_m=block_m, stages=stages, group_m=group_m)
    _check(ex, hx, kernel, tilus.uint4b, 128, True, float16, 1000, 1032, 4104)


def test_quantized_linear_prefill_uses_the_fused_kernel(example):
    ex = example("matmul_a16wx")
    codes, scales, zeros = ex.random_weights(4096, 4104, tilus.uint4b, 128, float16, True, "cuda", seed=3)
    layer = ex.QuantizedLinear(codes, tilus.uint4b, scales, zeros, 128)
    x = torch.randn(1500, 4096, device="cuda").half()
    assert layer.describe(x).startswith("MatmulA16WxHopper")
    ref = x.float() @ ex.dequantize(codes, tilus.uint4b, scales, zeros, 128, float16).float()
    torch.testing.assert_close(layer(x).float(), ref, rtol=1e-2, atol=1e-2)
