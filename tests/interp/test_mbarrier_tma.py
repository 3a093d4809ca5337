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
