"""Kernels over packed sub-byte tensors, shared by the interpreter, NVRTC and GPU tests,
and an independent numpy model of Tilus 0.2's packing: element i of a tensor occupies
bits [i*b, (i+1)*b) of a little-endian bit stream."""

import numpy as np

import tilus
from tilus import float32, int32, uint8, void_p
from tilus.layout import local, spatial
from tilus.utils import cdiv


def pack(codes, bits):
    """numpy model: codes (any shape, row-major) -> the packed uint8 stream."""
    flat = np.asarray(codes, dtype=np.int64).reshape(-1) & ((1 << bits) - 1)
    out = np.zeros((flat.size * bits + 7) // 8, dtype=np.uint8)
    for j in range(bits):
        pos = np.arange(flat.size, dtype=np.int64) * bits + j
        np.bitwise_or.at(out, pos // 8, (((flat >> j) & 1) << (pos % 8)).astype(np.uint8))
    return out


def unpack(stream, bits, n):
    """numpy model: the first n codes of a packed uint8 stream."""
    stream = np.asarray(stream, dtype=np.uint8)
    codes = np.zeros(n, dtype=np.int64)
    for j in range(bits):
        pos = np.arange(n, dtype=np.int64) * bits + j
        codes |= ((stream[pos // 8].astype(np.int64) >> (pos % 8)) & 1) << j
    return codes


class PackedRoundTrip(tilus.Script):
    """Loads tiles of a packed [rows, cols] tensor of `dtype` from src, stores them packed
    into dst and their float32 values into values."""

    def __init__(self, dtype, block=(16, 64), warps=4):
        super().__init__()
        self.dtype, self.block, self.warps = dtype, block, warps

    def __call__(self, src: void_p, dst: void_p, values: ~float32, rows: int32, cols: int32):
        br, bc = self.block
        self.attrs.blocks = [cdiv(rows, br), cdiv(cols, bc)]
        self.attrs.warps = self.warps
        gs = self.global_view(src, dtype=self.dtype, shape=[rows, cols])
        gd = self.global_view(dst, dtype=self.dtype, shape=[rows, cols])
        gv = self.global_view(values, dtype=float32, shape=[rows, cols])
        offs = [self.blockIdx.x * br, self.blockIdx.y * bc]
        t = self.load_global(gs, offsets=offs, shape=[br, bc])
        self.store_global(gd, t, offsets=offs)
        self.store_global(gv, self.cast(t, dtype=float32), offsets=offs)


class PackedEncode(tilus.Script):
    """dst (packed `dtype`, [rows, cols]) = cast(x, dtype) for float32 x."""

    def __init__(self, dtype, block=(8, 128), warps=4):
        super().__init__()
        self.dtype, self.block, self.warps = dtype, block, warps

    def __call__(self, x: ~float32, dst: void_p, rows: int32, cols: int32):
        br, bc = self.block
        self.attrs.blocks = [cdiv(rows, br), cdiv(cols, bc)]
        self.attrs.warps = self.warps
        gx = self.global_view(x, dtype=float32, shape=[rows, cols])
        gd = self.global_view(dst, dtype=self.dtype, shape=[rows, cols])
        offs = [self.blockIdx.x * br, self.blockIdx.y * bc]
        t = self.load_global(gx, offsets=offs, shape=[br, bc])
        self.store_global(gd, self.cast(t, dtype=self.dtype), offsets=offs)


class PackedThroughShared(tilus.Script):
    """src -> copy_async into a packed shared tile -> load_shared -> store_shared into a
    second packed shared tile -> load_shared -> dst (both packed [rows, cols])."""

    def __init__(self, dtype, block=(16, 128), warps=4):
        super().__init__()
        self.dtype, self.block, self.warps = dtype, block, warps

    def __call__(self, src: void_p, dst: void_p, rows: int32, cols: int32):
        br, bc = self.block
        self.attrs.blocks = [cdiv(rows, br), cdiv(cols, bc)]
        self.attrs.warps = self.warps
        gs = self.global_view(src, dtype=self.dtype, shape=[rows, cols])
        gd = self.global_view(dst, dtype=self.dtype, shape=[rows, cols])
        offs = [self.blockIdx.x * br, self.blockIdx.y * bc]
        s1 = self.shared_tensor(dtype=self.dtype, shape=[br, bc])
        s2 = self.shared_tensor(dtype=self.dtype, shape=[br, bc])
        self.copy_async(src=gs, dst=s1, offsets=offs)
        self.copy_async_commit_group()
        self.copy_async_wait_all()
        self.sync()
        t = self.load_shared(s1)
        self.store_shared(s2, t)
        self.sync()
        u = self.load_shared(s2)
        self.store_global(gd, u, offsets=offs)
        self.free_shared(s1)
        self.free_shared(s2)


class PackedView(tilus.Script):
    """Loads a packed tile in `layout`, views each thread's bits as uint8 (bytes_layout)
    and stores those bytes into raw[thread-major], then views them back and stores the
    tile packed into dst."""

    def __init__(self, dtype, layout, bytes_layout):
        super().__init__()
        self.dtype, self.layout, self.bytes_layout = dtype, layout, bytes_layout

    def __call__(self, src: void_p, dst: void_p, raw: ~uint8, rows: int32, cols: int32):
        self.attrs.blocks = 1
        self.attrs.warps = self.layout.num_threads // 32
        gs = self.global_view(src, dtype=self.dtype, shape=[rows, cols])
        gd = self.global_view(dst, dtype=self.dtype, shape=[rows, cols])
        gr = self.global_view(raw, dtype=uint8, shape=[self.bytes_layout.shape[0]])
        t = self.load_global(gs, offsets=[0, 0], layout=self.layout)
        b = self.view(t, layout=self.bytes_layout, dtype=uint8)
        self.store_global(gr, b, offsets=[0])
        back = self.view(b, layout=self.layout, dtype=self.dtype)
        self.store_global(gd, back, offsets=[0, 0])


class ScaledCodes(tilus.Script):
    """Views each thread's bytes of raw as 16 small-float codes of `dtype` (an [8, 64] tile:
    two rows of eight consecutive codes a thread), casts them to `to` and multiplies each
    row by its scale (scales: [8, 1], broadcast along the row, or [8, 64], one an element),
    storing the products into out: a packed cast then a multiplication by a group's
    scale, as the A16Wx kernels dequantise (emit_scale_fold folds the rebias into the
    scales)."""

    LAYOUT = local(2, 1) * spatial(4, 8) * local(1, 8)

    def __init__(self, dtype, to, per_element=False):
        super().__init__()
        self.dtype, self.to, self.per_element = dtype, to, per_element
        self.per_thread = self.LAYOUT.local_size * dtype.bits // 8
        self.bytes_layout = spatial(32) * local(self.per_thread)

    def __call__(self, raw: ~uint8, scales: void_p, out: void_p):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        gr = self.global_view(raw, dtype=uint8, shape=[32 * self.per_thread])
        gs = self.global_view(scales, dtype=self.to, shape=[8, 64 if self.per_element else 1])
        go = self.global_view(out, dtype=self.to, shape=[8, 64])
        b = self.load_global(gr, offsets=[0], layout=self.bytes_layout)
        values = self.cast(self.view(b, layout=self.LAYOUT, dtype=self.dtype), dtype=self.to)
        s = self.load_global(gs, offsets=[0, 0], shape=[8, 64 if self.per_element else 1])
        self.store_global(go, values * s, offsets=[0, 0])
