"""examples/matmul_a16wx_hopper.py in the CPU interpreter: the fused Hopper A16Wx kernel
(weights as wgmma's register operand, dequantised in the main loop) against torch at small
odd sizes (groups of 32, 64 and 128), and its packing."""

import pytest
import torch

import tilus
from tilus import bfloat16, float16

CASES = [  # weight type, group, zero points, activation type
    ("uint4b", 128, True, float16), ("int4b", 64, False, bfloat16), ("int8", 64, False, float16),
    ("float8_e4m3", 128, False, float16), ("int3b", 64, False, float16), ("float6_e3m2", 128, True, bfloat16),
    ("uint2b", 64, True, float16), ("int3b", 32, False, float16), ("uint4b", 32, True, bfloat16),
]


@pytest.mark.parametrize("w_name,group,has_zero,a_dtype", CASES)
def test_matches_dequantised_torch_matmul(example, w_name, group, has_zero, a_dtype):
    ex, hx = example("matmul_a16wx"), example("matmul_a16wx_hopper")
    w_dtype = getattr(tilus, w_name)
    t = {float16: torch.float16, bfloat16: torch.bfloat16}[a_dtype]
    m, n, k = 140, 136, 200  # a partial M tile, a partial N tile, a partial k-step and group
    codes, scales, zeros = ex.random_weights(k, n, w_dtype, group, a_dtype, has_zero, "cpu", seed=n + group)
    kernel = hx.MatmulA16WxHopper(a_dtype, w_dtype, group, has_zero, block_m=256, stages=3, group_m=8,
                                  num_blocks=2)  # 2 blocks for 2 tiles x 2 units: the persistent loop turns
    x = torch.randn(m, k).to(t)
    out = torch.full((m, n), float("nan"), dtype=t)
    kernel(m, n, k, x, hx.prepack_hopper(codes, w_dtype), scales, zeros if has_zero else scales, out)
    ref = x.float() @ ex.dequantize(codes, w_dtype, scales, zeros, group, a_dtype).float()
    tol = 1e-2 if a_dtype == float16 else 3e-2
    torch.testing.assert_close(out.float(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("w_name", ["uint4b", "int8", "int3b"])
def test_each_code_lands_where_its_thread_holds_it(example, w_name):
    # prepack_hopper puts code (row, col) of a W^T tile in the bytes of the thread whose
    # wgmma A fragment holds it, at the position fragment_layout gives it
    hx = example("matmul_a16wx_hopper")
    w_dtype = getattr(tilus, w_name)
    k, n = 64, 128
    codes = (torch.arange(k * n).view(k, n) * 7 + 3) % (1 << w_dtype.bits)
    packed = hx.prepack_hopper(codes, w_dtype)
    assert list(packed.shape) == [1, 1, 32 * w_dtype.bits, 32] and packed.dtype == torch.uint8
    bits = packed.view(-1).numpy()
    layout = hx.fragment_layout(hx.is_paired(w_dtype))
    for t in (0, 5, 131, 255):
        for l in (0, 1, 9, 31):
            row, col = layout.coords(t, l)  # W^T[row, col] = W[col, row]
            at = (t * 32 + l) * w_dtype.bits
            word = int.from_bytes(bytes(bits[at // 8: at // 8 + 3].tolist()) + b"\0", "little")
            assert (word >> (at % 8)) & ((1 << w_dtype.bits) - 1) == codes[col, row]


def test_a_fragment_layout_is_wgmmas(example):
    from tilus.layout import local, mma_atom, spatial

    hx = example("matmul_a16wx_hopper")
    assert hx.fragment_layout(False) == spatial(2, 1) * local(1, 4) * spatial(4, 1) * mma_atom("m16n8k16")["a"]


def test_group_size_must_be_a_multiple_of_32(example):
    # one scale row per k-step of 64, or two for groups of 32
    hx = example("matmul_a16wx_hopper")
    with pytest.raises(ValueError, match="group_size must be a multiple of 32"):
        hx.MatmulA16WxHopper(float16, tilus.uint4b, 48, False, block_m=256, stages=3, group_m=8)
