"""examples/matmul_a16wx.py compiles through NVRTC for sm_80 and sm_90a for every
weight type family (packed 4/3/6-bit, 8-bit int and FP8), decode and prefill tiles: the
pre-packed weights move by cp.async in 16-byte chunks (4-bit and 8-bit), reach registers
in the mma fragment order and mma.sync after dequantisation (prefill tiles on sm_90a:
dequantised once into a k-major shared tile that wgmma reads), with no layout conversion."""

import pytest
import torch

import tilus
from tilus import bfloat16, float16
from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.conftest import load_example

require_nvrtc()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("w_name,a_dtype,has_zero,tile", [
    ("uint4b", float16, True, (16, 256, 128, 4, 4)),
    ("int4b", bfloat16, False, (128, 128, 64, 1, 4)),
    ("int3b", float16, False, (16, 128, 128, 8, 2)),
    ("float6_e3m2", float16, False, (64, 128, 64, 1, 4)),
    ("int8", float16, False, (16, 256, 64, 8, 4)),
    ("float8_e4m3", bfloat16, False, (128, 256, 32, 1, 8)),
])
def test_a16wx_compiles(w_name, a_dtype, has_zero, tile, arch):
    ex = load_example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    bm, bn, bk, split, warps = tile
    kernel = ex.MatmulA16Wx(a_dtype, w_dtype, 128, has_zero, num_warps=warps, block_m=bm, block_n=bn, block_k=bk,
                            split_k=split, num_stages=3, static_stages=None)
    m, n, k = 16, 4096, 4096
    t = torch.float16 if a_dtype == float16 else torch.bfloat16
    x = torch.zeros(m, k, dtype=t)
    w = ex.prepack(torch.zeros(k, n, dtype=torch.int64), w_dtype)
    s = torch.zeros(k // 128, n, dtype=t)
    src = kernel_source(kernel, (m, n, k, x, w, s, s, torch.zeros(m, n, dtype=t)), arch)
    if bm >= 64 and arch == "sm_90a":  # prefill: dequantised once into shared memory, then wgmma
        assert "wgmma.mma_async" in src and "tilus::store_shared_vec<4>(sbt" in src
    else:
        assert "mma_m16n8k16" in src
    assert "layout conversion through shared memory" not in src
    if w_dtype.bits in (4, 8):  # 16 or 32 bytes per lane and unit
        assert "copy_async with cp.async of 16 bytes" in src
        assert "load_shared_vec<16>" in src
    if w_dtype.bits < 8:
        assert "tilus::unpack_bits<" in src


# (weights, activations, tile, whether the zero points fold): zero points given as uint8
# codes fold into the paired 4-bit conversion's constants (half: codes up to 255 are exact
# there; bfloat16 only to 64, so uint8 codes do not fold), in the 8-row (transposed) and
# 16-row decode tiles and the prefill dequantisation; 3-bit codes convert otherwise.
@pytest.mark.parametrize("w_name,a_dtype,tile,folds", [
    ("uint4b", float16, (8, 128, 128, 4, 2), True),
    ("int4b", float16, (16, 256, 128, 4, 4), True),
    ("uint4b", float16, (128, 128, 64, 1, 4), True),
    ("uint4b", bfloat16, (8, 128, 128, 4, 2), False),
    ("int3b", float16, (16, 128, 128, 8, 2), False),
])
def test_integer_zero_points_fold_into_the_conversion(w_name, a_dtype, tile, folds):
    ex = load_example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    bm, bn, bk, split, warps = tile
    m, n, k = 16, 4096, 4096
    t = torch.float16 if a_dtype == float16 else torch.bfloat16
    args = (m, n, k, torch.zeros(m, k, dtype=t), ex.prepack(torch.zeros(k, n, dtype=torch.int64), w_dtype),
            torch.zeros(k // 128, n, dtype=t))
    marker = "the integer zero points folded into the conversion's constants"
    for zero_dtype, zeros in ((tilus.uint8, torch.zeros(k // 128, n, dtype=torch.uint8)),
                              (None, torch.zeros(k // 128, n, dtype=t))):
        kernel = ex.MatmulA16Wx(a_dtype, w_dtype, 128, True, num_warps=warps, block_m=bm, block_n=bn, block_k=bk,
                                split_k=split, num_stages=3, zero_dtype=zero_dtype,
                                static_stages=None)
        src = kernel_source(kernel, (*args, zeros, torch.zeros(m, n, dtype=t)), "sm_90a")
        # zero points in the activation type may be fractional: never folded
        assert (marker in src) == (folds and zero_dtype is not None), (w_name, zero_dtype)
        if marker in src:
            assert "tilus::int4x8_paired_minus_to_half" in src


@pytest.mark.parametrize("w_name, a_dtype", [("uint4b", float16), ("int3b", float16), ("int3b", bfloat16)])
def test_decode_tiles_do_not_spill(w_name, a_dtype):
    """Every decode tile shape of the tuning space compiles for sm_90a without spills or stack
    (uint4 weights with zero points as codes, folded; 3-bit weights, whose paired codes
    convert three instructions a pair): a fold once cost the 8-row tile its interleaving
    of conversion and mma (255 registers and spills)."""
    from tilus import _C

    ex = load_example("matmul_a16wx")
    w_dtype = getattr(tilus, w_name)
    folded = w_name == "uint4b"
    t = torch.float16 if a_dtype == float16 else torch.bfloat16
    m, n, k = 1, 4096, 4096
    zeros = torch.zeros(k // 128, n, dtype=torch.uint8 if folded else t)
    args = (m, n, k, torch.zeros(m, k, dtype=t), ex.prepack(torch.zeros(k, n, dtype=torch.int64), w_dtype),
            torch.zeros(k // 128, n, dtype=t), zeros, torch.zeros(m, n, dtype=t))
    # the split count is a constant of the chunk size and the last block's test only: one
    # split tile of each shape compiles the loop every split of it runs
    shapes = {}
    for t in ex.TILES:
        if t[0] < 64:
            shapes.setdefault((t[0], t[1], t[2], t[3] > 1, t[4], t[5]), t)
    for bm, bn, bk, split, warps, static in shapes.values():
        kernel = ex.MatmulA16Wx(a_dtype, w_dtype, 128, True, num_warps=warps, block_m=bm, block_n=bn,
                                block_k=bk, split_k=split, num_stages=4, zero_dtype=tilus.uint8 if folded else None,
                                static_stages=static)
        generated = _C.generate_cuda(kernel.compile(*args).program, True, "sm_90a")
        report = _C.runtime.compile_report(generated["source"], generated["name"], "sm_90a", [], None)
        tile = (bm, bn, bk, split, warps, static)
        assert report["spill_bytes"] == 0 and "0 bytes stack frame" in report["log"], (tile, report["log"])
        if folded:
            assert "folded into the conversion's constants" in generated["source"], tile
        else:
            paired = "tilus::int3x8_paired_to<tilus::" + ("half" if a_dtype == float16 else "bfloat16")
            assert paired in generated["source"] and "packed_cast" not in generated["source"], tile
