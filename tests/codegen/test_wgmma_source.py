"""On sm_90a a dot of two tiles loaded from shared memory becomes wgmma (CPU-only checks
of the generated source; tests/gpu/test_matmul_gpu.py runs it)."""

import torch

from tests.gpu.kernels import BranchDotMatmul, SingleStageMatmul, TwoAccumulatorMatmul


def _mats():
    z = torch.zeros(4, 4, dtype=torch.float16)
    return z, z, z


def _v5(example, warps=4, stages=3):
    """(Tests reading cp.async copies in the source set TILUS_COPY_TMA=0: on sm_90a copy_async
    lowers to TMA otherwise; tests/codegen/test_copy_tma_source.py.)"""
    return example("matmul_v5_splitk").MatmulV5(num_warps=warps, block_m=128, block_n=128, block_k=32,
                                                num_stages=stages, split_k_factor=1)


def _main_loop(source):
    start = source.index("for (int offset_k")
    # up to free_shared(sa) (a wait for the loop's last dot stands before it, if one may run)
    return source[start:source.index("// free_shared(sa)")]


def test_seed_tile_uses_wgmma_on_sm90a_and_mma_sync_elsewhere(example, monkeypatch):
    hopper = _v5(example).source(4095, 4097, 4103, *_mats(), arch="sm_90a")
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in hopper
    assert "ldmatrix" not in _main_loop(hopper) and "mma_m16n8k16" not in hopper
    ampere = _v5(example).source(4095, 4097, 4103, *_mats(), arch="sm_80")
    assert "wgmma" not in ampere.split('extern "C"')[1] and "tilus::ldmatrix_x4(" in ampere
    monkeypatch.setenv("TILUS_WGMMA", "0")
    forced = _v5(example).source(4095, 4097, 4103, *_mats(), arch="sm_90a")
    assert "wgmma.mma_async" not in forced and "tilus::mma_m16n8k16_f16_f32(" in forced


def test_pipelined_dot_keeps_running_past_the_next_stage_copies(example, monkeypatch):
    """sa[preload_stage] and sa[current_stage] are ring counters one apart: the copies
    cannot hit the running dot's tiles, so the loop waits only for the previous dot."""
    monkeypatch.setenv("TILUS_COPY_TMA", "0")
    loop = _main_loop(_v5(example).source(4096, 4096, 4096, *_mats(), arch="sm_90a"))
    assert loop.count("tilus::wgmma_wait_group<1>();") == 1
    assert loop.count("wgmma_wait_group<0>") == 1  # after the loop, before free_shared(sa)
    assert loop.index("wgmma_wait_group<0>") > loop.rindex("cp_async_16")
    # the wait retires this warp's share of the previous dot; a barrier, the others'
    assert loop.index("wgmma_wait_group<1>") < loop.index("__syncthreads();") < loop.index("cp_async_16")


def test_two_warpgroups_wait_before_the_barrier(example, monkeypatch):
    monkeypatch.setenv("TILUS_COPY_TMA", "0")
    loop = _main_loop(_v5(example, warps=8).source(4096, 4096, 4096, *_mats(), arch="sm_90a"))
    last_copy = loop.rindex("cp_async_16")
    assert loop.index("wgmma_wait_group<0>", last_copy) < loop.index("__syncthreads();", last_copy)


def test_a_write_into_the_running_dots_tile_waits_first():
    source = SingleStageMatmul().source(100, 130, 200, *_mats(), arch="sm_90a")
    loop = source[source.index("for (int ok"):]
    after_issue = loop[loop.index("wgmma_wait_group<1>"):]
    assert after_issue.index("wgmma_wait_group<0>") < after_issue.index("cp_async_16")


def test_the_accumulator_is_read_only_after_a_full_wait(example):
    source = _v5(example).source(4096, 4096, 4096, *_mats(), arch="sm_90a")
    tail = source[source.index("free_shared(sa)") - 400:]
    assert tail.index("wgmma_wait_group<0>") < tail.index("tilus::cast<tilus::half>(acc[")


def test_two_dimensional_grids_run_in_bands_one_dimensional_ones_as_launched(example):
    banded = _v5(example).source(4096, 4096, 4096, *_mats(), arch="sm_90a")
    assert "const int tl_block_x = " in banded and "(128 * tl_block_x)" in banded
    assert "(int)blockIdx.x" not in banded.split("tl_block_y = ")[1]
    plain = example("add_one").AddOneKernel(128, 4).source(1000, torch.zeros(1000), torch.zeros(1000), arch="sm_90a")
    assert "tl_block_x" not in plain and "(int)blockIdx.x" in plain


def test_a_copy_at_the_top_of_a_loop_waits_for_the_previous_iterations_dot():
    source = TwoAccumulatorMatmul().source(100, 130, 96, *_mats(), arch="sm_90a")
    loop = source[source.index("for (int ok"):]
    assert loop.index("wgmma_wait_group<0>") < loop.index("cp_async_16")
    # the second dot's wait<1> retires the first, whose accumulator is then pinned
    second = loop.index("tl_wgmma_m64n64k16_f32_f16(acc2")
    assert "fence_register(acc1[i])" in loop[second:loop.index("__syncthreads", second)]


def test_a_dot_in_the_then_branch_is_waited_for_after_an_else_branch():
    source = BranchDotMatmul().source(100, 130, 32, *_mats(), arch="sm_90a")
    after_if = source[source.index("} else {"):]
    assert after_if.index("wgmma_wait_group<0>") < after_if.index("tilus::cast<tilus::half>(acc[")


def test_copy_addresses_are_the_threads_offset_plus_a_constant_per_step(example, monkeypatch):
    """The swizzle does not change along a copy's loop, so each step only adds a
    constant (16 rows of the 64-byte-row A tile = 1024 elements) to the thread's offset."""
    monkeypatch.setenv("TILUS_COPY_TMA", "0")
    loop = _main_loop(_v5(example).source(4096, 4096, 4096, *_mats(), arch="sm_90a"))
    copy = loop[loop.index("tilus::cp_async_16(tilus::smem_u32(sa"):]
    assert "* 1024)))" in copy.split("\n")[0]


def test_the_hopper_main_loop_unrolls_twice(example):
    source = _v5(example, stages=4).source(4096, 4096, 4096, *_mats(), arch="sm_90a")
    assert "#pragma unroll 2\n  for (int offset_k" in source


def test_a_wgmma_loop_of_known_trip_count_is_not_unrolled(example):
    """Unrolled, a loop with compile-time bounds whose wgmma runs across iterations lost
    a k-step of some elements on the H100 (MatmulV3, k fixed at 4096); with runtime bounds
    (the seed's split-K loop) two copies were right and faster."""
    fixed = example("matmul_v3_pipeline").MatmulV3().source(4096, 4096, 4096, *_mats(), arch="sm_90a")
    assert fixed[:fixed.index("for (int offset_k")].split("\n")[-2].strip() == "#pragma unroll 1"
    assert "not applied: wgmma in flight across iterations" in fixed
    runtime = _v5(example).source(4096, 4096, 4096, *_mats(), arch="sm_90a")
    assert runtime[:runtime.index("for (int offset_k")].split("\n")[-2].strip() == "#pragma unroll 2"
    ampere = example("matmul_v3_pipeline").MatmulV3().source(4096, 4096, 4096, *_mats(), arch="sm_80")
    assert "not applied" not in ampere
