"""The async pass (csrc/transforms/async_waits.cc): on sm_90a wgmma dots are marked and
their commits and waits become IR instructions, checked here in the printed IR
(_C.lower_async). tests/codegen/test_wgmma_source.py checks the CUDA printed from them;
tests/gpu/test_matmul_gpu.py runs it."""

import re

import torch

from tests.gpu.kernels import BranchDotMatmul, SingleStageMatmul, TwoAccumulatorMatmul
from tilus import _C


def _mats():
    z = torch.zeros(4, 4, dtype=torch.float16)
    return z, z, z


def _program(kernel, *sizes):
    return kernel.compile(*sizes, *_mats()).program


def _lowered(kernel, *sizes, arch="sm_90a"):
    return str(_C.lower_async(_program(kernel, *sizes), arch))


def _seed(example, warps=4, stages=3):
    return example("matmul_v5_splitk").MatmulV5(num_warps=warps, block_m=128, block_n=128, block_k=32,
                                                num_stages=stages, split_k_factor=1)


def _lines(ir, start, end=None):
    """The stripped lines of the IR from the first line containing `start` up to the
    next one containing `end`."""
    lines = [ln.strip() for ln in ir.splitlines()]
    i = next(k for k, ln in enumerate(lines) if start in ln)
    j = next(k for k in range(i + 1, len(lines)) if end in lines[k]) if end else len(lines)
    return lines[i:j]


def test_without_wgmma_the_program_is_unchanged(example):
    program = _program(_seed(example), 4096, 4096, 4096)
    for arch, wgmma in (("sm_80", True), ("sm_90a", False)):
        lowered = str(_C.lower_async(program, arch, wgmma=wgmma))
        assert lowered == str(program) and "wgmma" not in lowered


def test_pipelined_loop_waits_for_the_previous_dot_only(example):
    """Ring counters one stage apart: the copies into sa[preload_stage] cannot hit the
    tile sa[current_stage] the running dot reads, so no wait stands before them."""
    ir = _lowered(_seed(example), 4096, 4096, 4096)
    loop = _lines(ir, "for offset_k", "free_shared(%sa)")
    assert loop[5:8] == ["dot(%a, %b, %acc, out=%acc, wgmma=async)", "wgmma_commit_group()",
                         "wgmma_wait_group(n=1)   # the dots before this one are done"]
    assert sum("wgmma_wait_group" in ln for ln in loop) == 2  # the one above, and the one after the loop
    assert loop[-2:] == ["wgmma_wait_group(n=0, fence=[%acc])   # freeing a tile the dot may read", "sync()"]
    copies = [k for k, ln in enumerate(loop) if ln.startswith("copy_async(")]
    assert copies and all("wgmma" not in loop[k - 2] and "wgmma" not in loop[k - 1] for k in copies)
    # A wait retires only this warp's share of the previous dot: the first copy into its
    # stage comes after a barrier over the warpgroup, and only the first.
    assert loop[copies[0] - 1] == "sync()" and loop[copies[1] - 1] != "sync()"
    assert loop.index("wgmma_wait_group(n=1)   # the dots before this one are done") < copies[0] - 1
    assert ir.count("wgmma_wait_group") == 2 and ir.count("wgmma_commit_group") == 1


def test_two_warpgroups_wait_before_the_loops_barrier(example):
    ir = _lowered(_seed(example, warps=8), 4096, 4096, 4096)
    loop = _lines(ir, "for offset_k", "free_shared(%sa)")
    barrier = loop.index("sync()")
    assert loop[barrier - 1] == ("wgmma_wait_group(n=0, fence=[%acc])   "
                                 "# other warpgroups may write its tiles after the barrier")


def test_a_copy_into_the_tile_the_running_dot_reads_waits_when_it_hits():
    """Single stage, views taken in the loop: the write waits only if its indices equal
    the dot's (a conditional wait naming both views)."""
    ir = _lowered(SingleStageMatmul(), 100, 130, 200)
    loop = _lines(ir, "for ok", "}")
    waits = [ln for ln in loop if ln.startswith("wgmma_wait_group(n=0")]
    assert len(waits) == 2
    for wait, copy in zip(waits, [ln for ln in loop if ln.startswith("copy_async(")]):
        written = re.search(r"if_writing=(%\w+)", wait).group(1)
        assert f"dst={written}," in copy and "hits=[%s" in wait
        assert loop.index(wait) + 2 == loop.index(copy) and loop[loop.index(wait) + 1] == "sync()"
    # the accumulator is read after the loop: a full wait that fences it
    assert "wgmma_wait_group(n=0, fence=[%acc])   # the accumulator is used next" in ir


def test_a_dot_in_one_branch_is_waited_for_after_the_if():
    ir = _lowered(BranchDotMatmul(), 100, 130, 96)
    body = _lines(ir, "if (m > 0)")
    assert body[1:5] == ["%r = load_shared(%sa)   # register[float16, 64x32]",
                         "%r_1 = load_shared(%sb)   # register[float16, 32x64]",
                         "dot(%r, %r_1, %acc, out=%acc, wgmma=async)", "wgmma_commit_group()"]
    joined = body.index("}", body.index("} else {") + 1)
    assert body[joined + 1].startswith("%gc = global_view(")  # touches neither tile nor accumulator
    assert body[joined + 2] == "wgmma_wait_group(n=0, fence=[%acc])   # the accumulator is used next"
    assert body[joined + 3].startswith("%r_2 = cast(%acc")


def test_two_accumulators_the_second_dots_wait_retires_and_fences_the_first():
    ir = _lowered(TwoAccumulatorMatmul(), 100, 130, 96)
    loop = _lines(ir, "for ok", "}")
    # the previous iteration's dots may run when the loop comes round: the copy waits
    assert loop[1] == "wgmma_wait_group(n=0, fence=[%acc2])   # writing a tile a running dot may read"
    assert loop[2] == "sync()"  # the other warps' shares of those dots are done too
    assert loop[3].startswith("copy_async(")
    second = loop.index("dot(%r_2, %r_3, %acc2, out=%acc2, wgmma=async)")
    assert loop[second + 1:second + 3] == [
        "wgmma_commit_group()", "wgmma_wait_group(n=1, fence=[%acc1])   # the dots before this one are done"]


def test_the_lowered_program_interprets_like_the_original():
    """On CPU the commits and waits are no-ops: a dot is done when it returns."""
    torch.manual_seed(0)
    m, n, k = 70, 90, 96
    a = torch.randn(m, k).half()
    b = torch.randn(k, n).half()
    kernel = TwoAccumulatorMatmul()
    compiled = kernel.compile(m, n, k, a, b, torch.zeros(m, n, dtype=torch.float16))
    compiled.program = _C.lower_async(compiled.program, "sm_90a")
    assert "wgmma_wait_group" in str(compiled.program)
    c = torch.zeros(m, n, dtype=torch.float16)
    kernel(m, n, k, a, b, c)
    expect = TwoAccumulatorMatmul()
    c_ref = torch.zeros(m, n, dtype=torch.float16)
    expect(m, n, k, a, b, c_ref)
    assert torch.equal(c, c_ref) and c.abs().sum() > 0
