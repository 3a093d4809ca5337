"""Kernels shared by the low-precision tests (interpreter, NVRTC, GPU)."""

import tilus
from tilus import float8_e4m3, float8_e5m2, float32, int32
from tilus.layout import local, register_layout, spatial
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


# PackedViewCast's code orders: column = 8w + 4a + 2b + h for code l of a thread, l's
# digits (most significant first) being these modes of the view layout (1: w, 2: a, 3: b,
# 4: h, sizes 4, 2, 2, 2)
CODE_ORDERS = {
    "in order": [1, 2, 3, 4],  # code l is column l
    "paired": [1, 4, 2, 3],  # nibbles j and j + 4 of each word are columns 2j, 2j + 1
    "swapped": [1, 3, 2, 4],  # pairs of columns stay together, in another order
}


def code_columns(order):
    """column[l] of code l of a thread under CODE_ORDERS[order]."""
    sizes = {1: 4, 2: 2, 3: 2, 4: 2}
    weight = {1: 8, 2: 4, 3: 2, 4: 1}
    cols = []
    for l in range(32):
        col, rest = 0, l
        for m in reversed(CODE_ORDERS[order]):
            col += rest % sizes[m] * weight[m]
            rest //= sizes[m]
        cols.append(col)
    return cols


class PackedViewCast(tilus.Script):
    """out[t, column(l)] = float32(cast(view(bytes, t4), to)): each of 128 threads loads 4 *
    bits bytes of a uint8 [128, 4 * bits] buffer, views them as 32 codes of the sub-byte
    type t4 (code l at bits [l * bits, (l + 1) * bits) of the thread's bytes, at the
    column code_columns(order)[l]) and casts them to `to` (the emitter's
    straight-from-the-words paths: tilus::int4x8_to_half for 4-bit integers to float16,
    tilus::packed_cast for the others), then to float32. With an order other than "in
    order" the cast's result is laid out in column order (annotate_layout), so the cast
    reorders each thread's codes: 4-bit integers "paired" convert with
    tilus::int4x8_paired_to_half/_bf16."""

    def __init__(self, t4, to, order="in order"):
        super().__init__()
        self.t4, self.to, self.order = t4, to, order
        self.nbytes = 4 * t4.bits

    def __call__(self, packed: ~tilus.uint8, out: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        gp = self.global_view(packed, dtype=tilus.uint8, shape=[128, self.nbytes])
        go = self.global_view(out, dtype=float32, shape=[128, 32])
        b = self.load_global(gp, offsets=[0, 0], shape=[128, self.nbytes],
                             layout=spatial(128, 1) * local(1, self.nbytes))
        in_columns = spatial(128, 1) * local(1, 32)
        layout = register_layout([128, 32], [128, 4, 2, 2, 2], [0], CODE_ORDERS[self.order])
        codes = self.view(b, dtype=self.t4, layout=layout)
        values = self.cast(codes, dtype=self.to)
        if self.order != "in order":
            self.annotate_layout(values, in_columns)
        self.store_global(go, self.cast(values, dtype=float32), offsets=[0, 0])


class Arith16(tilus.Script):
    """out[0] = a op b, out[1] = a op row (a [1, 64] row broadcast down the [64, 64]
    tile), all in dtype (float16 or bfloat16): the paired 16-bit instructions."""

    def __init__(self, dtype, op):
        super().__init__()
        self.dtype, self.op = dtype, op

    def __call__(self, a: tilus.void_p, b: tilus.void_p, row: tilus.void_p, out: tilus.void_p):
        self.attrs.blocks = 1
        self.attrs.warps = 4
        ga = self.global_view(a, dtype=self.dtype, shape=[64, 64])
        gb = self.global_view(b, dtype=self.dtype, shape=[64, 64])
        gr = self.global_view(row, dtype=self.dtype, shape=[1, 64])
        go = self.global_view(out, dtype=self.dtype, shape=[2, 64, 64])
        x = self.load_global(ga, offsets=[0, 0], shape=[64, 64])
        y = self.load_global(gb, offsets=[0, 0], shape=[64, 64])
        r = self.load_global(gr, offsets=[0, 0], shape=[1, 64])
        if self.op == "add":
            z, w = x + y, x + r
        elif self.op == "sub":
            z, w = x - y, x - r
        else:
            z, w = x * y, x * r
        self.store_global(go, self.unsqueeze(z, dim=0), offsets=[0, 0, 0])
        self.store_global(go, self.unsqueeze(w, dim=0), offsets=[1, 0, 0])
