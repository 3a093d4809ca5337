"""Small autotuned kernels the autotuning tests share (cheap to compile with NVRTC)."""

import tilus
from tilus import float16, float32, int32
from tilus.utils import cdiv


@tilus.autotune("warps", [1, 2])
@tilus.autotune("block", [32, 64, 65536])
class Scale(tilus.Script):
    """x[i] *= factor, in place, staged through `block` floats of shared memory: the
    block=65536 configurations need 256 KiB, more than any GPU (or the fake one) allows."""

    def __init__(self, factor, warps, block):
        super().__init__()
        self.factor, self.warps, self.block = factor, warps, block

    def __call__(self, n: int32, x_ptr: ~float32):
        self.attrs.blocks = [cdiv(n, self.block)]
        self.attrs.warps = self.warps
        g = self.global_view(x_ptr, dtype=float32, shape=[n])
        s = self.shared_tensor(dtype=float32, shape=[self.block])
        x = self.load_global(g, offsets=[self.blockIdx.x * self.block], shape=[self.block])
        self.store_shared(s, x)
        self.sync()
        y = self.load_shared(s)
        self.free_shared(s)
        self.store_global(g, y * self.factor, offsets=[self.blockIdx.x * self.block])


@tilus.autotune("warps", [1, 64, 2])
@tilus.autotune("debug", [True, False])
class Copy(tilus.Script):
    """y = x. warps=64 does not transpile (too many warps); debug=True prints a shared
    tensor, which only the CPU interpreter can do, so its CUDA generation fails."""

    def __init__(self, warps, debug):
        super().__init__()
        self.warps, self.debug = warps, debug

    def __call__(self, n: int32, x_ptr: ~float32, y_ptr: ~float32):
        self.attrs.blocks = [cdiv(n, 32)]
        self.attrs.warps = self.warps
        gx = self.global_view(x_ptr, dtype=float32, shape=[n])
        gy = self.global_view(y_ptr, dtype=float32, shape=[n])
        x = self.load_global(gx, offsets=[self.blockIdx.x * 32], shape=[32])
        if self.debug:
            s = self.shared_tensor(dtype=float32, shape=[32])
            self.store_shared(s, x)
            self.print_tensor("x", s)
            self.free_shared(s)
        self.store_global(gy, x, offsets=[self.blockIdx.x * 32])


@tilus.autotune("warps", [4, 8])
@tilus.autotune("block_m, block_n", [(64, 64), (32, 64), (64, 32)])
@tilus.autotune("block_k", [16, 32])
class MatmulAccumulate(tilus.Script):
    """c += a @ b (float16 inputs, float32 c): an in-place kernel, which is only right
    after its first, tuned call when tuning did not run candidates on c itself."""

    def __init__(self, warps, block_m, block_n, block_k):
        super().__init__()
        self.warps, self.block_m, self.block_n, self.block_k = warps, block_m, block_n, block_k

    def __call__(self, m: int32, n: int32, k: int, a_ptr: ~float16, b_ptr: ~float16,
                 c_ptr: ~float32):
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        self.attrs.blocks = [cdiv(m, bm), cdiv(n, bn)]
        self.attrs.warps = self.warps
        om: int32 = self.blockIdx.x * bm
        on: int32 = self.blockIdx.y * bn
        ga = self.global_view(a_ptr, dtype=float16, shape=[m, k])
        gb = self.global_view(b_ptr, dtype=float16, shape=[k, n])
        gc = self.global_view(c_ptr, dtype=float32, shape=[m, n])
        acc = self.load_global(gc, offsets=[om, on], shape=[bm, bn])
        for ok in range(0, k, bk):
            a = self.load_global(ga, offsets=[om, ok], shape=[bm, bk])
            b = self.load_global(gb, offsets=[ok, on], shape=[bk, bn])
            self.dot(a, b, acc, out=acc)
        self.store_global(gc, acc, offsets=[om, on])
