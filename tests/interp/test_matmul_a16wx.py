"""examples/matmul_a16wx.py in the CPU interpreter: float16/bfloat16 activations times
packed low-precision weights with group scales (and zero points), split-K included, at
small odd sizes against torch (dequantise, then matmul)."""

import pytest
import torch

import tilus
from tilus import bfloat16, float16
from tests.lang.packed_kernels import pack

CASES = [  # weight type, group, zero points, activation type
    ("uint4b", 64, True, float16), ("int4b", 32, False, float16), ("uint4b", 128, False, bfloat16),
    ("int8", 64, False, float16), ("uint8", 32, True, bfloat16), ("float8_e4m3", 64, False, float16),
    ("int3b", 32, False, float16), ("float6_e3m2", 64, False, bfloat16), ("float4_e2m1", 32, False, float16),
    ("uint2b", 32, True, float16),
]


@pytest.mark.parametrize("w_name,group,has_zero,a_dtype", CASES)
@pytest.mark.parametrize("m,n,k,split_k", [(3, 72, 136, 2), (17, 40, 96, 1)])
def test_matches_dequantised_torch_matmul(example, w_name, group, has_zero, a_dtype, m, n, k, split_k):
    ex = example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    t = {float16: torch.float16, bfloat16: torch.bfloat16}[a_dtype]
    codes, scales, zeros = ex.random_weights(k, n, w_dtype, group, a_dtype, has_zero, "cpu", seed=m + n)
    kernel = ex.MatmulA16Wx(a_dtype, w_dtype, group, has_zero, num_warps=4, block_m=16, block_n=32,
                            block_k=32, split_k=split_k, num_stages=3)
    x = torch.randn(m, k).to(t)
    out = torch.full((m, n), float("nan"), dtype=t)
    kernel(m, n, k, x, ex.pack_weights(codes, w_dtype), scales, zeros if has_zero else scales, out)
    ref = x.float() @ ex.dequantize(codes, w_dtype, scales, zeros, group, a_dtype).float()
    tol = 1e-2 if a_dtype == float16 else 3e-2
    torch.testing.assert_close(out.float(), ref, rtol=tol, atol=tol)


def test_quantized_linear_autotunes_and_matches(example):
    ex = example("matmul_a16wx")
    codes, scales, zeros = ex.random_weights(96, 48, tilus.uint4b, 32, float16, True, "cpu")
    layer = ex.QuantizedLinear(codes, tilus.uint4b, scales, zeros, group_size=32)
    x = torch.randn(5, 96, dtype=torch.float16)
    ref = x.float() @ ex.dequantize(codes, tilus.uint4b, scales, zeros, 32, float16).float()
    torch.testing.assert_close(layer(x).float(), ref, rtol=1e-2, atol=1e-2)


def test_pack_weights_is_tilus_packing(example):
    ex = example("matmul_a16wx")
    g = torch.Generator().manual_seed(0)
    for name in ["uint4b", "int3b", "float6_e3m2", "uint1b", "uint8", "int7b"]:
        dt = getattr(tilus, name)
        codes = torch.randint(0, 1 << dt.bits, (13, 11), generator=g)
        assert ex.pack_weights(codes, dt).tolist() == pack(codes.numpy(), dt.bits).tolist(), name
