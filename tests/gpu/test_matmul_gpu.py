"""Matmuls on the GPU against torch at odd shapes, every supported type, split-K
factors 1/4/12/16; fresh random inputs each run, outputs poisoned first. The GPU result
must also agree with the CPU interpreter on the same program and inputs."""


import pytest
import torch

from tests.operands import matmul_operands

from tilus import bfloat16, float16, float32, int8, int32

from .kernels import make_matmul

pytestmark = pytest.mark.gpu

SHAPES = [(1, 100, 72), (37, 100, 72), (64, 64, 64), (130, 257, 200), (256, 520, 1000)]


def _poison(shape, dtype):
    if dtype in (torch.int32, torch.int8):
        return torch.full(shape, -12345, dtype=dtype, device="cuda")
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def _ref(a, b, out_dtype):
    if a.dtype == torch.int8:
        return (a.cpu().long() @ b.cpu().long()).to(out_dtype).cuda()
    return (a.double() @ b.double()).to(out_dtype)


def _check_rounds(kernel, m, n, k, rounds):
    """`rounds` runs of an fp16 matmul kernel on fresh operands into a poisoned C, each
    against torch (a race that only sometimes loses shows in one of them)."""
    for _ in range(rounds):
        a, b = matmul_operands(m, n, k, torch.float16)
        c = _poison((m, n), torch.float16)
        kernel(m, n, k, a, b, c)
        torch.testing.assert_close(c, _ref(a, b, torch.float16), rtol=1e-2, atol=1e-2)


TYPES = [
    (float16, float32, float16, torch.float16, torch.float16, 1e-2),
    (float16, float16, float16, torch.float16, torch.float16, 2e-2),
    (bfloat16, float32, bfloat16, torch.bfloat16, torch.bfloat16, 2e-2),
    (float32, float32, float32, torch.float32, torch.float32, 1e-4),
    (int8, int32, int32, torch.int8, torch.int32, 0),
]


@pytest.mark.parametrize("types", TYPES, ids=lambda t: f"{t[0].name}-{t[1].name}")
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_types_and_odd_shapes(types, m, n, k):
    dt, acc, out, tin, tout, tol = types
    Matmul = make_matmul(dt, acc, out)
    kernel = Matmul(block_m=64, block_n=64, block_k=32 if dt != int8 else 64, stages=3, warps=4)
    a, b = matmul_operands(m, n, k, tin)
    c = _poison((m, n), tout)
    kernel(m, n, k, a, b, c)
    torch.cuda.synchronize()
    expected = _ref(a, b, tout)
    if tol == 0:
        assert torch.equal(c, expected)
    else:
        torch.testing.assert_close(c, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("split_k", [1, 4, 12, 16])
@pytest.mark.parametrize("m,n,k", [(37, 100, 720), (1, 4096, 4096), (130, 257, 1000)])
def test_split_k(split_k, m, n, k):
    Matmul = make_matmul(float16, float32, float16)
    kernel = Matmul(block_m=64, block_n=128, block_k=32, stages=4, warps=4, split_k=split_k)
    for _ in range(2):  # the second run reuses the semaphores: they must be clean again
        a, b = matmul_operands(m, n, k, torch.float16)
        c = _poison((m, n), torch.float16)
        kernel(m, n, k, a, b, c)
        torch.testing.assert_close(c, _ref(a, b, torch.float16), rtol=1e-2, atol=1e-2)


def test_gpu_and_interpreter_agree():
    Matmul = make_matmul(float16, float32, float16)
    kernel = Matmul(block_m=64, block_n=64, block_k=32, stages=3, warps=4, split_k=4)
    m, n, k = 37, 100, 300
    a, b = matmul_operands(m, n, k, torch.float16)
    c_gpu = _poison((m, n), torch.float16)
    kernel(m, n, k, a, b, c_gpu)
    a_cpu, b_cpu = a.cpu(), b.cpu()
    c_cpu = torch.full((m, n), float("nan"), dtype=torch.float16)
    kernel(m, n, k, a_cpu, b_cpu, c_cpu)
    # same accumulation order up to fp32 rounding of the partial sums
    torch.testing.assert_close(c_gpu.cpu(), c_cpu, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name,cls,kwargs", [
    ("matmul_v0_jit", "Matmul", {}),
    ("matmul_v1_shared", "MatmulV1", {}),
    ("matmul_v3_pipeline", "MatmulV3", {}),
])
@pytest.mark.parametrize("m,n,k", [(1, 128, 64), (37, 100, 72), (300, 520, 264), (4096, 4096, 4096)])
def test_examples(example, name, cls, kwargs, m, n, k):
    kernel = getattr(example(name), cls)(**kwargs)
    a, b = matmul_operands(m, n, k, torch.float16)
    c = _poison((m, n), torch.float16)
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, _ref(a, b, torch.float16), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("split_k", [1, 4, 12, 16])
@pytest.mark.parametrize("block", [(128, 128, 16, 4), (64, 128, 32, 3), (32, 256, 32, 5)])
def test_seed_matmul_v5(example, split_k, block):
    bm, bn, bk, stages = block
    kernel = example("matmul_v5_splitk").MatmulV5(num_warps=4, block_m=bm, block_n=bn, block_k=bk,
                                                  num_stages=stages, split_k_factor=split_k)
    m, n, k = 37, 100, 720
    a, b = matmul_operands(m, n, k, torch.float16)
    c = _poison((m, n), torch.float16)
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, _ref(a, b, torch.float16), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("warps,bm,bn,bk,stages", [
    (4, 128, 128, 32, 4), (8, 128, 128, 32, 3), (8, 64, 128, 32, 4), (4, 128, 64, 32, 3),
    (4, 64, 256, 64, 3), (8, 128, 256, 64, 3)])
@pytest.mark.parametrize("m,n,k", [(300, 520, 1000), (256, 384, 512), (1, 4096, 4096), (4096, 4096, 4096)])
def test_seed_matmul_v5_tiles_hopper_lowers_to_wgmma(example, warps, bm, bn, bk, stages, m, n, k):
    """The autotuner's Hopper tiles: on sm_90a the dot reads A and B from shared memory
    with wgmma (64-byte and 128-byte swizzles, column-blocked B, 1-2 warpgroups)."""
    from tilus import _C

    kernel = example("matmul_v5_splitk").MatmulV5(num_warps=warps, block_m=bm, block_n=bn, block_k=bk,
                                                  num_stages=stages, split_k_factor=1)
    a, b = matmul_operands(m, n, k, torch.float16)
    c = _poison((m, n), torch.float16)
    source = kernel.source(m, n, k, a, b, c)
    assert ("wgmma.mma_async" in source) == (_C.runtime.arch_string() == "sm_90a")
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, _ref(a, b, torch.float16), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("warps,block_m", [(4, 64), (8, 128)])
@pytest.mark.parametrize("m,n,k", [(100, 130, 200), (64, 64, 4096), (257, 65, 97)])
def test_a_copy_into_the_tile_a_running_dot_reads_waits_for_it(m, n, k, warps, block_m):
    """One shared stage: the copies after each dot overwrite the tile it read (on sm_90a
    the dot is an asynchronous wgmma the code generator must wait for first; with two
    warpgroups, every warpgroup's share of it)."""
    from .kernels import SingleStageMatmul

    _check_rounds(SingleStageMatmul(block_m=block_m, warps=warps), m, n, k, rounds=1)


@pytest.mark.parametrize("warps", [4, 8])
@pytest.mark.parametrize("m,n,k", [(100, 130, 96), (64, 64, 4096)])
def test_two_accumulators_and_a_copy_at_the_top_of_the_loop(m, n, k, warps):
    from .kernels import TwoAccumulatorMatmul

    _check_rounds(TwoAccumulatorMatmul(warps=warps), m, n, k, rounds=1)


@pytest.mark.parametrize("stages", [3, 4, 5])
@pytest.mark.parametrize("m,n,k", [(4096, 4096, 4096), (1000, 1030, 4100)])
def test_two_warpgroups_never_overwrite_a_stage_the_other_reads(example, stages, m, n, k):
    """The seed's loop on two warpgroups: after the loop's barrier one warpgroup may copy
    into the stage the other's dot still reads, unless that dot was waited for first (TMA
    at 4096, cp.async at the odd shape). Five rounds of fresh data, so a race that only
    sometimes loses shows."""
    kernel = example("matmul_v5_splitk").MatmulV5(num_warps=8, block_m=128, block_n=128, block_k=32,
                                                  num_stages=stages, split_k_factor=1)
    _check_rounds(kernel, m, n, k, rounds=5)


def test_a_dot_in_one_branch_is_finished_before_its_result_is_stored():
    from .kernels import BranchDotMatmul

    _check_rounds(BranchDotMatmul(), 100, 130, 32, rounds=1)


def test_fp32_simt_matmul_relu(example):
    kernel = example("matmul_relu_fp32_simt").MatmulReluSimt()
    for m, n, k in [(37, 100, 72), (256, 256, 256), (1, 300, 17)]:
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(k, n, device="cuda")
        c = _poison((m, n), torch.float32)
        kernel(m, n, k, a, b, c)
        torch.testing.assert_close(c, (a.double() @ b.double()).relu().float(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("split_k", [1, 4, 16, 32])
@pytest.mark.parametrize("m,n,k", [(1, 4096, 4096), (16, 1000, 4104), (37, 130, 500)])
def test_decode_split_k(example, split_k, m, n, k):
    kernel = example("matmul_decode_splitk").MatmulDecode(num_warps=4, block_n=128, block_k=64,
                                                          split_k=split_k, num_stages=4)
    _check_rounds(kernel, m, n, k, rounds=2)


@pytest.mark.parametrize("m,n,k", [(256, 256, 256), (512, 384, 4096), (256, 130, 1000)])
def test_a_pipeline_launched_in_clusters(m, n, k):
    """Blocks in clusters of two, each its own tile: every block's result is right (the
    second block of each cluster read B's second 64-column block from a wrong address,
    with TMA and with cp.async)."""
    from .kernels import ClusteredPipelineMatmul

    kernel = ClusteredPipelineMatmul()
    _check_rounds(kernel, m, n, k, rounds=3)
