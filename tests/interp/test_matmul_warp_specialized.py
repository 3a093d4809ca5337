"""examples/matmul_warp_specialized.py in the interpreter: the persistent warp-specialised
matmul (one TMA producer thread, two wgmma consumer warpgroups, mbarrier ring) at odd
shapes with fewer blocks than tiles, with and without 2-block clusters sharing B (or A)
tiles by TMA multicast, 64-row tiles with one consumer warpgroup, ring slots of several
k-boxes, with the TMA-store
(whole or in column halves) and the register-store epilogue; float16 and float8_e4m3
inputs against torch."""

import math

import pytest
import torch

from tilus import float8_e4m3, float16


@pytest.mark.parametrize("cluster_m, cluster_n, epilogue, m, n, k, blocks", [
    (1, 1, "tma", 200, 264, 136, 3),          # tiles past every edge, 3 blocks walk 6 tiles
    (2, 1, "tma", 300, 136, 72, 4),           # rank 1 of the last cluster works on rows past m
    (2, 1, "registers", 129, 64, 200, 2),
    (1, 1, "registers", 64, 40, 24, 4),       # fewer tiles than blocks: the grid shrinks
    (1, 1, "tma_halves", 200, 200, 136, 3),   # two accumulator halves, staged one at a time
    (2, 1, "tma_halves", 300, 264, 72, 2),
    (1, 2, "tma", 300, 392, 200, 4),          # A shared along n; rank 1 of the last cluster past n
    (1, 2, "registers", 129, 264, 72, 2),
    (1, 2, "tma_halves", 130, 520, 136, 4),
])
def test_matches_torch(example, cluster_m, cluster_n, epilogue, m, n, k, blocks):
    ex = example("matmul_warp_specialized")
    kernel = ex.MatmulWarpSpecialized(block_m=128, block_n=128, stages=3, group_m=8, cluster_m=cluster_m,
                                      cluster_n=cluster_n, epilogue=epilogue, split_k=1, num_blocks=blocks)
    a = torch.randn(m, k).half()
    b = torch.randn(n, k).half()
    c = torch.full((m, n), float("nan")).half()
    kernel(m, n, k, a, b, c, 0.5)
    torch.testing.assert_close(c.float(), (a.float() @ b.float().T) * 0.5, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("epilogue, split_k", [("tma", 1), ("registers", 2)])
def test_64_column_tiles(example, epilogue, split_k):
    """The m = 128 configurations: 64-column tiles (each consumer warpgroup m64n64)."""
    ex = example("matmul_warp_specialized")
    kernel = ex.MatmulWarpSpecialized(block_m=128, block_n=64, stages=8, group_m=8, cluster_m=1,
                                      epilogue=epilogue, split_k=split_k, num_blocks=3)
    m, n, k = 130, 200, 136
    a, b = torch.randn(m, k).half(), torch.randn(n, k).half()
    c = torch.full((m, n), float("nan")).half()
    kernel(m, n, k, a, b, c, 0.5)
    torch.testing.assert_close(c.float(), (a.float() @ b.float().T) * 0.5, rtol=2e-2, atol=5e-2)


def test_112_column_tiles(example):
    """The m = 128 configuration whose tiles are not a power of two wide (m64n112 wgmma,
    a 112-row B box, a 128x112 TMA-store staging tile)."""
    ex = example("matmul_warp_specialized")
    kernel = ex.MatmulWarpSpecialized(block_m=128, block_n=112, stages=6, group_m=8, cluster_m=1,
                                      epilogue="tma", split_k=1, num_blocks=3)
    m, n, k = 130, 344, 136
    a, b = torch.randn(m, k).half(), torch.randn(n, k).half()
    c = torch.full((m, n), float("nan")).half()
    kernel(m, n, k, a, b, c, 0.5)
    torch.testing.assert_close(c.float(), (a.float() @ b.float().T) * 0.5, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("block_n, stages, epilogue, cluster_m, cluster_n, split_k, m, n, k, blocks", [
    (64, 13, "tma", 2, 1, 1, 130, 200, 136, 4),         # a cluster's two 64-row tiles share B
    (192, 6, "tma", 2, 1, 1, 129, 400, 200, 3),
    (64, 8, "registers", 1, 1, 2, 70, 200, 136, 3),     # split-K partials of 64-row tiles
    (128, 8, "tma_halves", 1, 2, 1, 200, 520, 72, 4),   # two 64-row tiles side by side share A
    (224, 5, "registers", 2, 1, 1, 63, 500, 72, 2),
])
def test_64_row_tiles_one_consumer_warpgroup(example, block_n, stages, epilogue, cluster_m, cluster_n, split_k,
                                             m, n, k, blocks):
    ex = example("matmul_warp_specialized")
    kernel = ex.MatmulWarpSpecialized(block_m=64, block_n=block_n, stages=stages, group_m=8, cluster_m=cluster_m,
                                      cluster_n=cluster_n, epilogue=epilogue, split_k=split_k, num_blocks=blocks)
    a, b = torch.randn(m, k).half(), torch.randn(n, k).half()
    c = torch.full((m, n), float("nan")).half()
    kernel(m, n, k, a, b, c, 0.5)
    torch.testing.assert_close(c.float(), (a.float() @ b.float().T) * 0.5, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("block_m, block_n, k_boxes, epilogue, cluster_m, split_k, dtype, m, n, k", [
    (64, 64, 2, "registers", 1, 1, float16, 130, 200, 328),   # the tuned 64 x 64 tile; k not a whole slot
    (64, 64, 3, "tma", 2, 1, float16, 129, 136, 200),         # clusters sharing B, box by box
    (128, 128, 2, "tma_halves", 1, 1, float16, 150, 260, 136),
    (128, 64, 2, "registers", 1, 2, float16, 100, 130, 264),  # split-K slices of whole slots
    (64, 64, 2, "registers", 1, 1, float8_e4m3, 70, 72, 400),
])
def test_slots_of_several_k_boxes(example, block_m, block_n, k_boxes, epilogue, cluster_m, split_k, dtype, m, n, k):
    ex = example("matmul_warp_specialized")
    kernel = ex.MatmulWarpSpecialized(block_m=block_m, block_n=block_n, stages=3, group_m=8, cluster_m=cluster_m,
                                      epilogue=epilogue, split_k=split_k, dtype=dtype, num_blocks=3,
                                      k_boxes=k_boxes)
    assert kernel.block_k == k_boxes * 128 // dtype.nbytes
    torch_dtype = torch.float8_e4m3fn if dtype == float8_e4m3 else torch.float16
    a, b = torch.randn(m, k).to(torch_dtype), (torch.randn(n, k) / math.sqrt(k)).to(torch_dtype)
    c = torch.full((m, n), float("nan")).half()
    kernel(m, n, k, a, b, c, 0.5)
    torch.testing.assert_close(c.float(), (a.float() @ b.float().T) * 0.5, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("split_reduce", ["partials", "atomics"])
@pytest.mark.parametrize("cluster_m, cluster_n, split_k, m, n, k, blocks", [
    (1, 1, 2, 200, 264, 136, 4),
    (2, 1, 4, 129, 64, 500, 4),   # two slices of one tile may land on one block
    (1, 1, 8, 64, 136, 40, 8),    # slices past k: no steps, they still count in
    (1, 2, 2, 130, 392, 264, 4),  # A shared along n, the last cluster's rank 1 past n
])
def test_split_k_matches_torch_twice(example, cluster_m, cluster_n, split_k, m, n, k, blocks, split_reduce):
    ex = example("matmul_warp_specialized")
    kernel = ex.MatmulWarpSpecialized(block_m=128, block_n=128, stages=3, group_m=8, cluster_m=cluster_m,
                                      cluster_n=cluster_n, epilogue="registers", split_k=split_k,
                                      num_blocks=blocks, split_reduce=split_reduce)
    for _ in range(2):  # the workspace and the counts are left zeroed for the next call
        a = torch.randn(m, k).half()
        b = torch.randn(n, k).half()
        c = torch.full((m, n), float("nan")).half()
        kernel(m, n, k, a, b, c, 0.5)
        torch.testing.assert_close(c.float(), (a.float() @ b.float().T) * 0.5, rtol=2e-2, atol=5e-2)


def test_float8_inputs_match_torch(example):
    ex = example("matmul_warp_specialized")
    m, n, k = 140, 72, 160
    kernel = ex.MatmulWarpSpecialized(block_m=128, block_n=128, stages=3, group_m=8, cluster_m=2,
                                      epilogue="tma_halves", split_k=1, dtype=float8_e4m3,
                                      num_blocks=2)
    a = torch.randn(m, k).to(torch.float8_e4m3fn)
    b = torch.randn(n, k).to(torch.float8_e4m3fn)
    c = torch.full((m, n), float("nan")).half()
    kernel(m, n, k, a, b, c, 1 / math.sqrt(k))
    torch.testing.assert_close(c.float(), (a.float() @ b.float().T) / math.sqrt(k), rtol=2e-2, atol=2e-2)


def test_wrapper_checks_its_inputs(example):
    ex = example("matmul_warp_specialized")
    with pytest.raises(TypeError, match="float16, bfloat16 or float8_e4m3fn"):
        ex.matmul(torch.randn(8, 16), torch.randn(8, 16))
    with pytest.raises(ValueError, match=r"a \[m, k\] and b \[n, k\]"):
        ex.matmul(torch.randn(8, 16).half(), torch.randn(16, 8).half())
    with pytest.raises(ValueError, match="k=12"):
        ex.matmul(torch.randn(8, 12).half(), torch.randn(8, 12).half())


def test_configurations_that_cannot_work_are_refused(example):
    ex = example("matmul_warp_specialized")
    with pytest.raises(ValueError, match="split_k > 1 reduces"):
        ex.MatmulWarpSpecialized(block_m=128, block_n=128, stages=3, group_m=8, cluster_m=1, epilogue="tma",
                                 split_k=2)
    with pytest.raises(ValueError, match="k_boxes must be at least 1"):
        ex.MatmulWarpSpecialized(block_m=128, block_n=128, stages=3, group_m=8, cluster_m=1, k_boxes=0)
    with pytest.raises(ValueError, match="epilogue must be"):
        ex.MatmulWarpSpecialized(block_m=128, block_n=128, stages=3, group_m=8, cluster_m=1, epilogue="smem",
                                 split_k=1)
    ex = example("matmul_warp_specialized")
    with pytest.raises(ValueError, match="block_m must be 64 .* or a multiple of 128"):
        ex.MatmulWarpSpecialized(block_m=192, block_n=128, stages=3, group_m=8, cluster_m=1,
                                  epilogue="tma", split_k=1)
    with pytest.raises(ValueError, match="a cluster shares either B .* or A"):
        ex.MatmulWarpSpecialized(block_m=128, block_n=128, stages=3, group_m=8, cluster_m=2, cluster_n=2)
    with pytest.raises(ValueError, match="group_m must be a multiple of cluster_m"):
        ex.MatmulWarpSpecialized(block_m=128, block_n=128, stages=3, group_m=3, cluster_m=2,
                                  epilogue="tma", split_k=1)
    with pytest.raises(ValueError, match="split_reduce must be 'partials' or 'atomics', got 'tree'"):
        ex.MatmulWarpSpecialized(block_m=128, block_n=128, stages=3, group_m=8, cluster_m=1,
                                  epilogue="registers", split_k=2, split_reduce="tree")


def test_tuning_key_keeps_n_exact_and_rounds_m_and_k(example):
    # n = 14336 and 16384 share a bucket but want different tiles at m = 128 (the number
    # of output tiles against the SMs); m varies with the batch, so it is bucketed
    ex = example("matmul_warp_specialized")
    key = ex.MatmulWarpSpecialized._tilus_tune_key
    assert key is ex.tuning_key
    a = torch.zeros(1)
    assert key(128, 12288, 4096, a, a, a, 1.0) != key(128, 14336, 4096, a, a, a, 1.0)
    assert key(128, 14336, 4096, a, a, a, 1.0) != key(128, 16384, 4096, a, a, a, 1.0)
    assert key(3500, 4096, 4000, a, a, a, 1.0) == key(4096, 4096, 4096, a, a, a, 1.0) == (4096, 4096, 4096)
    assert key(3000, 4096, 4096, a, a, a, 1.0) == (3072, 4096, 4096)
    assert key(1, 4096, 14336, a, a, a, 1.0) == (1, 4096, 16384)
