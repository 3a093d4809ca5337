"""Explicit wgmma (Tilus 0.2's self.wgmma) on an sm_90 GPU against torch: fresh random
data, problem sizes that are not multiples of the tiles (the cp.async loads mask them),
outputs poisoned with NaN before each run. Covers every shared layout the operands can
take (128-, 64-, 32-byte swizzle and none; K-major and MN-major), float16, bfloat16,
tfloat32 and float8 operands, A in registers, one and two warpgroups, the pipelined example over its
autotune space, and results landing at the wait of their commit group.

    pytest -m gpu tests/gpu/test_wgmma_explicit_gpu.py
"""

import math

import pytest
import torch

import tilus
from tests.interp.test_wgmma_explicit import TwoGroups, WgmmaAMajor, WgmmaBT, WgmmaRS
from tilus import bfloat16, float16

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
                       reason="wgmma needs an sm_90 GPU"),
]


def _rand(*shape, k, dtype=torch.float16):
    """Uniform entries of variance 1/sqrt(k): a k-long product of two has unit variance
    (small enough entries would pass any tolerance)."""
    return ((torch.rand(*shape, device="cuda") - 0.5) * math.sqrt(12.0) / k ** 0.25).to(dtype)


def _poisoned(m, n, dtype=torch.float32):
    return torch.full((m, n), float("nan"), dtype=dtype, device="cuda")


@pytest.mark.parametrize("bk", [16, 32, 48, 64])  # A and B K-major: 32-, 64-byte swizzle, none, 128-byte
@pytest.mark.parametrize("m, n, k", [(200, 130, 208), (64, 64, 64), (333, 257, 1000)])
def test_k_major_float16(m, n, k, bk):
    a, b = _rand(m, k, k=k), _rand(n, k, k=k)
    c = _poisoned(m, n)
    WgmmaBT(block_m=128, block_n=64, block_k=bk)(m, n, k, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("warps, bm, bn", [(4, 64, 256), (8, 128, 128), (8, 64, 128)])
def test_bfloat16_warpgroup_grids(warps, bm, bn):
    m, n, k = 300, 270, 200
    a, b = _rand(m, k, k=k, dtype=torch.bfloat16), _rand(n, k, k=k, dtype=torch.bfloat16)
    c = _poisoned(m, n)
    WgmmaBT(block_m=bm, block_n=bn, block_k=32, warps=warps, dtype=bfloat16)(m, n, k, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


def test_tfloat32():
    m, n, k = 130, 70, 100
    a, b = _rand(m, k, k=k, dtype=torch.float32), _rand(n, k, k=k, dtype=torch.float32)
    c = _poisoned(m, n)
    WgmmaBT(block_m=64, block_n=64, block_k=32, dtype=tilus.tfloat32)(m, n, k, a, b, c)
    # the tensor cores read 10 mantissa bits of each operand
    torch.testing.assert_close(c, a @ b.T, rtol=1e-2, atol=6e-3)


def test_float8_e4m3():
    m, n, k = 130, 72, 160
    a, b = _rand(m, k, k=k).to(torch.float8_e4m3fn), _rand(n, k, k=k).to(torch.float8_e4m3fn)
    c = _poisoned(m, n)
    WgmmaBT(block_m=64, block_n=72, block_k=64, dtype=tilus.float8_e4m3)(m, n, k, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("bn", [64, 32, 16, 40])  # B N-major: 128-, 64-, 32-byte swizzle, none
def test_mn_major_operands(bn):
    m, n, k = 150, 100, 96
    a, b = _rand(m, k, k=k), _rand(k, n, k=k)
    c = _poisoned(m, n)
    WgmmaAMajor(bn)(m, n, k, a.T.contiguous(), b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("warps, bm, dtype", [(4, 128, float16), (8, 64, bfloat16), (8, 128, float16)])
def test_register_a(warps, bm, dtype):
    m, n, k = 333, 130, 200
    tdtype = torch.float16 if dtype is float16 else torch.bfloat16
    a, b = _rand(m, k, k=k, dtype=tdtype), _rand(n, k, k=k, dtype=tdtype)
    c = _poisoned(m, n)
    WgmmaRS(block_m=bm, warps=warps, dtype=dtype)(m, n, k, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


def test_register_a_float8():
    m, n, k = 130, 64, 128
    a, b = _rand(m, k, k=k).to(torch.float8_e4m3fn), _rand(n, k, k=k).to(torch.float8_e4m3fn)
    c = _poisoned(m, n)
    WgmmaRS(block_m=64, block_k=32, dtype=tilus.float8_e4m3)(m, n, k, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("m, n, k", [(1000, 1030, 520), (4096, 4096, 4096), (129, 65, 4000)])
def test_pipelined_example(example, m, n, k):
    kernel = example("matmul_wgmma").MatmulWgmma()  # autotuned over its 16 configurations
    a, b = _rand(m, k, k=k), _rand(k, n, k=k)
    c = _poisoned(m, n, torch.float16)
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("config", [(4, 128, 128, 64, 4), (8, 128, 256, 64, 3), (4, 64, 256, 32, 3)])
def test_pipelined_example_configs(example, config):
    kernel = example("matmul_wgmma").MatmulWgmma(*config)
    m, n, k = 777, 555, 1000
    a, b = _rand(m, k, k=k), _rand(k, n, k=k)
    c = _poisoned(m, n, torch.float16)
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)


def test_results_land_at_their_wait():
    a, b = _rand(64, 16, k=16), _rand(16, 64, k=16)
    c1, c2 = _poisoned(64, 64), _poisoned(64, 64)
    TwoGroups()(a, b, c1, c2)
    expected = a.float() @ b.float()
    torch.testing.assert_close(c1, expected, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(c2, 1.0 + 2 * expected, rtol=1e-3, atol=1e-3)
