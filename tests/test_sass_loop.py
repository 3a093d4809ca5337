"""benchmarks/sass_loop.py: the instruction mix of a kernel's main loop, from its SASS."""

import pytest
import torch

from tests.conftest import load_benchmark

sass_loop = load_benchmark("sass_loop")

# nvdisasm's layout: labels on lines of their own, branch targets as `(.L_x_N)
_SASS = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   LDS.128 R4, [R2] ;
.L_x_1:
        /*0020*/                   IMAD.SHL.U32 R8, R4, 0x100, RZ ;
        /*0030*/                   LOP3.LUT R8, R8, 0x1f001f00, RZ, 0xc0, !PT ;
        /*0040*/               @P1 BRA `(.L_x_1) ;
        /*0050*/                   HGMMA.64x128x16.F32 R24, R152, gdesc[UR8], R24 ;
        /*0060*/                   IMAD R9, R9, R10, R11 ;
        /*0070*/              @!P0 BRA `(.L_x_0) ;
        /*0080*/                   @P2 BRA `(.L_x_2) ;
.L_x_2:
        /*0090*/                   EXIT ;
"""


def test_the_main_loop_is_the_shortest_loop_on_the_tensor_cores():
    # .L_x_1..0x40 is shorter but multiplies nothing on the tensor cores; the loop back to
    # .L_x_0 holds the HGMMA; the forward branch to .L_x_2 is no loop
    body = sass_loop.main_loop(_SASS)
    assert [address for address, _ in body] == [0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70]
    counts = sass_loop.mix(body)
    assert counts == {"LDS": 1, "IMAD.SHL": 1, "LOP3": 1, "BRA": 2, "HGMMA": 1, "IMAD": 1}


# ptxas lays a slow path (an mbarrier wait's retry) out after the kernel and branches back
# into the middle of the loop: the range from that label to the slow path's branch is a
# "loop" too, shorter than the real one but holding only part of its tensor-core work
_SASS_WITH_SLOW_PATH = """
.L_x_0:
        /*0000*/                   HGMMA.64x128x16.F32 R24, R152, gdesc[UR8], R24 ;
        /*0010*/                   FMUL R1, R1, R2 ;
        /*0020*/                   FMUL R1, R1, R2 ;
        /*0030*/                   FMUL R1, R1, R2 ;
        /*0040*/                   FMUL R1, R1, R2 ;
        /*0050*/                   FMUL R1, R1, R2 ;
        /*0060*/               @P0 BRA `(.L_x_9) ;
.L_x_1:
        /*0070*/                   HGMMA.64x128x16.F32 R24, R156, gdesc[UR8], R24 ;
        /*0080*/              @!P1 BRA `(.L_x_0) ;
        /*0090*/                   EXIT ;
.L_x_9:
        /*00a0*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R3], R4 ;
        /*00b0*/                   BRA `(.L_x_1) ;
"""


def test_a_slow_path_that_branches_back_into_the_loop_is_not_the_main_loop():
    body = sass_loop.main_loop(_SASS_WITH_SLOW_PATH)
    assert [address for address, _ in body] == list(range(0x00, 0x90, 0x10))
    assert sass_loop.mix(body)["HGMMA"] == 2


def test_a_kernel_without_tensor_core_loops_has_no_main_loop():
    assert sass_loop.main_loop(_SASS.replace("HGMMA.64x128x16.F32", "FFMA")) == []


def test_opcodes_keep_what_tells_a_shift_from_a_multiply():
    assert sass_loop.opcode("@!P0 IMAD.SHL.U32 R1, R2, 0x100, RZ") == "IMAD.SHL"
    assert sass_loop.opcode("IMAD.MOV.U32 R1, RZ, RZ, R2") == "IMAD.MOV"
    assert sass_loop.opcode("IMAD R1, R2, R3, R4") == "IMAD"
    assert sass_loop.opcode("@UP0 SHF.R.U32.HI R1, RZ, 0x6, R2") == "SHF.R"
    assert sass_loop.opcode("HMUL2 R1, R1, 4096, 4096") == "HMUL2"


def test_a_real_kernel_s_main_loop_multiplies_on_the_tensor_cores(example, nvdisasm):
    from tilus import _C

    if not _C.runtime.nvrtc_available():
        pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc)")
    z = torch.zeros(4, 4, dtype=torch.float16)
    kernel = example("matmul_v3_pipeline").MatmulV3()
    counts = {}
    for arch, tensor_op in (("sm_80", "HMMA"), ("sm_90a", "HGMMA")):
        cubin = sass_loop.build(kernel, (4096, 4096, 4096, z, z, z), arch)
        counts[arch] = sass_loop.mix(sass_loop.main_loop(sass_loop.disassemble(cubin, nvdisasm)))
        assert counts[arch][tensor_op] > 0, (arch, counts[arch])
    # a 128 x 128 tile of mma.sync m16n8k16 takes far more instructions a k-step than wgmma's
    assert counts["sm_80"]["HMMA"] > counts["sm_90a"]["HGMMA"]


# A tile copy in two forms (codegen's whole-tile test picks one): the bounds-tested copies
# carry a source size (P2, R7), the whole-tile ones none. A guarded copy (@P0) is neither.
_SASS_WITH_TWO_COPY_FORMS = """
.L_x_0:
        /*0000*/                   HMMA.16816.F32 R24, R4, R8, R24 ;
        /*0010*/              @!P0 LDGSTS.E.BYPASS.128 [R84+0x1000], desc[UR6][R118.64], P2 ;
        /*0020*/               @P4 BRA P1, `(.L_x_1) ;
        /*0030*/                   ISETP.LT.U32.AND P2, PT, R7, 0xe0, PT ;
        /*0040*/                   LDGSTS.E.BYPASS.128 [R75+0x9800], desc[UR6][R24.64], P2 ;
        /*0050*/                   LDGSTS.E.BYPASS.128 [R74+0x9c00], desc[UR6][R26.64], R7 ;
        /*0060*/                   BRA `(.L_x_2) ;
.L_x_1:
        /*0070*/                   LDGSTS.E.BYPASS.128 [R75+0x9800], desc[UR6][R24.64] ;
        /*0080*/                   LDGSTS.E.BYPASS.128 [R74+0x9c00], desc[UR6][R24.64+0x400] ;
.L_x_2:
        /*0090*/                   LDGDEPBAR ;
        /*00a0*/              @!P3 BRA `(.L_x_0) ;
"""


def test_the_hot_path_drops_the_bounds_tested_twin_of_a_copy():
    body = sass_loop.main_loop(_SASS_WITH_TWO_COPY_FORMS)
    assert len(body) == 11
    hot = sass_loop.hot_path(_SASS_WITH_TWO_COPY_FORMS, body)
    assert [address for address, _ in hot] == [0x00, 0x10, 0x20, 0x70, 0x80, 0x90, 0xa0]


def test_a_tested_copy_without_a_whole_tile_twin_stays_on_the_hot_path():
    only_tested = _SASS_WITH_TWO_COPY_FORMS.replace("[R24.64] ;", "[R24.64], P5 ;")
    body = sass_loop.main_loop(only_tested)
    # the second form now carries a size too: neither run is an untested twin
    assert sass_loop.hot_path(only_tested, body) == body
