"""Kernels the GPU tests share: a pipelined matmul generic over its data types."""

import tilus
from tilus import int32
from tilus.utils import cdiv


def make_matmul(dtype, acc_dtype, out_dtype):
    """A matmul class specialised to its types (pointer annotations are per type)."""

    class Matmul(tilus.Script):
        def __init__(self, block_m=64, block_n=64, block_k=32, stages=3, warps=4, split_k=1):
            super().__init__()
            self.block_m, self.block_n, self.block_k = block_m, block_n, block_k
            self.stages, self.warps, self.split_k = stages, warps, split_k

        def __call__(self, m: int32, n: int, k: int, a_ptr: ~dtype, b_ptr: ~dtype, c_ptr: ~out_dtype):
            bm, bn, bk, stages = self.block_m, self.block_n, self.block_k, self.stages
            self.attrs.blocks = [cdiv(m, bm), cdiv(n, bn), self.split_k]
            self.attrs.warps = self.warps
            chunk = cdiv(cdiv(k, self.split_k), bk) * bk
            k_begin = self.blockIdx.z * chunk
            k_end = min(k_begin + chunk, k)
            om: int32 = self.blockIdx.x * bm
            on: int32 = self.blockIdx.y * bn
            ga = self.global_view(a_ptr, dtype=dtype, shape=[m, k])
            gb = self.global_view(b_ptr, dtype=dtype, shape=[k, n])
            sa = self.shared_tensor(dtype=dtype, shape=[stages, bm, bk])
            sb = self.shared_tensor(dtype=dtype, shape=[stages, bk, bn])
            acc = self.register_tensor(dtype=acc_dtype, shape=[bm, bn], init=0)
            for s in range(stages - 1):
                self.copy_async(src=ga, dst=sa[s], offsets=[om, k_begin + s * bk])
                self.copy_async(src=gb, dst=sb[s], offsets=[k_begin + s * bk, on])
                self.copy_async_commit_group()
            self.copy_async_wait_group(n=stages - 2)
            self.sync()
            stage: int32 = 0
            preload: int32 = stages - 1
            for ok in self.range(k_begin, k_end, bk, unroll=stages):
                self.dot(self.load_shared(sa[stage]), self.load_shared(sb[stage]), acc, out=acc)
                pk = ok + (stages - 1) * bk
                if pk < k_end:
                    self.copy_async(src=ga, dst=sa[preload], offsets=[om, pk])
                    self.copy_async(src=gb, dst=sb[preload], offsets=[pk, on])
                self.copy_async_commit_group()
                stage = (stage + 1) % stages
                preload = (preload + 1) % stages
                self.copy_async_wait_group(n=stages - 2)
                self.sync()
            self.free_shared(sa)
            self.free_shared(sb)
            out = self.cast(acc, dtype=out_dtype)
            gc = self.global_view(c_ptr, dtype=out_dtype, shape=[m, n])
            if self.split_k == 1:
                self.store_global(gc, out, offsets=[om, on])
            else:
                sems = self.global_tensor(dtype=int32, shape=[cdiv(m, bm), cdiv(n, bn)], requires_clean=True)
                sem: ~int32 = ~sems[self.blockIdx.x, self.blockIdx.y]
                if self.blockIdx.z > 0:
                    self.lock_semaphore(sem, value=self.blockIdx.z)
                    partial = self.load_global(gc, offsets=[om, on], shape=[bm, bn])
                    self.add(out, partial, out=out)
                self.store_global(gc, out, offsets=[om, on])
                self.sync()
                self.release_semaphore(sem, value=(self.blockIdx.z + 1) % self.split_k)

    Matmul.__name__ = f"Matmul_{dtype.name}_{acc_dtype.name}_{out_dtype.name}"
    return Matmul


class SingleStageMatmul(tilus.Script):
    """fp16 matmul with one shared stage: each iteration's dot reads the stage that the
    copies right after it overwrite with the next tile. On sm_90a the dot is a wgmma that
    may still be reading when the copies are issued, so the code generator must wait for
    it there (tests/gpu/test_matmul_gpu.py, tests/codegen/test_wgmma_source.py)."""

    def __init__(self, block_m=64, block_n=64, block_k=32, warps=4):
        super().__init__()
        self.block_m, self.block_n, self.block_k, self.warps = block_m, block_n, block_k, warps

    def __call__(self, m: int32, n: int, k: int, a_ptr: ~tilus.float16, b_ptr: ~tilus.float16,
                 c_ptr: ~tilus.float16):
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        self.attrs.blocks = [cdiv(m, bm), cdiv(n, bn)]
        self.attrs.warps = self.warps
        om: int32 = self.blockIdx.x * bm
        on: int32 = self.blockIdx.y * bn
        ga = self.global_view(a_ptr, dtype=tilus.float16, shape=[m, k])
        gb = self.global_view(b_ptr, dtype=tilus.float16, shape=[k, n])
        sa = self.shared_tensor(dtype=tilus.float16, shape=[1, bm, bk])
        sb = self.shared_tensor(dtype=tilus.float16, shape=[1, bk, bn])
        acc = self.register_tensor(dtype=tilus.float32, shape=[bm, bn], init=0.0)
        stage: int32 = 0
        self.copy_async(src=ga, dst=sa[stage], offsets=[om, 0])
        self.copy_async(src=gb, dst=sb[stage], offsets=[0, on])
        self.copy_async_commit_group()
        self.copy_async_wait_group(n=0)
        self.sync()
        for ok in range(0, k, bk):
            self.dot(self.load_shared(sa[stage]), self.load_shared(sb[stage]), acc, out=acc)
            self.copy_async(src=ga, dst=sa[stage], offsets=[om, ok + bk])
            self.copy_async(src=gb, dst=sb[stage], offsets=[ok + bk, on])
            self.copy_async_commit_group()
            self.copy_async_wait_group(n=0)
            self.sync()
        gc = self.global_view(c_ptr, dtype=tilus.float16, shape=[m, n])
        self.store_global(gc, self.cast(acc, dtype=tilus.float16), offsets=[om, on])


class TwoAccumulatorMatmul(tilus.Script):
    """fp16 A @ B computed twice into two accumulators, one unpipelined shared stage
    copied at the top of each iteration: c = 2 * acc1 - acc2 (= A @ B). On sm_90a both
    dots are wgmma; the copy that starts the next iteration must wait for the second dot
    of the previous one (whose tile indices are out of scope by then). With 8 warps the
    tile has 128 rows, 64 for each warpgroup."""

    def __init__(self, warps=4):
        super().__init__()
        self.warps = warps

    def __call__(self, m: int32, n: int, k: int, a_ptr: ~tilus.float16, b_ptr: ~tilus.float16,
                 c_ptr: ~tilus.float16):
        bm = 16 * self.warps
        self.attrs.blocks = [cdiv(m, bm), cdiv(n, 64)]
        self.attrs.warps = self.warps
        ga = self.global_view(a_ptr, dtype=tilus.float16, shape=[m, k])
        gb = self.global_view(b_ptr, dtype=tilus.float16, shape=[k, n])
        sa = self.shared_tensor(dtype=tilus.float16, shape=[bm, 32])
        sb = self.shared_tensor(dtype=tilus.float16, shape=[32, 64])
        acc1 = self.register_tensor(dtype=tilus.float32, shape=[bm, 64], init=0.0)
        acc2 = self.register_tensor(dtype=tilus.float32, shape=[bm, 64], init=0.0)
        for ok in range(0, k, 32):
            self.copy_async(src=ga, dst=sa, offsets=[self.blockIdx.x * bm, ok])
            self.copy_async(src=gb, dst=sb, offsets=[ok, self.blockIdx.y * 64])
            self.copy_async_commit_group()
            self.copy_async_wait_group(n=0)
            self.sync()
            self.dot(self.load_shared(sa), self.load_shared(sb), acc1, out=acc1)
            self.dot(self.load_shared(sa), self.load_shared(sb), acc2, out=acc2)
            self.sync()
        gc = self.global_view(c_ptr, dtype=tilus.float16, shape=[m, n])
        self.store_global(gc, self.cast(acc1 + acc1 - acc2, dtype=tilus.float16),
                          offsets=[self.blockIdx.x * bm, self.blockIdx.y * 64])


class BranchDotMatmul(tilus.Script):
    """One 64x64x32 tile of A @ B, multiplied only in the then-branch of a runtime if
    (m > 0; m is a runtime int32) whose else-branch only synchronises; the accumulator is stored after the if.
    On sm_90a the dot is a wgmma that may still run when the branches join."""

    def __call__(self, m: int32, n: int, k: int, a_ptr: ~tilus.float16, b_ptr: ~tilus.float16,
                 c_ptr: ~tilus.float16):
        self.attrs.blocks = [cdiv(m, 64), cdiv(n, 64)]
        self.attrs.warps = 4
        ga = self.global_view(a_ptr, dtype=tilus.float16, shape=[m, k])
        gb = self.global_view(b_ptr, dtype=tilus.float16, shape=[k, n])
        sa = self.shared_tensor(dtype=tilus.float16, shape=[64, 32])
        sb = self.shared_tensor(dtype=tilus.float16, shape=[32, 64])
        acc = self.register_tensor(dtype=tilus.float32, shape=[64, 64], init=0.0)
        self.copy_async(src=ga, dst=sa, offsets=[self.blockIdx.x * 64, 0])
        self.copy_async(src=gb, dst=sb, offsets=[0, self.blockIdx.y * 64])
        self.copy_async_commit_group()
        self.copy_async_wait_group(n=0)
        self.sync()
        if m > 0:
            self.dot(self.load_shared(sa), self.load_shared(sb), acc, out=acc)
        else:
            self.sync()
        gc = self.global_view(c_ptr, dtype=tilus.float16, shape=[m, n])
        self.store_global(gc, self.cast(acc, dtype=tilus.float16),
                          offsets=[self.blockIdx.x * 64, self.blockIdx.y * 64])


class ClusteredPipelineMatmul(tilus.Script):
    """The seed's pipelined fp16 matmul (copy_async ring of 3 stages, 128x128x32 tiles,
    4 warps) launched in clusters of two blocks along x that never talk to each other.
    On sm_90a the second block of each cluster read its tile's B columns 64-127 from
    elsewhere: its shared addresses carry bits above 256 KB, which ran into the wgmma
    descriptor's leading-byte offset (codegen/device/wgmma.cuh wgmma_desc)."""

    def __call__(self, m: int32, n: int, k: int, a_ptr: ~tilus.float16, b_ptr: ~tilus.float16,
                 c_ptr: ~tilus.float16):
        bm, bn, bk, stages = 128, 128, 32, 3
        self.attrs.blocks = [cdiv(m, bm), cdiv(n, bn)]
        self.attrs.warps = 4
        self.attrs.cluster_blocks = [2]
        om: int32 = self.blockIdx.x * bm
        on: int32 = self.blockIdx.y * bn
        ga = self.global_view(a_ptr, dtype=tilus.float16, shape=[m, k])
        gb = self.global_view(b_ptr, dtype=tilus.float16, shape=[k, n])
        sa = self.shared_tensor(dtype=tilus.float16, shape=[stages, bm, bk])
        sb = self.shared_tensor(dtype=tilus.float16, shape=[stages, bk, bn])
        acc = self.register_tensor(dtype=tilus.float32, shape=[bm, bn], init=0.0)
        for s in range(stages - 1):
            self.copy_async(src=ga, dst=sa[s], offsets=[om, s * bk])
            self.copy_async(src=gb, dst=sb[s], offsets=[s * bk, on])
            self.copy_async_commit_group()
        self.copy_async_wait_group(n=stages - 2)
        self.sync()
        current: int32 = 0
        preload: int32 = stages - 1
        for ok in range(0, k, bk):
            self.dot(self.load_shared(sa[current]), self.load_shared(sb[current]), acc, out=acc)
            if ok + (stages - 1) * bk < k:
                self.copy_async(src=ga, dst=sa[preload], offsets=[om, ok + (stages - 1) * bk])
                self.copy_async(src=gb, dst=sb[preload], offsets=[ok + (stages - 1) * bk, on])
            self.copy_async_commit_group()
            current = (current + 1) % stages
            preload = (preload + 1) % stages
            self.copy_async_wait_group(n=stages - 2)
            self.sync()
        gc = self.global_view(c_ptr, dtype=tilus.float16, shape=[m, n])
        self.store_global(gc, self.cast(acc, dtype=tilus.float16), offsets=[om, on])
