"""Paired 3-bit codes convert to float16 with one subtraction of constants the instruction
carries (device/lowp_vec.cuh paired3::pair: the low code under 64.0, the high one under
1024.0), where an fma by {1/16, 1} needed that constant in a register, which ptxas
rematerialised about once every two pairs in the A16Wx decode loop (183 IMAD.MOV of 1837
instructions a trip). The values: tests/gpu/test_packed_arith_gpu.py, every code at every
position against the interpreter, bit for bit."""

import tilus
from tests.codegen.nvrtc_compile import require_nvrtc
from tests.conftest import load_benchmark

require_nvrtc()


def test_the_int3_decode_loop_keeps_no_constant_in_registers(nvdisasm):
    sass_loop = load_benchmark("sass_loop")
    counts = sass_loop.loop_mix(sass_loop.build(*sass_loop.a16wx_decode_kernel(tilus.int3b), "sm_90a"), nvdisasm,
                                hot=True)
    # three k-steps a trip, 256 codes a thread a step: a shift, a lop3 and a sub a pair
    assert counts["HFMA2"] == 0 and counts["HADD2"] >= 3 * 256 // 2, counts
    assert counts["IMAD.MOV"] < 8, counts
    # (2425 on the path where every copied tile is inside its tensor, with its tile
    # reordered element by element; 183 more with the rematerialised constants)
    assert sum(counts.values()) < 2500, counts
