"""Kernels shared by the low-precision tests (interpreter, NVRTC, GPU)."""

import tilus
from tilus import float8_e4m3, float8_e5m2, float32, int32
from tilus.utils import cdiv

BLOCK = 512


class F32Chain(tilus.Script):
    """out[i] = x[i] cast to t1, then t2, then t3, then float32 (float32 in and out)."""

    def __init__(self, t1, t2, t3=float32, warps=4):
        super().__init__()
        self.t1, self.t2, self.t3, self.warps = t1, t2, t3, warps

    def __call__(self, x: ~float32, out: ~float32, n: int32):
        self.attrs.blocks = cdiv(n, BLOCK)
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[n])
        go = self.global_view(out, dtype=float32, shape=[n])
        t = self.load_global(gx, offsets=[self.blockIdx.x * BLOCK], shape=[BLOCK])
        t = self.cast(self.cast(self.cast(t, dtype=self.t1), dtype=self.t2), dtype=self.t3)
        self.store_global(go, self.cast(t, dtype=float32), offsets=[self.blockIdx.x * BLOCK])


class I32Chain(tilus.Script):
    """out[i] = x[i] cast to t1, then t2, then int32 (int32 in and out)."""

    def __init__(self, t1, t2=int32, warps=4):
        super().__init__()
        self.t1, self.t2, self.warps = t1, t2, warps

    def __call__(self, x: ~int32, out: ~int32, n: int32):
        self.attrs.blocks = cdiv(n, BLOCK)
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=int32, shape=[n])
        go = self.global_view(out, dtype=int32, shape=[n])
        t = self.load_global(gx, offsets=[self.blockIdx.x * BLOCK], shape=[BLOCK])
        t = self.cast(self.cast(t, dtype=self.t1), dtype=self.t2)
        self.store_global(go, self.cast(t, dtype=int32), offsets=[self.blockIdx.x * BLOCK])


class E4M3Codes(tilus.Script):
    """out[i] = the float32 value of the FP8 e4m3 element x[i] (codes loaded as stored)."""

    def __call__(self, x: ~float8_e4m3, out: ~float32, n: int32):
        self.attrs.blocks = cdiv(n, BLOCK)
        self.attrs.warps = 4
        gx = self.global_view(x, dtype=float8_e4m3, shape=[n])
        go = self.global_view(out, dtype=float32, shape=[n])
        t = self.load_global(gx, offsets=[self.blockIdx.x * BLOCK], shape=[BLOCK])
        self.store_global(go, self.cast(t, dtype=float32), offsets=[self.blockIdx.x * BLOCK])


class E5M2Codes(tilus.Script):
    """out[i] = the float32 value of the FP8 e5m2 element x[i] (codes loaded as stored)."""

    def __call__(self, x: ~float8_e5m2, out: ~float32, n: int32):
        self.attrs.blocks = cdiv(n, BLOCK)
        self.attrs.warps = 4
        gx = self.global_view(x, dtype=float8_e5m2, shape=[n])
        go = self.global_view(out, dtype=float32, shape=[n])
        t = self.load_global(gx, offsets=[self.blockIdx.x * BLOCK], shape=[BLOCK])
        self.store_global(go, self.cast(t, dtype=float32), offsets=[self.blockIdx.x * BLOCK])


class FP8To16(tilus.Script):
    """out[i] = float32(cast(x[i], via)) for the FP8 elements x (via float16/bfloat16):
    the FP8 -> 16-bit cast runs four at a time (tilus::cast4) on the GPU."""

    def __init__(self, fp8, via):
        super().__init__()
        self.fp8, self.via = fp8, via

    def __call__(self, x: tilus.void_p, out: ~float32, n: int32):
        self.attrs.blocks = cdiv(n, BLOCK)
        self.attrs.warps = 4
        gx = self.global_view(x, dtype=self.fp8, shape=[n])
        go = self.global_view(out, dtype=float32, shape=[n])
        t = self.load_global(gx, offsets=[self.blockIdx.x * BLOCK], shape=[BLOCK])
        self.store_global(go, self.cast(self.cast(t, dtype=self.via), dtype=float32),
                          offsets=[self.blockIdx.x * BLOCK])
