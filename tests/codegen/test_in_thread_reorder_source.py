"""In-thread layout conversions of 8- and 16-bit elements move whole 32-bit words when
every word keeps its elements together (csrc/codegen/emit_memory.cc, CudaEmitter::convert),
and FP8 codes convert four a word without shifting the upper pair down
(csrc/codegen/device/lowp_vec.cuh). Element by element, the compiler split and rejoined
every register: the A16Wx decode kernel's dequantised fp8 tile (its fragments' order is a
reorder of the cast's) spent a shift and a prmt a word on it, and each pair of FP8 codes
another shift (2034 -> 1071 instructions a trip of its main loop)."""

import os

import pytest

from tests.conftest import load_benchmark
from tilus import _C, float8_e4m3, int8

rt = _C.runtime
if not rt.nvrtc_available():
    if os.environ.get("TILUS_REQUIRE_NVRTC"):
        raise RuntimeError("TILUS_REQUIRE_NVRTC is set but NVRTC cannot be loaded")
    pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc)", allow_module_level=True)

sass_loop = load_benchmark("sass_loop")


@pytest.mark.parametrize("w_dtype", [float8_e4m3, int8])
def test_a_reorder_that_keeps_words_together_moves_words(w_dtype):
    kernel, args = sass_loop.a16wx_decode_kernel(w_dtype)
    program = kernel.compile(*args).program
    source = _C.generate_cuda(program, True, "sm_90a")["source"]
    assert "a 32-bit word at a time" in source
    # the reordered tile is the float16 result of the cast: two elements a word
    assert "[2 * tl_order" in source and ", 4);" in source
    # no 16-bit reorder is left element by element
    assert "// layout conversion within each thread\n" not in source


def test_the_fp8_decode_loop_has_no_shifts_or_prmts_for_its_conversion(nvdisasm):
    counts = sass_loop.loop_mix(sass_loop.build(*sass_loop.a16wx_decode_kernel(float8_e4m3), "sm_90a"), nvdisasm)
    # three k-steps a trip, 256 codes a thread a step: one cvt (F2FP) a pair of codes
    assert counts["F2FP"] == 3 * 256 // 2
    assert counts["PRMT"] == 0, counts
    assert counts["SHF.R"] < 16, counts  # (a few address computations)
    assert sum(counts.values()) < 1200, counts
