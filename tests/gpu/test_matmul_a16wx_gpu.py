"""examples/matmul_a16wx.py on the GPU against torch (dequantise, then matmul in fp32):
odd m, n, k, every tile family, split-K, zero points, float16 and bfloat16, outputs
poisoned before each run, fresh random data per run; and the autotuned entry point."""

import pytest
import torch

import tilus
from tilus import bfloat16, float16

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

TYPES = [("uint4b", 128, True), ("int4b", 64, False), ("uint8", 128, True), ("int8", 32, False),
         ("float8_e4m3", 128, False), ("int3b", 64, False), ("float6_e3m2", 32, False),
         ("float4_e2m1", 128, False), ("uint2b", 64, True)]
# (tile, shape): decode tiles with split-K at decode shapes (the 8-row ones compute C^T:
# m = 11 spans two row blocks), prefill tiles at odd shapes
# (block_m, block_n, block_k, split_k, num_warps)
RUNS = [((16, 256, 128, 1, 4), (1, 4096, 4096)), ((16, 128, 64, 16, 2), (16, 1000, 4104)),
        ((8, 128, 128, 8, 2), (1, 4096, 4096)), ((8, 256, 64, 4, 4), (11, 1000, 4104)),
        ((16, 256, 64, 8, 4), (37, 130, 500)), ((64, 128, 64, 1, 4), (300, 520, 1000)),
        ((128, 256, 32, 1, 8), (37, 130, 500))]


def _check(ex, w_dtype, group, has_zero, a_dtype, m, n, k, run, seed):
    t = torch.float16 if a_dtype == float16 else torch.bfloat16
    codes, scales, zeros = ex.random_weights(k, n, w_dtype, group, a_dtype, has_zero, "cuda", seed=seed)
    x = torch.randn(m, k, device="cuda").to(t)
    out = torch.full((m, n), float("nan"), dtype=t, device="cuda")
    run(x, ex.prepack(codes, w_dtype), scales, zeros if has_zero else scales, out)
    ref = x.float() @ ex.dequantize(codes, w_dtype, scales, zeros, group, a_dtype).float()
    tol = 1e-2 if a_dtype == float16 else 3e-2
    torch.testing.assert_close(out.float(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("tile,shape", RUNS)
@pytest.mark.parametrize("w_name,group,has_zero", TYPES)
def test_a16wx_matches_torch(example, w_name, group, has_zero, tile, shape):
    ex = example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    bm, bn, bk, split, warps = tile
    m, n, k = shape
    for a_dtype in (float16, bfloat16):
        kernel = ex.MatmulA16Wx(a_dtype, w_dtype, group, has_zero, num_warps=warps, block_m=bm, block_n=bn,
                                block_k=bk, split_k=split, num_stages=3)
        for seed in range(2):
            _check(ex, w_dtype, group, has_zero, a_dtype, m, n, k,
                   lambda x, w, s, z, c: kernel(m, n, k, x, w, s, z, c), seed)


@pytest.mark.parametrize("w_name,group,has_zero", [("uint4b", 128, True), ("int4b", 64, False), ("int3b", 64, False)])
@pytest.mark.parametrize("tile,shape", [((16, 128, 128, 4, 2), (16, 14336, 4096)), ((16, 128, 128, 4, 2), (7, 1000, 4104)),
                                        ((8, 128, 128, 8, 2), (5, 1000, 4104))])
def test_k_loop_unrolled_by_the_ring_or_not(example, w_name, group, has_zero, tile, shape):
    """static_stages on and off (a 16-row tile of the tuning space takes it; the 8-row
    tiles by default): both match torch, at k that leaves a partial last round."""
    ex = example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    m, n, k = shape
    for static in (False, True):
        kernel = ex.MatmulA16Wx(float16, w_dtype, group, has_zero, *tile, num_stages=3, static_stages=static)
        _check(ex, w_dtype, group, has_zero, float16, m, n, k,
               lambda x, w, s, z, c: kernel(m, n, k, x, w, s, z, c), seed=k + static)


@pytest.mark.parametrize("m", [1, 16, 333])
def test_quantized_linear_autotuned(example, m):
    ex = example("matmul_a16wx")
    n, k = 1536, 2048
    codes, scales, zeros = ex.random_weights(k, n, tilus.uint4b, 128, float16, True, "cuda", seed=m)
    layer = ex.QuantizedLinear(codes, tilus.uint4b, scales, zeros, 128)
    x = torch.randn(m, k, device="cuda").half()
    ref = x.float() @ ex.dequantize(codes, tilus.uint4b, scales, zeros, 128, float16).float()
    torch.testing.assert_close(layer(x).float(), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("w_name,group,has_zero", [("uint4b", 128, True), ("int8", 32, False),
                                                    ("float8_e4m3", 128, False), ("int3b", 64, False)])
@pytest.mark.parametrize("a_dtype", [float16, bfloat16])
def test_prefill_path(example, w_name, group, has_zero, a_dtype):
    """From QuantizedLinear.prefill_m rows on (Hopper): the fused Hopper kernel (groups of
    32 too: two scale rows a k-step); odd m, n and k not multiples of the tiles."""
    ex = example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    t = torch.float16 if a_dtype == float16 else torch.bfloat16
    m, n, k = 700, 1032, 520
    codes, scales, zeros = ex.random_weights(k, n, w_dtype, group, a_dtype, has_zero, "cuda", seed=m)
    layer = ex.QuantizedLinear(codes, w_dtype, scales, zeros, group, a_dtype=a_dtype)
    deq = ex.dequantize(codes, w_dtype, scales, zeros, group, a_dtype)
    x = torch.randn(m, k, device="cuda").to(t)
    hopper = torch.cuda.get_device_capability() == (9, 0)
    assert layer.uses_prefill_path(x) == hopper
    if hopper:
        assert torch.equal(layer.dequantized_t("cuda"), deq.t().contiguous())
    out = torch.full((m, n), float("nan"), dtype=t, device="cuda")
    layer(x, out)
    tol = 1e-2 if a_dtype == float16 else 3e-2
    torch.testing.assert_close(out.float(), x.float() @ deq.float(), rtol=tol, atol=tol)


@pytest.mark.parametrize("w_name", ["uint4b", "int4b", "uint2b"])
@pytest.mark.parametrize("a_dtype", [float16, bfloat16])
@pytest.mark.parametrize("tile,shape", [((8, 128, 128, 1, 2), (3, 1000, 4104)), ((16, 256, 64, 4, 4), (16, 4096, 4096)),
                                        ((64, 128, 64, 1, 4), (300, 520, 1000))])
def test_zero_codes_are_bit_for_bit_the_activation_type_zeros(example, w_name, a_dtype, tile, shape):
    """Zero points as uint8 codes (folded into the 4-bit conversion in half) give exactly
    the result of the same integers in the activation type (subtracted after it)."""
    ex = example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    bm, bn, bk, split, warps = tile
    m, n, k = shape
    t = torch.float16 if a_dtype == float16 else torch.bfloat16
    codes, scales, zeros = ex.random_weights(k, n, w_dtype, 64, a_dtype, True, "cuda", seed=m)
    zeros = torch.randint(0, 256 if a_dtype == float16 else 65, zeros.shape, device="cuda").to(t)  # all of uint8
    packed, x = ex.prepack(codes, w_dtype), torch.randn(m, k, device="cuda").to(t)
    outs = []
    for zero_dtype, z in ((tilus.uint8, zeros.to(torch.uint8)), (None, zeros)):
        kernel = ex.MatmulA16Wx(a_dtype, w_dtype, 64, True, num_warps=warps, block_m=bm, block_n=bn, block_k=bk,
                                split_k=split, num_stages=3, zero_dtype=zero_dtype)
        out = torch.full((m, n), float("nan"), dtype=t, device="cuda")
        kernel(m, n, k, x, packed, scales, z, out)
        outs.append(out)
    ref = x.float() @ ex.dequantize(codes, w_dtype, scales, zeros, 64, a_dtype).float()
    tol = 1e-2 if a_dtype == float16 else 3e-2
    torch.testing.assert_close(outs[0].float(), ref, rtol=tol, atol=tol * ref.abs().max().item())
    if split == 1:  # split-K partials meet through atomics in any order
        assert torch.equal(outs[0], outs[1])
    else:
        # each atomic add rounds to the output type, in another order each run: a few
        # units in the last place of the largest partial sum apart (1 bf16 ulp at 12.5
        # is 0.0625, seen once)
        ulps = 3 * torch.finfo(t).eps * ref.abs().max().item()
        torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=ulps)


def test_quantized_linear_zero_points_integer_or_not(example):
    """Integer zero points reach the decode kernel as uint8 codes; fractional ones stay in
    the activation type; both match torch."""
    ex = example("matmul_a16wx")
    k, n = 2048, 1536
    codes, scales, zeros = ex.random_weights(k, n, tilus.uint4b, 128, float16, True, "cuda", seed=5)
    for zs, codes_kept in ((zeros, True), (zeros + 0.375, False)):
        layer = ex.QuantizedLinear(codes, tilus.uint4b, scales, zs, 128)
        assert (layer.zero_codes is not None) == codes_kept
        for m in (1, 16):
            x = torch.randn(m, k, device="cuda").half()
            ref = x.float() @ ex.dequantize(codes, tilus.uint4b, scales, zs, 128, float16).float()
            torch.testing.assert_close(layer(x).float(), ref, rtol=1e-2, atol=1e-2)
