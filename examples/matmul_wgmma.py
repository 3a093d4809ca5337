"""Hopper matmul with explicit wgmma (Tilus 0.2's ``self.wgmma``): cp.async copies fill a
ring of shared-memory stages while the tensor cores work on an earlier one.

    python examples/matmul_wgmma.py [--cuda]

Each iteration waits for its k-tile, issues ``wgmma.mma`` on it and commits; then
``wait_group(1)`` retires the previous iteration's group, so one mma is always running
while the next copies are issued. The stage the retired mma read is refilled with the
tile ``stages - 1`` ahead. With two warpgroups a barrier after the wait makes sure the
other warpgroup's mma on that stage has finished too. Needs sm_90a on the GPU; the CPU
interpreter runs it anywhere.
"""

import math
import sys

import torch

import tilus
from tilus import float16, float32, int32
from tilus.utils import benchmark_func, cdiv


@tilus.autotune("num_warps, block_m, block_n", [(4, 128, 128), (4, 64, 256), (8, 128, 256), (8, 128, 128)])
@tilus.autotune("block_k", [32, 64])
@tilus.autotune("num_stages", [3, 4])
class MatmulWgmma(tilus.Script):
    def __init__(self, num_warps=4, block_m=128, block_n=128, block_k=64, num_stages=4):
        super().__init__()
        self.num_warps = num_warps
        self.block_m = block_m
        self.block_n = block_n
        self.block_k = block_k
        self.num_stages = num_stages

    def __call__(self, m_size: int32, n_size: int, k_size: int,
                 a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        self.attrs.warps = self.num_warps
        block_m, block_n, block_k, stages = self.block_m, self.block_n, self.block_k, self.num_stages

        offset_m: int32 = block_m * self.blockIdx.x
        offset_n: int32 = block_n * self.blockIdx.y

        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        # A K-major ([m, k] rows), B N-major ([k, n] rows): both as stored in global memory
        sa = self.shared_tensor(dtype=float16, shape=[stages, block_m, block_k])
        sb = self.shared_tensor(dtype=float16, shape=[stages, block_k, block_n])
        acc = self.register_tensor(dtype=float32, shape=[block_m, block_n], init=0.0)

        # fill all stages but one (tiles past k_size read zeros)
        for stage in range(stages - 1):
            self.copy_async(src=ga, dst=sa[stage], offsets=[offset_m, stage * block_k])
            self.copy_async(src=gb, dst=sb[stage], offsets=[stage * block_k, offset_n])
            self.copy_async_commit_group()

        current_stage: int32 = 0
        preload_stage: int32 = stages - 1
        for offset_k in self.range(0, k_size, block_k, unroll=stages):
            self.copy_async_wait_group(n=stages - 2)  # this iteration's tile has landed
            self.sync()
            self.wgmma.fence()
            self.wgmma.mma(sa[current_stage], sb[current_stage], acc)
            self.wgmma.commit_group()
            self.wgmma.wait_group(1)  # the previous iteration's mma is done: its stage is free
            if self.num_warps > 4:
                self.sync()  # ... in every warpgroup

            preload_k = offset_k + (stages - 1) * block_k
            if preload_k < k_size:
                self.copy_async(src=ga, dst=sa[preload_stage], offsets=[offset_m, preload_k])
                self.copy_async(src=gb, dst=sb[preload_stage], offsets=[preload_k, offset_n])
            self.copy_async_commit_group()
            current_stage = (current_stage + 1) % stages
            preload_stage = (preload_stage + 1) % stages
        self.wgmma.wait_group(0)

        self.free_shared(sa)
        self.free_shared(sb)
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        self.store_global(gc, self.cast(acc, dtype=float16), offsets=[offset_m, offset_n])


def main(device: str = "cpu"):
    if device == "cuda":
        kernel = MatmulWgmma()
        m, n, k = 4096, 4096, 4096
    else:  # one configuration, small odd sizes: the interpreter is slow
        kernel = MatmulWgmma(num_warps=4, block_m=64, block_n=64, block_k=32, num_stages=3)
        m, n, k = 70, 100, 72
    a = (torch.rand(m, k, dtype=torch.float16, device=device) - 0.5) * math.sqrt(12.0)
    b = (torch.rand(k, n, dtype=torch.float16, device=device) - 0.5) * math.sqrt(12.0 / k)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    kernel(m, n, k, a, b, c)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)
    print(f"matmul wgmma (explicit wgmma, cp.async pipeline) {m}x{n}x{k} on {device}: ok")
    if device == "cuda":
        for name, fn in [("torch", lambda: torch.matmul(a, b)),
                         ("tilus", lambda: kernel(m, n, k, a, b, c))]:
            ms = benchmark_func(fn, warmup=5, repeat=20)
            print(f"  {name:6s} {ms:8.3f} ms  {2 * m * n * k / ms * 1e-9:8.1f} TFLOP/s")


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
