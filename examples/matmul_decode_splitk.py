"""Matmul for LLM decoding (m from 1 to a few hundred, k and n in the thousands).

The weight matrix B is what costs: it must stream from memory at full bandwidth. Each
thread block computes a 16 x block_n tile over one of `split_k` chunks of k, so there
are enough blocks to keep every SM loading. Unlike the seed's split-K (matmul_v5), the
partial results are not added one block after another: every block but the first writes
its fp32 partial to a workspace and raises its own flag; the first block of the tile
waits for the flags, adds the partials, stores C and lowers the flags again (the
workspace contract of `requires_clean`). The blocks never wait for each other's
arithmetic, only the first one waits for the others' results.

    python examples/matmul_decode_splitk.py [--cuda]
"""

import math
import sys

import torch

import tilus
from tilus import float16, float32, int32
from tilus.utils import benchmark_func, cdiv


@tilus.autotune("num_warps", [4, 8])
@tilus.autotune("block_n, block_k", [(64, 128), (128, 64), (128, 128), (256, 64)])
@tilus.autotune("split_k", [1, 4, 8, 16, 32])
@tilus.autotune("num_stages", [3, 4])
class MatmulDecode(tilus.Script):
    def __init__(self, num_warps, block_n, block_k, split_k, num_stages, block_m=16):
        super().__init__()
        self.num_warps, self.block_m, self.block_n, self.block_k = num_warps, block_m, block_n, block_k
        self.split_k, self.num_stages = split_k, num_stages

    def __call__(self, m_size: int32, n_size: int, k_size: int,
                 a_ptr: ~float16, b_ptr: ~float16, c_ptr: ~float16):
        bm, bn, bk, stages, splits = self.block_m, self.block_n, self.block_k, self.num_stages, self.split_k
        self.attrs.blocks = [cdiv(m_size, bm), cdiv(n_size, bn), splits]
        self.attrs.warps = self.num_warps

        chunk = cdiv(cdiv(k_size, splits), bk) * bk
        k_begin = self.blockIdx.z * chunk
        k_end = min(k_begin + chunk, k_size)
        offset_m: int32 = self.blockIdx.x * bm
        offset_n: int32 = self.blockIdx.y * bn

        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        sa = self.shared_tensor(dtype=float16, shape=[stages, bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[stages, bk, bn])
        acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)

        for s in range(stages - 1):
            self.copy_async(src=ga, dst=sa[s], offsets=[offset_m, k_begin + s * bk])
            self.copy_async(src=gb, dst=sb[s], offsets=[k_begin + s * bk, offset_n])
            self.copy_async_commit_group()
        self.copy_async_wait_group(n=stages - 2)
        self.sync()

        stage: int32 = 0
        preload: int32 = stages - 1
        for offset_k in self.range(k_begin, k_end, bk):
            self.dot(self.load_shared(sa[stage]), self.load_shared(sb[stage]), acc, out=acc)
            preload_k = offset_k + (stages - 1) * bk
            if preload_k < k_end:
                self.copy_async(src=ga, dst=sa[preload], offsets=[offset_m, preload_k])
                self.copy_async(src=gb, dst=sb[preload], offsets=[preload_k, offset_n])
            self.copy_async_commit_group()
            stage = (stage + 1) % stages
            preload = (preload + 1) % stages
            self.copy_async_wait_group(n=stages - 2)
            self.sync()
        self.free_shared(sa)
        self.free_shared(sb)

        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        if splits == 1:
            self.store_global(gc, self.cast(acc, dtype=float16), offsets=[offset_m, offset_n])
        else:
            partials = self.global_tensor(dtype=float32, shape=[splits - 1, m_size, n_size])
            flags = self.global_tensor(dtype=int32, shape=[cdiv(m_size, bm), cdiv(n_size, bn), splits],
                                       requires_clean=True)
            if self.blockIdx.z > 0:
                self.store_global(partials, acc, offsets=[self.blockIdx.z - 1, offset_m, offset_n])
                self.sync()
                self.release_semaphore(~flags[self.blockIdx.x, self.blockIdx.y, self.blockIdx.z], value=1)
            else:
                for z in range(1, splits):
                    self.lock_semaphore(~flags[self.blockIdx.x, self.blockIdx.y, z], value=1)
                    part = self.load_global(partials, offsets=[z - 1, offset_m, offset_n], shape=[bm, bn])
                    self.add(acc, part, out=acc)
                    self.release_semaphore(~flags[self.blockIdx.x, self.blockIdx.y, z], value=0)
                self.store_global(gc, self.cast(acc, dtype=float16), offsets=[offset_m, offset_n])


def main(device: str = "cpu"):
    shapes = [(1, 4096, 4096), (16, 14336, 4096), (16, 4096, 14336)] if device == "cuda" else [(1, 200, 136), (16, 100, 272)]
    for m, n, k in shapes:
        matmul = MatmulDecode()
        a = (torch.rand(m, k, dtype=torch.float16, device=device) - 0.5) * math.sqrt(12.0)
        b = (torch.rand(k, n, dtype=torch.float16, device=device) - 0.5) * math.sqrt(12.0 / k)
        c = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
        matmul(m, n, k, a, b, c)
        torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)
        line = f"decode matmul {m}x{n}x{k} on {device}: ok, config {matmul.chosen_config(m, n, k, a, b, c)}"
        if device == "cuda":
            t_torch = benchmark_func(lambda: torch.matmul(a, b), warmup=5, repeat=50)
            t_tilus = benchmark_func(lambda: matmul(m, n, k, a, b, c), warmup=5, repeat=50)
            line += f"\n  torch {t_torch * 1e3:.1f} us  tilus {t_tilus * 1e3:.1f} us"
        print(line)


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
