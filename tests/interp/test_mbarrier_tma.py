"""Hopper's mbarrier and TMA instructions in the interpreter (Tilus 0.2 spelling):
a double-buffered TMA + mbarrier matmul against torch at odd shapes, TMA stores with
bulk groups, phase errors and the deadlock report."""
import re

import pytest
import torch

import tilus
from tilus import float16, float32, int32, uint32
from tilus.utils import cdiv

WARPS = 4
THREADS = WARPS * 32


class TmaPipelineMatmul(tilus.Script):
    """C = A @ B with two stages: TMA loads of the next k-tile overlap the dot."""

    def __init__(self, block_m=32, block_n=32, block_k=16):
        super().__init__()
        self.block_m, self.block_n, self.block_k = block_m, block_n, block_k

    def __call__(self, m_size: int32, n_size: int32, k_size: int32, a_ptr: ~float16,
                 b_ptr: ~float16, c_ptr: ~float16):
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        self.attrs.warps = 4
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        m0: int32 = self.blockIdx.x * bm
        n0: int32 = self.blockIdx.y * bn
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        sa = self.shared_tensor(dtype=float16, shape=[2, bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[2, bk, bn])
        acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
        full = self.mbarrier.alloc(counts=[128, 128])
        tx_per_thread = (bm * bk + bn * bk) * 2 // 128
        num_k: int32 = cdiv(k_size, bk)
        # prologue: stage 0
        self.mbarrier.arrive_and_expect_tx(full[0], tx_per_thread)
        self.tma.global_to_shared(src=ga, dst=sa[0], offsets=[m0, 0], mbarrier=full[0])
        self.tma.global_to_shared(src=gb, dst=sb[0], offsets=[0, n0], mbarrier=full[0])
        phase0: uint32 = self.mbarrier.consumer_initial_phase
        phase1: uint32 = self.mbarrier.consumer_initial_phase
        for ki in range(num_k):
            stage = ki % 2
            if ki + 1 < num_k:
                nxt = (ki + 1) % 2
                self.mbarrier.arrive_and_expect_tx(full[nxt], tx_per_thread)
                self.tma.global_to_shared(src=ga, dst=sa[nxt], offsets=[m0, (ki + 1) * bk],
                                          mbarrier=full[nxt])
                self.tma.global_to_shared(src=gb, dst=sb[nxt], offsets=[(ki + 1) * bk, n0],
                                          mbarrier=full[nxt])
            if stage == 0:
                self.mbarrier.wait(full[0], phase=phase0)
                phase0 ^= 1
            else:
                self.mbarrier.wait(full[1], phase=phase1)
                phase1 ^= 1
            a = self.load_shared(sa[stage])
            b = self.load_shared(sb[stage])
            self.dot(a, b, acc, out=acc)
            self.sync()
        self.free_shared(sa)
        self.free_shared(sb)
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        self.store_global(gc, acc.to(float16), offsets=[m0, n0])


@pytest.mark.parametrize("m, n, k", [(45, 37, 53), (32, 64, 16), (70, 33, 100)])
def test_tma_pipeline_matmul_matches_torch(m, n, k):
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(k, n, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    TmaPipelineMatmul()(m, n, k, a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=2e-2, rtol=2e-2)


class TmaStoreCopy(tilus.Script):
    """out = x + 1 through TMA loads, an mbarrier, and TMA stores retired by bulk groups."""

    def __call__(self, m: int32, n: int32, x_ptr: ~float16, y_ptr: ~float16):
        self.attrs.blocks = [cdiv(m, 16), cdiv(n, 32)]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[m, n])
        gy = self.global_view(y_ptr, dtype=float16, shape=[m, n])
        s = self.shared_tensor(dtype=float16, shape=[16, 32])
        bar = self.mbarrier.alloc(counts=1)
        with_tx = 16 * 32 * 2
        self.tma.global_to_shared(src=gx, dst=s, offsets=[self.blockIdx.x * 16, self.blockIdx.y * 32],
                                  mbarrier=bar)
        self.mbarrier.wait(bar, phase=0)
        self.store_shared(s, self.load_shared(s) + 1.0)
        self.fence.proxy_async()
        self.tma.shared_to_global(s, gy, offsets=[self.blockIdx.x * 16, self.blockIdx.y * 32])
        self.tma.commit_group()
        self.tma.wait_group(0)
        self.free_shared(s)


def test_tma_without_expect_tx_deadlocks_naming_barrier_phase_and_line():
    # No arrival and no expected bytes: the landed copy leaves the barrier at -1024
    # transaction bytes with its one arrival missing, so phase 0 never completes.
    x = torch.randn(20, 40, dtype=torch.float16)
    y = torch.zeros(20, 40, dtype=torch.float16)
    with pytest.raises(RuntimeError) as info:
        TmaStoreCopy()(20, 40, x, y)
    msg = str(info.value)
    assert "deadlock" in msg and "mbarrier 0" in msg and "phase parity 0" in msg, msg
    assert "-1024 transaction bytes" in msg and "self.mbarrier.wait(bar, phase=0)" in msg, msg


class TmaStoreCopyTx(tilus.Script):
    def __call__(self, m: int32, n: int32, x_ptr: ~float16, y_ptr: ~float16):
        self.attrs.blocks = [cdiv(m, 16), cdiv(n, 32)]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[m, n])
        gy = self.global_view(y_ptr, dtype=float16, shape=[m, n])
        s = self.shared_tensor(dtype=float16, shape=[16, 32])
        bar = self.mbarrier.alloc()
        self.mbarrier.arrive_and_expect_tx(bar, 16 * 32 * 2 // 128)
        self.tma.global_to_shared(src=gx, dst=s, offsets=[self.blockIdx.x * 16, self.blockIdx.y * 32],
                                  mbarrier=bar)
        self.mbarrier.wait(bar, phase=0)
        self.store_shared(s, self.load_shared(s) + 1.0)
        self.fence.proxy_async()
        self.tma.shared_to_global(s, gy, offsets=[self.blockIdx.x * 16, self.blockIdx.y * 32])
        self.tma.commit_group()
        self.tma.wait_group(0)
        self.free_shared(s)


def test_tma_store_with_bulk_groups_matches_torch():
    x = torch.randn(37, 71, dtype=torch.float16)
    y = torch.full((37, 71), float("nan"), dtype=torch.float16)
    TmaStoreCopyTx()(37, 71, x, y)
    torch.testing.assert_close(y, x + 1.0)


class WrongPhase(tilus.Script):
    def __call__(self, x_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        bar = self.mbarrier.alloc(counts=[128])
        self.mbarrier.arrive(bar)
        self.mbarrier.wait(bar, phase=0)
        self.mbarrier.wait(bar, phase=1)  # phase 1 has no arrivals: never completes


def test_waiting_on_a_phase_nobody_arrives_on_is_a_deadlock():
    with pytest.raises(RuntimeError, match=r"deadlock.*mbarrier 0.*phase parity 1.*phase 1 with 128 of 128"):
        WrongPhase()(torch.zeros(1, dtype=torch.float16))


class OverArrive(tilus.Script):
    def __call__(self, x_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        bar = self.mbarrier.alloc(counts=[1])
        self.mbarrier.arrive(bar)


def test_more_arrivals_than_the_phase_waits_for_is_refused():
    with pytest.raises(RuntimeError, match=r"128 threads arrive 128 times on mbarrier 0.*only 1 more"):
        OverArrive()(torch.zeros(1, dtype=torch.float16))


class BadPhase(tilus.Script):
    def __call__(self, x_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        bar = self.mbarrier.alloc(counts=[128])
        self.mbarrier.wait(bar, phase=2)


def test_phase_must_be_a_parity_at_build_time():
    with pytest.raises(ValueError, match="phase must be 0 or 1") as info:
        BadPhase()(torch.zeros(1, dtype=torch.float16))
    assert "self.mbarrier.wait(bar, phase=2)" in str(info.value)


class BigBox(tilus.Script):
    def __call__(self, n: int32, x_ptr: ~float16):
        self.attrs.blocks = [1]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[n, n])
        s = self.shared_tensor(dtype=float16, shape=[512, 8])
        bar = self.mbarrier.alloc(counts=[128])
        self.tma.global_to_shared(src=gx, dst=s, offsets=[0, 0], mbarrier=bar)


def test_box_tma_cannot_move_is_refused_with_the_line():
    with pytest.raises(ValueError, match="at most 256 elements") as info:
        BigBox()(4, torch.zeros(4, 4, dtype=torch.float16))
    assert "self.tma.global_to_shared(src=gx, dst=s" in str(info.value)


def test_multicast_to_blocks_outside_the_cluster_is_refused():
    class Multicast(tilus.Script):
        def __call__(self, x_ptr: ~float16):
            self.attrs.blocks = [1]
            self.attrs.warps = 4
            bar = self.mbarrier.alloc(counts=[128])
            self.mbarrier.arrive_and_expect_tx_multicast(bar, 16, 3)

    with pytest.raises(ValueError, match="multicast_mask 3 names blocks outside the cluster of 1"):
        Multicast()(torch.zeros(1, dtype=torch.float16))
