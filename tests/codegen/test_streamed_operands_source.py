"""Large dot operands loaded from shared memory right before their dot are loaded one k
step at a time inside the dot's loop (CudaEmitter::find_streamed_operands), so ptxas does
not hold the whole tile: a 64x128 K or V tile is 128 registers a thread, and Tilus 0.2's
attention v2 (4 warps, 64x64 blocks, d = 128) spilled 1016 bytes with whole-tile loads, 88
after. Semantics: tests/interp/test_streamed_operands.py; GPU: tests/gpu/test_streamed_operands_gpu.py."""

import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc, rt
from tests.interp.test_streamed_operands import TwoDotsOverSharedTiles
from tilus import _C

require_nvrtc()

STREAMED = "one k step at a time inside its dot"


def args(d=128, **_):
    half = torch.zeros(64, d).half()
    return half, half, half, torch.zeros(64, d), 64, 64


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("between,streamed", [("registers", 2), ("sync", 2), ("store", 1)])
def test_k_and_v_are_loaded_inside_their_dots(arch, between, streamed):
    """K and V are streamed; a barrier between V's load and its dot changes nothing, a
    shared-memory store keeps V's load where the script put it (whole, before the store)."""
    src = kernel_source(TwoDotsOverSharedTiles(between=between), args(), arch)
    assert src.count(STREAMED) == streamed
    # K's plain ldmatrix (B^T, untransposed) sits inside the first dot's k loop
    first_dot = src.index("// dot:")
    assert src.index("tilus::ldmatrix_x4(rk_u32") > first_dot
    # V's transposing load: inside the second dot when streamed, before it (and the store) when not
    second_dot = src.index("// dot:", first_dot + 1)
    v_load = src.index("tilus::ldmatrix_x4_trans(rv_u32")
    assert (v_load > second_dot) == (streamed == 2)
    if between == "store":
        assert v_load < src.index("store_shared_vec")
    # the transpose of K is K's registers under another name: no copy
    assert "= rk[i];" not in src


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("config", [dict(), dict(d=128, bq=128, bkv=64, warps=8)])
def test_streamed_operands_leave_registers(arch, config):
    """With both 128-register tiles streamed the kernel fits without spilling and with
    registers to spare (whole-tile loads: K or V alone, q, s and the accumulator fill the
    255 registers)."""
    generated = _C.generate_cuda(TwoDotsOverSharedTiles(**config).compile(*args(**config)).program, True, arch)
    report = rt.compile_report(generated["source"], generated["name"], arch, [], None)
    assert report["spill_bytes"] == 0, report["log"]
    assert report["registers"] <= 248, report["log"]


def test_small_operands_are_loaded_whole():
    """Below 64 registers a thread (here 32: a 64x64 K over two warps' columns) the tile is
    loaded where it stands: ptxas has room to schedule it, and the code stays as it was."""
    src = kernel_source(TwoDotsOverSharedTiles(d=64, bq=32, bkv=64, warps=2), args(d=64), "sm_80")
    assert STREAMED not in src
