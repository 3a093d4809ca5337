"""Split-K matmul with semaphores (Tilus docs, "Split-K"): a cp.async pipeline over
`num_stages` shared buffers, and `split_k_factor` blocks per output tile that add their
partial results in turn, ordered by a semaphore per tile.

    python examples/matmul_v5_splitk.py [--cuda]
"""

import math
import sys

import torch

import tilus
from tilus import float16, float32, int32
from tilus.utils import benchmark_func, cdiv


@tilus.autotune("num_warps", [4, 8])
@tilus.autotune("block_m, block_n", [(128, 128), (128, 64), (64, 128), (32, 256)])
@tilus.autotune("block_k", [16, 32])
@tilus.autotune("num_stages", [3, 4, 5])
@tilus.autotune("split_k_factor", [1, 4, 12, 16])
class MatmulV5(tilus.Script):
    def __init__(self, num_warps, block_m, block_n, block_k, num_stages, split_k_factor):
        super().__init__()
        self.block_m = block_m
        self.block_n = block_n
        self.block_k = block_k
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.split_k_factor = split_k_factor

    def __call__(self, m_size: int32, n_size: int, k_size: int,
                 a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        self.attrs.blocks = [
            cdiv(m_size, self.block_m),
            cdiv(n_size, self.block_n),
            self.split_k_factor,
        ]
        self.attrs.warps = self.num_warps

        # the k range of this thread block
        block_k_size = cdiv(cdiv(k_size, self.split_k_factor), self.block_k) * self.block_k
        start_offset_k = self.blockIdx.z * block_k_size
        end_offset_k = min(start_offset_k + block_k_size, k_size)

        block_m, block_n, block_k = self.block_m, self.block_n, self.block_k
        offset_m: int32 = block_m * self.blockIdx.x
        offset_n: int32 = block_n * self.blockIdx.y

        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        sa = self.shared_tensor(dtype=float16, shape=[self.num_stages, block_m, block_k])
        sb = self.shared_tensor(dtype=float16, shape=[self.num_stages, block_k, block_n])
        acc = self.register_tensor(dtype=float32, shape=[block_m, block_n], init=0.0)

        for stage in range(self.num_stages - 1):
            offset_k = start_offset_k + stage * self.block_k
            self.copy_async(src=ga, dst=sa[stage], offsets=[offset_m, offset_k])
            self.copy_async(src=gb, dst=sb[stage], offsets=[offset_k, offset_n])
            self.copy_async_commit_group()

        self.copy_async_wait_group(n=self.num_stages - 2)
        self.sync()

        current_stage: int32 = 0
        preload_stage: int32 = self.num_stages - 1
        for offset_k in self.range(start_offset_k, end_offset_k, block_k, unroll=self.num_stages):
            # computation for the current tile
            a = self.load_shared(sa[current_stage])
            b = self.load_shared(sb[current_stage])
            self.dot(a, b, acc, out=acc)

            # preload the next tiles of A and B into shared memory
            preload_offset_k = offset_k + (self.num_stages - 1) * block_k
            if preload_offset_k < end_offset_k:
                self.copy_async(src=ga, dst=sa[preload_stage], offsets=[offset_m, preload_offset_k])
                self.copy_async(src=gb, dst=sb[preload_stage], offsets=[preload_offset_k, offset_n])
            self.copy_async_commit_group()

            current_stage = (current_stage + 1) % self.num_stages
            preload_stage = (preload_stage + 1) % self.num_stages
            self.copy_async_wait_group(n=self.num_stages - 2)
            self.sync()

        self.free_shared(sa)
        self.free_shared(sb)

        # cast the accumulator to float16 and change its layout through shared memory
        sc = self.shared_tensor(dtype=float16, shape=[block_m, block_n])
        casted_acc = self.cast(acc, dtype=float16)
        self.store_shared(sc, casted_acc)
        self.sync()
        rc = self.load_shared(sc)
        self.free_shared(sc)

        m_blocks, n_blocks = cdiv(m_size, block_m), cdiv(n_size, block_n)
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        if self.split_k_factor == 0:
            self.store_global(gc, rc, offsets=[offset_m, offset_n])
        else:
            semaphores = self.global_tensor(dtype=int32, shape=[m_blocks, n_blocks], requires_clean=True)
            semaphore: ~int32 = ~semaphores[self.blockIdx.x, self.blockIdx.y]

            # wait for the blocks before this one, then add their partial result
            if self.blockIdx.z > 0:
                self.lock_semaphore(semaphore, value=self.blockIdx.z)
                partial_rc = self.load_global(gc, offsets=[offset_m, offset_n], shape=[block_m, block_n])
                self.add(rc, partial_rc, out=rc)

            self.store_global(gc, rc, offsets=[offset_m, offset_n])

            # make the store visible, then hand the tile to the next block (0 after the last)
            self.sync()
            self.release_semaphore(semaphore, value=(self.blockIdx.z + 1) % self.split_k_factor)


def main(device: str = "cpu"):
    workloads = [(4096, 4096, 4096), (4096, 4096, 14336)] if device == "cuda" else [(37, 100, 72)]
    for m, n, k in workloads:
        matmul = MatmulV5()
        a = (torch.rand(m, k, dtype=torch.float16, device=device) - 0.5) * math.sqrt(12.0)
        b = (torch.rand(k, n, dtype=torch.float16, device=device) - 0.5) * math.sqrt(12.0 / k)
        c = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
        matmul(m, n, k, a, b, c)
        torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)
        print(f"matmul v5 (split-K) {m}x{n}x{k} on {device}: ok, config "
              f"{matmul.chosen_config(m, n, k, a, b, c)}")
        if device == "cuda":
            for name, fn in [("torch", lambda: torch.matmul(a, b)),
                             ("tilus", lambda: matmul(m, n, k, a, b, c))]:
                ms = benchmark_func(fn, warmup=5, repeat=20)
                print(f"  {name:6s} {ms:8.3f} ms  {2 * m * n * k / ms * 1e-9:8.1f} TFLOP/s")


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
