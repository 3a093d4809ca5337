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
# (m, n, k, (block_m, block_n, block_k, split_k, num_warps)): a decode tile with split-K
# (one warp column per 64-column unit), an 8-row one (C^T = W^T A^T; two row blocks) and a
# prefill tile of 2 x 2 warps
@pytest.mark.parametrize("m,n,k,tile", [(3, 72, 136, (16, 128, 32, 2, 2)), (11, 200, 136, (8, 128, 32, 2, 2)),
                                        (17, 40, 96, (64, 128, 32, 1, 4))])
def test_matches_dequantised_torch_matmul(example, w_name, group, has_zero, a_dtype, m, n, k, tile):
    ex = example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    t = {float16: torch.float16, bfloat16: torch.bfloat16}[a_dtype]
    codes, scales, zeros = ex.random_weights(k, n, w_dtype, group, a_dtype, has_zero, "cpu", seed=m + n)
    bm, bn, bk, split_k, warps = tile
    kernel = ex.MatmulA16Wx(a_dtype, w_dtype, group, has_zero, num_warps=warps, block_m=bm, block_n=bn,
                            block_k=bk, split_k=split_k, num_stages=3)
    x = torch.randn(m, k).to(t)
    out = torch.full((m, n), float("nan"), dtype=t)
    kernel(m, n, k, x, ex.prepack(codes, w_dtype), scales, zeros if has_zero else scales, out)
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


@pytest.mark.parametrize("w_name,group,has_zero,a_dtype", CASES)
def test_dequantize_weights_is_the_reference_dequantisation(example, w_name, group, has_zero, a_dtype):
    """The prefill path's first step, bit for bit: n and k not multiples of the tile."""
    ex = example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    k, n = 200, 328
    codes, scales, zeros = ex.random_weights(k, n, w_dtype, group, a_dtype, has_zero, "cpu", seed=k + n)
    layer = ex.QuantizedLinear(codes, w_dtype, scales, zeros, group, a_dtype=a_dtype)
    assert torch.equal(layer.dequantized_t("cpu"), ex.dequantize(codes, w_dtype, scales, zeros, group,
                                                                 a_dtype).t().contiguous())


@pytest.mark.parametrize("w_name,group,prefill_kernel", [("int4b", 64, "MatmulA16WxHopper"),
                                                          ("int4b", 32, "MatmulA16WxHopper"),
                                                          ("float6_e3m2", 32, "matmul_warp_specialized")])
def test_prefill_rows_take_the_hopper_path(example, monkeypatch, w_name, group, prefill_kernel):
    # the fused Hopper kernel (groups of 32 too), but for 5- to 7-bit floats from
    # TWO_PASS_WIDE_FLOATS_FROM_M rows dequantise, then matmul
    ex = example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    codes, scales, zeros = ex.random_weights(136, 72, w_dtype, group, bfloat16, False, "cpu")
    layer = ex.QuantizedLinear(codes, w_dtype, scales, None, group_size=group, a_dtype=bfloat16, prefill_m=32)
    monkeypatch.setattr(ex, "TWO_PASS_WIDE_FLOATS_FROM_M", 32)
    ref_w = ex.dequantize(codes, w_dtype, scales, None, group, bfloat16).float()
    for m in (5, 40):
        x = torch.randn(m, 136, dtype=torch.bfloat16)
        assert layer.uses_prefill_path(x) == (m >= 32)
        assert (prefill_kernel in layer.describe(x, None)) == (m >= 32)
        out = torch.full((m, 72), float("nan"), dtype=torch.bfloat16)
        assert layer(x, out) is out
        torch.testing.assert_close(out.float(), x.float() @ ref_w, rtol=3e-2, atol=3e-2)
    # rows TMA cannot copy (k * 2 bytes not a multiple of 16) stay on the fused kernel
    codes, scales, _ = ex.random_weights(36, 72, tilus.int4b, 32, float16, False, "cpu")
    odd = ex.QuantizedLinear(codes, tilus.int4b, scales, group_size=32, prefill_m=1)
    assert not odd.uses_prefill_path(torch.randn(8, 36, dtype=torch.float16))


def test_prefill_kernel_choice(example):
    # the fused Hopper kernel for groups of whole k-steps, but the two-pass path for 5- to
    # 7-bit floats from TWO_PASS_WIDE_FLOATS_FROM_M rows, for groups of 32 as of 64 and more
    ex = example("matmul_a16wx")
    for w_dtype, group, fused_below in ((tilus.uint4b, 128, None), (tilus.float6_e3m2, 64, 2048),
                                        (tilus.int3b, 128, None), (tilus.int4b, 32, None),
                                        (tilus.float5_e2m2, 32, 2048)):
        codes, scales, _ = ex.random_weights(64, 64, w_dtype, group, float16, False, "cpu")
        layer = ex.QuantizedLinear(codes, w_dtype, scales, group_size=group)
        for m in (512, 1024, 2048, 4096, 8192):
            assert layer.fused_prefill(m) == (fused_below is None or m < fused_below), (w_dtype, m)


def test_pack_weights_is_tilus_packing(example):
    ex = example("matmul_a16wx")
    g = torch.Generator().manual_seed(0)
    for name in ["uint4b", "int3b", "float6_e3m2", "uint1b", "uint8", "int7b"]:
        dt = getattr(tilus, name)
        codes = torch.randint(0, 1 << dt.bits, (13, 11), generator=g)
        assert ex.pack_weights(codes, dt).tolist() == pack(codes.numpy(), dt.bits).tolist(), name


def _fragment_codes(padded, i, j, t):
    """The PTX ISA's m16n8k16 B-fragment table, written out here: in unit (i, j), lane
    t = 4g + q holds, for atom a = 0..7 along n and element e = 0..3 (register e // 2,
    half e % 2), the code of row 16i + 2q + (e & 1) + 8 (e >> 1) and column 64j + 8a + g."""
    g, q = t // 4, t % 4
    return [int(padded[16 * i + 2 * q + (e & 1) + 8 * (e >> 1), 64 * j + 8 * a + g])
            for a in range(8) for e in range(4)]


@pytest.mark.parametrize("name", ["uint4b", "int4b", "uint8", "int3b"])
def test_prepack_puts_each_lanes_fragment_codes_in_order(example, name):
    """prepack against the fragment table. 3- and 4-bit integer codes are paired: each 8
    codes (two atoms' fragments, elements f0..f7; a 32-bit word of 4-bit codes) lie as
    f0 f2 f4 f6 f1 f3 f5 f7 from the low bits up, so that codes j and j + 4 are one half2
    of the fragment; other types keep the fragment order, bit-packed from the low bit
    (pack_weights)."""
    ex = example("matmul_a16wx")
    dt = getattr(tilus, name)
    k, n = 40, 150  # neither a multiple of the 16 x 64 unit: the padding holds code 0
    codes = torch.randint(0, 1 << dt.bits, (k, n), generator=torch.Generator().manual_seed(3))
    packed = ex.prepack(codes, dt)
    assert packed.shape == (3, 3, 32, 4 * dt.bits) and packed.dtype == torch.uint8
    padded = torch.zeros(48, 192, dtype=torch.int64)
    padded[:k, :n] = codes & ((1 << dt.bits) - 1)
    for i in range(3):
        for j in range(3):
            for t in range(32):
                expect = _fragment_codes(padded, i, j, t)
                if dt.bits in (3, 4):  # (all the integer types here)
                    expect = [expect[8 * w + p] for w in range(4) for p in (0, 2, 4, 6, 1, 3, 5, 7)]
                stream = int.from_bytes(bytes(packed[i, j, t].tolist()), "little")
                got = [(stream >> (dt.bits * c)) & ((1 << dt.bits) - 1) for c in range(32)]
                assert got == expect, (name, i, j, t)


def test_a_warp_tile_narrower_than_a_unit_is_refused(example):
    ex = example("matmul_a16wx")
    with pytest.raises(AssertionError, match="multiple of 64"):
        ex.MatmulA16Wx(float16, tilus.uint4b, 128, False, block_m=16, block_n=128, block_k=64, split_k=1,
                       num_warps=4, num_stages=3)


@pytest.mark.parametrize("w_name,a_dtype", [("uint4b", float16), ("int4b", bfloat16), ("uint8", float16)])
@pytest.mark.parametrize("tile", [(8, 128, 32, 2, 2), (16, 128, 32, 2, 2), (64, 128, 32, 1, 4)])
def test_zero_points_as_uint8_codes(example, w_name, a_dtype, tile):
    """zero_dtype=uint8: the same integers as codes give the result of the activation-type zeros."""
    ex = example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    t = {float16: torch.float16, bfloat16: torch.bfloat16}[a_dtype]
    m, n, k = 11, 200, 136
    codes, scales, zeros = ex.random_weights(k, n, w_dtype, 32, a_dtype, True, "cpu", seed=3)
    zeros = torch.randint(0, 256, zeros.shape).to(t)
    bm, bn, bk, split_k, warps = tile
    x, packed = torch.randn(m, k).to(t), ex.prepack(codes, w_dtype)
    outs = []
    for zero_dtype, z in ((tilus.uint8, zeros.to(torch.uint8)), (None, zeros)):
        kernel = ex.MatmulA16Wx(a_dtype, w_dtype, 32, True, num_warps=warps, block_m=bm, block_n=bn, block_k=bk,
                                split_k=split_k, num_stages=3, zero_dtype=zero_dtype)
        out = torch.full((m, n), float("nan"), dtype=t)
        kernel(m, n, k, x, packed, scales, z, out)
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    ref = x.float() @ ex.dequantize(codes, w_dtype, scales, zeros, 32, a_dtype).float()
    tol = 1e-2 if a_dtype == float16 else 3e-2
    torch.testing.assert_close(outs[0].float(), ref, rtol=tol, atol=tol * ref.abs().max().item())


def test_quantized_linear_passes_integer_zero_points_as_codes(example):
    ex = example("matmul_a16wx")
    codes, scales, zeros = ex.random_weights(96, 48, tilus.uint4b, 32, float16, True, "cpu")
    assert ex.QuantizedLinear(codes, tilus.uint4b, scales, zeros, group_size=32).zero_codes.dtype == torch.uint8
    for odd in (zeros + 0.5, zeros - 1, zeros + 256):  # fractional, negative, past 255
        assert ex.QuantizedLinear(codes, tilus.uint4b, scales, odd, group_size=32).zero_codes is None


def test_quantized_linear_takes_integer_zero_points_of_any_integer_type(example):
    """GPTQ-style integer zeros (int32 here) work as the same values in the activation type."""
    ex = example("matmul_a16wx")
    codes, scales, zeros = ex.random_weights(96, 48, tilus.uint4b, 32, float16, True, "cpu")
    x = torch.randn(5, 96, dtype=torch.float16)
    ref = ex.QuantizedLinear(codes, tilus.uint4b, scales, zeros, group_size=32)(x)
    layer = ex.QuantizedLinear(codes, tilus.uint4b, scales, zeros.to(torch.int32), group_size=32)
    assert layer.zeros.dtype == torch.float16 and layer.zero_codes.dtype == torch.uint8
    assert torch.equal(layer(x), ref)


@pytest.mark.parametrize("what,make,message", [
    ("scales", lambda s, z: dict(scales=s.float()), r"scales must be torch.float16 \[3, 48\]"),
    ("scales", lambda s, z: dict(scales=s[:2]), r"scales must be torch.float16 \[3, 48\] .* got torch.float16 \[2, 48\]"),
    ("zeros", lambda s, z: dict(zeros=z[:, :40]), r"zeros must be \[3, 48\] like scales"),
    ("zeros", lambda s, z: dict(zeros=z.float()), r"zeros must be integers or torch.float16"),
    ("zeros", lambda s, z: dict(zeros=z.to(torch.int32) + 5000), r"integer zeros must lie within \+-2048"),
])
def test_quantized_linear_refuses_bad_scales_and_zeros(example, what, make, message):
    ex = example("matmul_a16wx")
    codes, scales, zeros = ex.random_weights(96, 48, tilus.uint4b, 32, float16, True, "cpu")
    kwargs = dict(scales=scales, zeros=zeros)
    kwargs.update(make(scales, zeros))
    with pytest.raises(ValueError, match=message):
        ex.QuantizedLinear(codes, tilus.uint4b, group_size=32, **kwargs)


@pytest.mark.parametrize("bad,message", [
    (lambda x: x.float(), r"x must be a contiguous torch.float16 \[m, 96\] tensor on cpu, got torch.float32 \[5, 96\]"),
    (lambda x: x[:, :64], r"x must be a contiguous torch.float16 \[m, 96\]"),
    (lambda x: x.t().contiguous().t(), r"got a non-contiguous torch.float16 \[5, 96\]"),
])
def test_quantized_linear_refuses_bad_activations(example, bad, message):
    ex = example("matmul_a16wx")
    codes, scales, zeros = ex.random_weights(96, 48, tilus.uint4b, 32, float16, True, "cpu")
    layer = ex.QuantizedLinear(codes, tilus.uint4b, scales, zeros, group_size=32)
    x = torch.randn(5, 96, dtype=torch.float16)
    with pytest.raises(ValueError, match=message):
        layer(bad(x))
    with pytest.raises(ValueError, match=r"out must be a contiguous torch.float16 \[5, 48\] tensor on cpu"):
        layer(x, torch.empty(5, 48))


@pytest.mark.parametrize("tile", [(8, 128, 32, 2, 2), (16, 128, 32, 2, 2), (64, 128, 32, 1, 4)])
@pytest.mark.parametrize("stages", [3, 4])
def test_the_k_loop_rolled_or_unrolled_by_the_ring_gives_one_result(example, tile, stages):
    """static_stages (the k loop unrolled by the ring's length; the 8-row tiles' default)
    against the rolled loop: k = 296 leaves each split a number of steps that is not a
    multiple of the ring's length, so the unrolled loop's last round is partial."""
    ex = example("matmul_a16wx")
    m, n, k = {8: 11, 16: 3, 64: 17}[tile[0]], 200, 296
    codes, scales, zeros = ex.random_weights(k, n, tilus.uint4b, 32, float16, True, "cpu", seed=m)
    x = torch.randn(m, k).to(torch.float16)
    outs = []
    for static in (False, True):
        kernel = ex.MatmulA16Wx(float16, tilus.uint4b, 32, True, *tile, stages, static_stages=static)
        out = torch.full((m, n), float("nan"), dtype=torch.float16)
        kernel(m, n, k, x, ex.prepack(codes, tilus.uint4b), scales, zeros, out)
        outs.append(out)
    ref = x.float() @ ex.dequantize(codes, tilus.uint4b, scales, zeros, 32, float16).float()
    torch.testing.assert_close(outs[1].float(), ref, rtol=1e-2, atol=1e-2)
    assert torch.equal(outs[0], outs[1])
