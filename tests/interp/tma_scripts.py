"""TMA scripts (Tilus 0.2 spelling) shared by the interpreter, NVRTC and GPU tests:
tests/interp/test_tma_roundtrip.py, tests/codegen/test_tma_source.py,
tests/codegen/test_transaction_bytes.py, tests/gpu/test_tma_gpu.py."""

import tilus
from tilus import float16, float32, int32
from tilus.utils import cdiv


class TmaRoundTrip(tilus.Script):
    """y = x + 1, one [block_m, block_n] tile per block: a TMA load into shared memory
    (the box starts `shift` rows above and 8 * `shift` columns right of the block's tile, so
    boxes reach outside x and read zeros there), registers, a TMA store (boxes reaching
    past y are clipped). ``ld`` is the row stride of x and y in elements."""

    def __init__(self, block_m=16, block_n=32, shift=0, col_shift=None):
        super().__init__()
        self.block_m = block_m
        self.block_n = block_n
        self.shift = shift
        # columns move by 8 * shift by default: TMA boxes start at 16-byte multiples along a row
        self.col_shift = 8 * shift if col_shift is None else col_shift

    def __call__(self, m: int32, n: int32, ld: int32, x_ptr: ~float16, y_ptr: ~float16):
        self.attrs.blocks = [cdiv(m, self.block_m), cdiv(n, self.block_n)]
        self.attrs.warps = 4
        bm, bn = self.block_m, self.block_n
        m0: int32 = self.blockIdx.x * bm
        n0: int32 = self.blockIdx.y * bn
        gx = self.global_view(x_ptr, dtype=float16, shape=[m, n], strides=[ld, 1])
        gy = self.global_view(y_ptr, dtype=float16, shape=[m, n], strides=[ld, 1])
        s = self.shared_tensor(dtype=float16, shape=[bm, bn])
        bar = self.mbarrier.alloc()
        self.mbarrier.arrive_and_expect_tx(bar, bm * bn * 2 // 128)
        self.tma.global_to_shared(src=gx, dst=s, offsets=[m0 - self.shift, n0 + self.col_shift], mbarrier=bar)
        self.mbarrier.wait(bar, phase=0)
        t = self.load_shared(s)
        self.sync()
        self.store_shared(s, t + 1.0)
        self.fence.proxy_async()
        self.tma.shared_to_global(s, gy, offsets=[m0, n0])
        self.tma.commit_group()
        self.tma.wait_group(0)
        self.free_shared(s)


class TmaBatchedCopy(tilus.Script):
    """y[b] = 2 * x[b] over a rank-3 tensor: the tile covers dims [1, 2], the batch is
    the block's z index (a box of extent 1 in dimension 0)."""

    def __init__(self, block_m=32, block_n=64):
        super().__init__()
        self.block_m = block_m
        self.block_n = block_n

    def __call__(self, b: int32, m: int32, n: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [cdiv(m, self.block_m), cdiv(n, self.block_n), b]
        self.attrs.warps = 4
        bm, bn = self.block_m, self.block_n
        m0: int32 = self.blockIdx.x * bm
        n0: int32 = self.blockIdx.y * bn
        gx = self.global_view(x_ptr, dtype=float32, shape=[b, m, n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[b, m, n])
        s = self.shared_tensor(dtype=float32, shape=[bm, bn])
        bar = self.mbarrier.alloc(counts=[128])
        self.mbarrier.arrive_and_expect_tx(bar, bm * bn * 4 // 128)
        self.tma.global_to_shared(src=gx, dst=s, offsets=[self.blockIdx.z, m0, n0], dims=[1, 2], mbarrier=bar)
        self.mbarrier.wait(bar, phase=0)
        t = self.load_shared(s)
        self.sync()
        self.store_shared(s, t * 2.0)
        self.fence.proxy_async()
        self.tma.shared_to_global(s, gy, offsets=[self.blockIdx.z, m0, n0], dims=[1, 2])
        self.tma.commit_group()
        self.tma.wait_group(0)
        self.free_shared(s)


class TmaPipelineMatmulStages(tilus.Script):
    """C = A @ B with `stages` TMA + mbarrier stages (one barrier per stage, its phase
    the parity of the stage's round), the dot on mma.sync or wgmma."""

    def __init__(self, block_m=64, block_n=64, block_k=32, stages=3):
        super().__init__()
        self.block_m, self.block_n, self.block_k, self.stages = block_m, block_n, block_k, stages

    def __call__(self, m_size: int32, n_size: int32, k_size: int32, a_ptr: ~float16,
                 b_ptr: ~float16, c_ptr: ~float16):
        self.attrs.blocks = [cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]
        self.attrs.warps = 4
        bm, bn, bk, stages = self.block_m, self.block_n, self.block_k, self.stages
        m0: int32 = self.blockIdx.x * bm
        n0: int32 = self.blockIdx.y * bn
        ga = self.global_view(a_ptr, dtype=float16, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k_size, n_size])
        sa = self.shared_tensor(dtype=float16, shape=[stages, bm, bk])
        sb = self.shared_tensor(dtype=float16, shape=[stages, bk, bn])
        acc = self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0)
        full = self.mbarrier.alloc(counts=[128] * stages)
        tx = (bm * bk + bk * bn) * 2 // 128
        num_k: int32 = cdiv(k_size, bk)
        for s in range(stages - 1):
            if s < num_k:
                self.mbarrier.arrive_and_expect_tx(full[s], tx)
                self.tma.global_to_shared(src=ga, dst=sa[s], offsets=[m0, s * bk], mbarrier=full[s])
                self.tma.global_to_shared(src=gb, dst=sb[s], offsets=[s * bk, n0], mbarrier=full[s])
        for ki in range(num_k):
            nk = ki + stages - 1
            if nk < num_k:
                ns = nk % stages
                self.mbarrier.arrive_and_expect_tx(full[ns], tx)
                self.tma.global_to_shared(src=ga, dst=sa[ns], offsets=[m0, nk * bk], mbarrier=full[ns])
                self.tma.global_to_shared(src=gb, dst=sb[ns], offsets=[nk * bk, n0], mbarrier=full[ns])
            stage = ki % stages
            self.mbarrier.wait(full[stage], phase=ki // stages % 2)
            a = self.load_shared(sa[stage])
            b = self.load_shared(sb[stage])
            self.dot(a, b, acc, out=acc)
            self.sync()
        self.free_shared(sa)
        self.free_shared(sb)
        gc = self.global_view(c_ptr, dtype=float16, shape=[m_size, n_size])
        self.store_global(gc, acc.to(float16), offsets=[m0, n0])


class TwoBoxes(tilus.Script):
    """One thread expects `expect` bytes and copies `copies` [64, 64] float16 tiles
    (8192 bytes each) on the barrier in a loop; `branch` puts the copies under a run-time
    condition, `copy_first` issues one copy before the expect."""

    def __init__(self, expect, copies=2, branch=False, copy_first=False, threads_expect=False):
        super().__init__()
        self.expect, self.copies, self.branch, self.copy_first = expect, copies, branch, copy_first
        self.threads_expect = threads_expect

    def __call__(self, m: int32, x_ptr: ~float16, y_ptr: ~float16):
        self.attrs.blocks = [cdiv(m, 64)]
        self.attrs.warps = 4
        gx = self.global_view(x_ptr, dtype=float16, shape=[m, 64])
        gy = self.global_view(y_ptr, dtype=float16, shape=[m, 64])
        s = self.shared_tensor(dtype=float16, shape=[self.copies, 64, 64])
        bar = self.mbarrier.alloc(counts=[128 if self.threads_expect else 1])
        if self.threads_expect:  # every thread expects a 128th
            self.mbarrier.arrive_and_expect_tx(bar, self.expect // 128)
        with self.single_thread():
            if self.copy_first:
                self.tma.global_to_shared(src=gx, dst=s[0], offsets=[self.blockIdx.x * 64, 0], mbarrier=bar)
            if not self.threads_expect:
                self.mbarrier.arrive_and_expect_tx(bar, self.expect)
            if self.branch:
                if m > 64:
                    for i in range(self.copies):
                        self.tma.global_to_shared(src=gx, dst=s[i], offsets=[self.blockIdx.x * 64, 0], mbarrier=bar)
            else:
                for i in range(1 if self.copy_first else 0, self.copies):
                    self.tma.global_to_shared(src=gx, dst=s[i], offsets=[self.blockIdx.x * 64, 0], mbarrier=bar)
        self.mbarrier.wait(bar, phase=0)
        t = self.load_shared(s[self.copies - 1])
        self.store_global(gy, t, offsets=[self.blockIdx.x * 64, 0])
