"""A16Wx matmul: float16/bfloat16 activations times low-precision weights.

    C[m, n] = sum_k A[m, k] * dequant(W)[k, n],   dequant(W)[k, n] = (w[k, n] - z[g, n]) * s[g, n]

with g = k // group_size (groups of 32/64/128 along k), w of any Tilus 0.2 weight type
(uint4b, int4b, uint8, int8, float8_e4m3, int3b, float6_e3m2, ...), s the scales and z the
optional zero points (both in the activation type).

The weights are pre-packed once (`prepack`) in the order the tensor cores read them: the
[k, n] matrix is cut into units of 16 x 64 (one mma.sync k16 step of eight n8 atoms), and
each unit is stored as 32 lanes x 32 codes, lane t's codes being exactly the B-fragment
registers lane t of a warp holds for that unit, bit-packed (4 * bits bytes per lane: 16
bytes for 4-bit weights; 3- and 4-bit integer codes are paired within each eight for a
cheaper conversion: `unit_layout`). A warp then moves a unit global -> shared with cp.async and
shared -> registers with one conflict-free 16-byte read per lane, `view`s the bytes as
the weight type in the mma layout, converts them in registers (less the zero point) and
feeds `self.dot`, whose k-step sum the group's scale then multiplies once per output: no
shared-memory layout conversion anywhere. The packed matrix is still bits * k * n / 8
bytes (a quarter of the fp16 one for 4-bit weights).

Each thread block computes a block_m x block_n tile of C over one of `split_k` chunks
of k. The same script serves decode (m = 1 or 16: the cost is streaming the weight
bytes, so many blocks via split-K, whose partials meet through atomics) and prefill (m
in the thousands: large tiles whose warps dequantise each weight once into a shared
tile that the dot reads, wgmma on sm_90a); @tilus.autotune picks per shape. Decode tiles of
8 rows compute C^T = W^T A^T instead: two neighbouring n8 atoms' B fragments are one
m16n8k16 A fragment of W^T, so the same packing feeds the weights in as the A operand, and
at m <= 8 a k-step takes half the mma.syncs, scale products and A tile of the 16-row form.

QuantizedLinear is the entry point. From PREFILL_M rows on, on Hopper, it runs
examples/matmul_a16wx_hopper.py instead: the weights as wgmma's register operand,
dequantised beside the tensor cores (0.85-1.1x cuBLAS fp16 at m = 1024-8192 on an H200).
For 5- to 7-bit floats from 2048 rows (the longest conversion) it dequantises the weights
once per call instead (DequantizeWeights: one pass writing dequant(W)^T) and multiplies
with the warp-specialised tensor-core matmul of examples/matmul_warp_specialized.py.

    python examples/matmul_a16wx.py [--cuda]
"""

import math
import os
import sys

import torch

import tilus
from tilus import bfloat16, float16, float32, int32, uint8, void_p
from tilus.layout import column_local, divide, local, mma_block_layouts, register_layout, replicate, spatial
from tilus.utils import benchmark_func, cdiv, check_tensor, dtype_to_torch

UNIT_K, UNIT_N = 16, 64  # the packing unit: one k16 step of eight n8 mma atoms

# (block_m, block_n, block_k, split_k, num_warps, static_stages): decode tiles first (m <=
# 16; those of 8 rows compute C^T, 5-7% faster than the 16-row ones at m = 1 and 8 on an
# H200), then prefill ones. Every warp's tile is a whole number of 64-column units
# (checked below). static_stages None: the kernel's default (unrolled by the ring for the
# 8-row tiles only); the 16 x 128 split-4 tile also unrolled: 3-6% faster at m = 16 on
# the 12288- and 14336-column weights (H200, 2026-11-29), slower on the others.
TILES = [
    (8, 128, 64, 16, 2, None), (8, 128, 64, 32, 2, None), (8, 128, 128, 4, 2, None), (8, 128, 128, 8, 2, None),
    (8, 128, 128, 16, 2, None), (8, 256, 128, 8, 4, None),
    (16, 256, 64, 16, 4, None), (16, 128, 128, 4, 2, None), (16, 128, 128, 4, 2, True),
    (16, 128, 128, 16, 2, None), (16, 256, 128, 4, 4, None), (16, 256, 128, 8, 4, None),
    (16, 256, 128, 16, 4, None), (16, 128, 64, 32, 2, None),
    (128, 128, 64, 1, 4, None), (128, 128, 32, 1, 4, None), (128, 256, 32, 1, 8, None),
]


def pairs_codes(w_dtype) -> bool:
    """Whether the packing pairs codes j and j + 4 of each eight (unit_layout): 3- and
    4-bit integers, whose pairs then convert with one lop3 and one fma each."""
    return w_dtype.is_integer and w_dtype.bits in (3, 4)


def unit_layout(w_dtype):
    """A packing unit's codes over a warp: the B fragments of eight m16n8k16 atoms side by
    side along n, lane t's 32 codes in its registers' order. Modes: k = 8r + 2c + h (r the
    fragment register, c = t % 4, h the half), n = 8 * atom + t // 4 (atom = 2 hi + lo).
    3- and 4-bit integer codes go in a paired order: within each 8 codes (a 32-bit word
    of 4-bit codes) codes j and j + 4 are the fragment elements 2j and 2j + 1, one half2
    of the fragment, which the cast to the dot's layout converts with one lop3 and one
    sub/fma per pair (no byte shuffles: tilus::int4x8_paired_to_half,
    tilus::int3x8_paired_to); other types keep the fragment order."""
    paired = pairs_codes(w_dtype)
    local_order = [3, 2, 4, 0] if paired else [3, 4, 0, 2]  # (hi, h, lo, r) or (hi, lo, r, h)
    return register_layout([UNIT_K, UNIT_N], [2, 4, 2, 4, 2, 8], [5, 1], local_order)


def fragment_unit():
    """unit_layout in the fragment order: the dot's B layout is a tile of these."""
    return unit_layout(uint8)


def unit_layout_t(w_dtype):
    """unit_layout(w_dtype) transposed: the same codes of each lane as a [64, 16] tile of
    W^T. The B fragments of two n8 atoms side by side are exactly one m16n8k16 A fragment
    of W^T (rows n, columns k), so the packing serves both forms unchanged."""
    paired = pairs_codes(w_dtype)
    local_order = [0, 5, 1, 3] if paired else [0, 1, 3, 5]  # (hi, h, lo, r) or (hi, lo, r, h)
    return register_layout([UNIT_N, UNIT_K], [4, 2, 8, 2, 4, 2], [2, 4], local_order)


def in_fragment_order(layout, w_dtype):
    """A tile of unit_layout(w_dtype) units as the same tile of fragment-order units."""
    return divide(layout, unit_layout(w_dtype)) * fragment_unit()


def unit_bytes(w_dtype) -> int:
    """Bytes of one lane's codes in a packing unit (32 codes)."""
    return 4 * w_dtype.bits


def unit_reader(units_k, units_n, nbytes, wk, wn, replicas):
    """The layout that reads a packed tile [k units, n units, 32 * nbytes] (each unit's
    32 lanes' bytes in one row, so that copies move it in 16-byte chunks whatever the
    bytes per lane) so that each thread gets its fragments' bytes in their order: warps
    wk x wn over the units (each a block of them, the k unit outermost in the thread's
    registers as the k16 step is in the fragment's), lane t the bytes [t * nbytes,
    (t + 1) * nbytes) of each of its units, `replicas` copies of it all."""
    layout = (spatial(wk, wn, 1) * local(units_k // wk, units_n // wn, 1)
              * spatial(1, 1, 32) * local(1, 1, nbytes))
    return replicate(replicas, 3) * layout if replicas > 1 else layout


def dequant_layouts(units_k, units_n, num_warps, w_dtype):
    """(weights, packed bytes) layouts of a [16 units_k, 64 units_n] tile that each
    weight is dequantised once over: the warps split the tile's units (wk x wn warps, each
    a block of them), each thread holds its units' B fragments."""
    wk = math.gcd(num_warps, units_k)
    wn = num_warps // wk
    assert units_n % wn == 0, f"{units_n} units of {UNIT_N} columns must spread over {wn} warps"
    weights = spatial(wk, wn) * local(units_k // wk, units_n // wn) * unit_layout(w_dtype)
    return weights, unit_reader(units_k, units_n, unit_bytes(w_dtype), wk, wn, 1)


class TileDequantizer:
    """What MatmulA16Wx and DequantizeWeights share: a tile of packed weights (its bytes
    laid out as w_load_layout) to the activation type, (value - zero) * scale; `zero` is
    None without zero points."""

    def dequantize(self, packed, scale, zero):
        b = self.cast(self.view(packed, dtype=self.w_dtype, layout=self.w_layout), dtype=self.a_dtype)
        # the values in the fragments' order (paired codes are reordered by the cast)
        self.annotate_layout(b, in_fragment_order(self.w_layout, self.w_dtype))
        return (b - zero) * scale if self.has_zero else b * scale


@tilus.autotune("block_m, block_n, block_k, split_k, num_warps, static_stages", TILES)
@tilus.autotune("num_stages", [3, 4])
class MatmulA16Wx(TileDequantizer, tilus.Script):
    """c = a @ dequant(w): a [m, k] (a_dtype), w pre-packed by `prepack` (uint8
    [cdiv(k, 16), cdiv(n, 64), 32, 4 * bits]), scales (and zeros when has_zero)
    [cdiv(k, group_size), n] (a_dtype), c [m, n] (a_dtype). With zero_dtype=uint8 the zero
    points come as integer codes 0-255 instead (QuantizedLinear passes them so when they
    are integers): the code generator then folds them into the 4-bit conversion's
    constants, one instruction a weight pair fewer. static_stages (default: for the 8-row
    tiles) unrolls the k loop by the ring's length (compile-time stage indices)."""

    def __init__(self, a_dtype, w_dtype, group_size, has_zero, block_m, block_n, block_k, split_k,
                 num_warps, num_stages, zero_dtype=None, static_stages=None):
        super().__init__()
        assert a_dtype in (float16, bfloat16), "activations are float16 or bfloat16"
        assert w_dtype.bits <= 8, "weights of 1 to 8 bits"
        self.a_dtype, self.w_dtype, self.group_size, self.has_zero = a_dtype, w_dtype, group_size, has_zero
        self.zero_dtype = zero_dtype or a_dtype
        if self.zero_dtype not in (a_dtype, uint8):
            raise ValueError(f"zero_dtype must be the activation type or uint8, got {zero_dtype}")
        self.num_warps, self.block_m, self.block_n = num_warps, block_m, block_n
        # one scale row per k step: a block never spans two groups
        self.block_k = min(block_k, group_size)
        assert group_size % self.block_k == 0 and self.block_k % UNIT_K == 0
        self.split_k, self.num_stages = split_k, num_stages
        self.units_k, self.units_n = self.block_k // UNIT_K, block_n // UNIT_N
        self.unit_bytes = unit_bytes(w_dtype)
        self.dequant_in_shared = block_m >= 64
        # Decode tiles of 8 rows compute C^T = W^T A^T: the weights are the mma's A operand
        # (16 columns of W an m16n8k16, A's rows padded to 8 rather than 16), so at m <= 8
        # a k-step takes half the mma.syncs, half the scale products and half the shared
        # memory for A of the 16-row form.
        self.transposed = block_m == 8
        # static_stages: the k loop unrolled by the ring's length, so that each step's
        # stage is a compile-time constant and its shared addresses fold into the
        # instructions (598 -> 515 SASS a step for the 8-row uint4 tile, ~90 integer
        # instructions fewer). Measured on an H200 (2026-11-29, fixed configurations,
        # two interleaved rounds): 8-row tiles 2-3% faster at m = 1 on all four decode
        # weights; 16-row tiles at m = 16 -3% to +7%, so they keep the rolled loop.
        self.static_stages = self.transposed if static_stages is None else static_stages
        if self.transposed:
            assert block_n % (num_warps * UNIT_N) == 0, \
                f"an 8-row tile splits its columns over the warps, a multiple of {UNIT_N} each"
            # each warp block_n / num_warps rows of W^T, its units in the order the packed
            # bytes come (the k unit outermost, as unit_reader reads them)
            warp_units = spatial(num_warps, 1) * column_local(block_n // (num_warps * UNIT_N), self.units_k)
            self.w_layout = warp_units * unit_layout_t(w_dtype)
            self.w_fragment_layout = warp_units * unit_layout_t(uint8)
            self.w_load_layout = unit_reader(self.units_k, self.units_n, self.unit_bytes, 1, num_warps, 1)
            return
        # The dot's B fragments over the block: warps_m x warps_n warps, each a whole
        # number of 16 x 64 units along n (the warps of one column replicate them).
        plan = mma_block_layouts("m16n8k16", block_m, block_n, self.block_k, num_warps)
        wm, wn = plan["warps_m"], plan["warps_n"]
        assert block_n % (wn * UNIT_N) == 0, f"each warp's n tile must be a multiple of {UNIT_N}"
        if not self.dequant_in_shared:
            # Decode: each warp dequantises exactly the fragments it holds.
            self.w_layout = divide(plan["b"], fragment_unit()) * unit_layout(w_dtype)
            assert in_fragment_order(self.w_layout, w_dtype) == plan["b"]
            self.w_load_layout = unit_reader(self.units_k, self.units_n, self.unit_bytes, 1, wn, wm)
        else:
            # Prefill: each weight is dequantised once per block: the warps split the tile's
            # units (wk x wn warps, each a block of units), write the fp16 tile to shared
            # memory k-major, and the dot reads both operands from shared memory (wgmma on
            # sm_90a).
            self.w_layout, self.w_load_layout = dequant_layouts(self.units_k, self.units_n, num_warps, w_dtype)

    def zero_points(self, row):
        """A stage's zero-point row (a shared view) in the activation type."""
        z = self.load_shared(row)
        return z if self.zero_dtype == self.a_dtype else self.cast(z, dtype=self.a_dtype)

    @property
    def ring_slots(self):
        """The ring's stage indices as a Python tuple (a loop over it is unrolled)."""
        return tuple(range(self.num_stages))

    def k_step(self, acc, views, rings, stage, preload, offset_k: int32, k_end: int32, offset_m: int32,
               offset_n: int32):
        """One k-step: the tile of stage `stage` into acc (returned), then the copies of
        the step stages - 1 ahead into stage `preload`, and the wait for the next stage."""
        ga, gw, gs, gz = views
        sa, sw, ss, sz, sbt = rings
        stages, bk, group = self.num_stages, self.block_k, self.group_size
        packed = self.load_shared(sw[stage], layout=self.w_load_layout)
        if self.transposed:
            # the same step as below, transposed: acc^T += s^T * ((w - z)^T @ a^T)
            w_t = self.cast(self.view(packed, dtype=self.w_dtype, layout=self.w_layout), dtype=self.a_dtype)
            # the values in the fragments' order (paired codes are reordered by the cast)
            self.annotate_layout(w_t, self.w_fragment_layout)
            if self.has_zero:
                w_t = w_t - self.zero_points(sz[stage].transpose())
            # A^T as the register transpose of A's tile (ldmatrix reads A's rows as is)
            part_t = self.dot(w_t, self.transpose(self.load_shared(sa[stage])))
            acc = acc + part_t * self.cast(self.load_shared(ss[stage].transpose()), dtype=float32)
        elif self.dequant_in_shared:
            b = self.dequantize(packed, self.load_shared(ss[stage]),
                                self.zero_points(sz[stage]) if self.has_zero else None)
            self.store_shared(sbt, self.transpose(b))
            self.sync()
            self.dot(self.load_shared(sa[stage]), self.load_shared(sbt.transpose()), acc, out=acc)
        else:
            # A step lies inside one scale group, so its scale factors out of the
            # step's k-sum: acc += s * (a @ (w - z)). The tensor cores take the codes'
            # values less the zero point (rounded to the activation type as in the
            # reference dequantisation) and the scale applies once per output per step,
            # not once per weight.
            w = self.cast(self.view(packed, dtype=self.w_dtype, layout=self.w_layout), dtype=self.a_dtype)
            if self.has_zero:
                w = w - self.zero_points(sz[stage])
            part = self.dot(self.load_shared(sa[stage]), w)
            acc = acc + part * self.cast(self.load_shared(ss[stage]), dtype=float32)
        preload_k = offset_k + (stages - 1) * bk
        if preload_k < k_end:
            self.copy_async(src=ga, dst=sa[preload], offsets=[offset_m, preload_k])
            self.copy_async(src=gw, dst=sw[preload], offsets=[preload_k // UNIT_K, offset_n // UNIT_N, 0])
            self.copy_async(src=gs, dst=ss[preload], offsets=[preload_k // group, offset_n])
            if self.has_zero:
                self.copy_async(src=gz, dst=sz[preload], offsets=[preload_k // group, offset_n])
        self.copy_async_commit_group()
        self.copy_async_wait_group(n=stages - 2)
        self.sync()
        return acc

    def __call__(self, m_size: int32, n_size: int, k_size: int, a_ptr: void_p, w_ptr: void_p,
                 scale_ptr: void_p, zero_ptr: void_p, c_ptr: void_p):
        bm, bn, bk = self.block_m, self.block_n, self.block_k
        stages, splits, group = self.num_stages, self.split_k, self.group_size
        uk, un = self.units_k, self.units_n
        self.attrs.blocks = [cdiv(m_size, bm), cdiv(n_size, bn), splits]
        self.attrs.warps = self.num_warps

        chunk = cdiv(cdiv(k_size, splits), bk) * bk
        k_begin = self.blockIdx.z * chunk
        k_end = min(k_begin + chunk, k_size)
        offset_m: int32 = self.blockIdx.x * bm
        offset_n: int32 = self.blockIdx.y * bn

        ga = self.global_view(a_ptr, dtype=self.a_dtype, shape=[m_size, k_size])
        gw = self.global_view(w_ptr, dtype=uint8,
                              shape=[cdiv(k_size, UNIT_K), cdiv(n_size, UNIT_N), 32 * self.unit_bytes])
        gs = self.global_view(scale_ptr, dtype=self.a_dtype, shape=[cdiv(k_size, group), n_size])
        gz = self.global_view(zero_ptr, dtype=self.zero_dtype, shape=[cdiv(k_size, group), n_size])
        sa = self.shared_tensor(dtype=self.a_dtype, shape=[stages, bm, bk])
        sw = self.shared_tensor(dtype=uint8, shape=[stages, uk, un, 32 * self.unit_bytes])
        # the scale (and zero-point) row of each stage rides in the same cp.async groups
        ss = self.shared_tensor(dtype=self.a_dtype, shape=[stages, 1, bn])
        sz = self.shared_tensor(dtype=self.zero_dtype, shape=[stages, 1, bn])
        if self.dequant_in_shared:
            # dequantised, k-major. One buffer: each step writes it before the dot that
            # reads it, so a second one would still wait for the previous dot (dequantising
            # one step ahead would overlap them).
            sbt = self.shared_tensor(dtype=self.a_dtype, shape=[bn, bk])
        # C^T when transposed
        acc = self.register_tensor(dtype=float32, shape=[bn, bm] if self.transposed else [bm, bn], init=0.0)

        for s in range(stages - 1):
            self.copy_async(src=ga, dst=sa[s], offsets=[offset_m, k_begin + s * bk])
            self.copy_async(src=gw, dst=sw[s], offsets=[(k_begin + s * bk) // UNIT_K, offset_n // UNIT_N, 0])
            self.copy_async(src=gs, dst=ss[s], offsets=[(k_begin + s * bk) // group, offset_n])
            if self.has_zero:
                self.copy_async(src=gz, dst=sz[s], offsets=[(k_begin + s * bk) // group, offset_n])
            self.copy_async_commit_group()
        self.copy_async_wait_group(n=stages - 2)
        self.sync()

        views = (ga, gw, gs, gz)
        rings = (sa, sw, ss, sz, sbt if self.dequant_in_shared else None)
        if self.static_stages:
            # unrolled by the ring's length: each step's stage (and the stage it refills)
            # is a compile-time constant, so its shared addresses are too
            for k0 in self.range(k_begin, k_end, bk * stages):
                for s in self.ring_slots:
                    if k0 + s * bk < k_end:
                        acc = self.k_step(acc, views, rings, s, (s + stages - 1) % stages, k0 + s * bk, k_end,
                                          offset_m, offset_n)
        else:
            stage: int32 = 0
            preload: int32 = stages - 1
            for offset_k in self.range(k_begin, k_end, bk):
                acc = self.k_step(acc, views, rings, stage, preload, offset_k, k_end, offset_m, offset_n)
                stage = (stage + 1) % stages
                preload = (preload + 1) % stages
        self.free_shared(sa)
        self.free_shared(sw)
        self.free_shared(ss)
        self.free_shared(sz)
        if self.dequant_in_shared:
            self.free_shared(sbt)
        if self.transposed:
            acc = self.transpose(acc)

        gc = self.global_view(c_ptr, dtype=self.a_dtype, shape=[m_size, n_size])
        if splits == 1:
            self.store_global(gc, self.cast(acc, dtype=self.a_dtype), offsets=[offset_m, offset_n])
        else:
            # Every block adds its fp32 partial into one workspace tile with atomics (no
            # block waits for another), then counts itself in; the last of the `splits`
            # blocks of the tile (the count it saw is splits - 1) reads the sum, writes
            # C, and leaves the workspace and its counter zeroed for the next launch.
            total = self.global_tensor(dtype=float32, shape=[m_size, n_size], requires_clean=True)
            arrived = self.global_tensor(dtype=int32, shape=[cdiv(m_size, bm), cdiv(n_size, bn)],
                                         requires_clean=True)
            self.atomic.global_add(total, acc, offsets=[offset_m, offset_n])
            self.sync()
            one = self.register_tensor(dtype=int32, shape=[1, 1], init=1)
            seen = self.atomic.global_add(arrived, one, offsets=[self.blockIdx.x, self.blockIdx.y],
                                          sem="acq_rel")
            if seen.item() == splits - 1:
                tile = self.load_global(total, offsets=[offset_m, offset_n], shape=[bm, bn])
                self.store_global(gc, self.cast(tile, dtype=self.a_dtype), offsets=[offset_m, offset_n])
                self.sync()  # every thread has read its part before any is zeroed
                self.store_global(total, self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0),
                                  offsets=[offset_m, offset_n])
                self.store_global(arrived, self.register_tensor(dtype=int32, shape=[1, 1], init=0),
                                  offsets=[self.blockIdx.x, self.blockIdx.y])


# the five fastest of eight tiles measured on an H100 (20-22 us at 4096 x 4096 uint4, 0.8x
# the rate of a device copy moving the same bytes)
@tilus.autotune("block_k, block_n, num_warps", [(64, 256, 8), (32, 256, 4), (64, 128, 4), (128, 128, 4),
                                                 (64, 128, 2)])
class DequantizeWeights(TileDequantizer, tilus.Script):
    """w_t = dequant(w)^T, [n, k] in a_dtype, from the packed weights: the first step of the
    prefill path (QuantizedLinear). One pass over the weight bytes; each block dequantises
    a [block_k, block_n] tile in registers as MatmulA16Wx's prefill tiles do, turns it k-major
    through shared memory and writes it with 16-byte stores."""

    def __init__(self, a_dtype, w_dtype, group_size, has_zero, block_k, block_n, num_warps):
        super().__init__()
        self.a_dtype, self.w_dtype, self.group_size, self.has_zero = a_dtype, w_dtype, group_size, has_zero
        self.block_k, self.block_n = min(block_k, group_size), block_n  # one scale row per tile
        self.num_warps = num_warps
        self.units_k, self.units_n = self.block_k // UNIT_K, self.block_n // UNIT_N
        self.unit_bytes = unit_bytes(w_dtype)
        self.w_layout, self.w_load_layout = dequant_layouts(self.units_k, self.units_n, num_warps, w_dtype)

    def __call__(self, n_size: int, k_size: int, w_ptr: void_p, scale_ptr: void_p, zero_ptr: void_p,
                 out_ptr: void_p):
        bk, bn, uk, un, group = self.block_k, self.block_n, self.units_k, self.units_n, self.group_size
        self.attrs.blocks = [cdiv(k_size, bk), cdiv(n_size, bn)]
        self.attrs.warps = self.num_warps
        offset_k: int32 = self.blockIdx.x * bk
        offset_n: int32 = self.blockIdx.y * bn
        gw = self.global_view(w_ptr, dtype=uint8,
                              shape=[cdiv(k_size, UNIT_K), cdiv(n_size, UNIT_N), 32 * self.unit_bytes])
        gs = self.global_view(scale_ptr, dtype=self.a_dtype, shape=[cdiv(k_size, group), n_size])
        gz = self.global_view(zero_ptr, dtype=self.a_dtype, shape=[cdiv(k_size, group), n_size])
        go = self.global_view(out_ptr, dtype=self.a_dtype, shape=[n_size, k_size])
        packed = self.load_global(gw, offsets=[offset_k // UNIT_K, offset_n // UNIT_N, 0],
                                  shape=[uk, un, 32 * self.unit_bytes], layout=self.w_load_layout)
        row = [offset_k // group, offset_n]  # the tile's scale (and zero-point) row
        b = self.dequantize(packed, self.load_global(gs, offsets=row, shape=[1, bn]),
                            self.load_global(gz, offsets=row, shape=[1, bn]) if self.has_zero else None)
        st = self.shared_tensor(dtype=self.a_dtype, shape=[bn, bk])
        self.store_shared(st, self.transpose(b))
        self.sync()
        self.store_global(go, self.load_shared(st), offsets=[offset_n, offset_k])
        self.free_shared(st)


# ---------------------------------------------------------------- host helpers


def pack_weights(codes: torch.Tensor, w_dtype) -> torch.Tensor:
    """The [k, n] weight codes (integers, the low w_dtype.bits bits of each are kept) as
    the packed uint8 stream the kernel reads: element i of the row-major matrix at bits
    [i*b, (i+1)*b), little-endian (Tilus 0.2's packing). 8-bit types are their bytes."""
    bits = w_dtype.bits
    flat = codes.reshape(-1).to(torch.int64) & ((1 << bits) - 1)
    if bits == 8:
        return flat.to(torch.uint8)
    n_bytes = (flat.numel() * bits + 7) // 8
    if 8 % bits == 0:  # whole elements per byte: shift and add
        per = 8 // bits
        padded = torch.zeros(n_bytes * per, dtype=torch.int64, device=codes.device)
        padded[: flat.numel()] = flat
        shifts = torch.arange(per, device=codes.device) * bits
        return (padded.view(-1, per) << shifts).sum(dim=1).to(torch.uint8)
    out = torch.zeros(n_bytes, dtype=torch.int64, device=codes.device)
    pos = torch.arange(flat.numel(), device=codes.device) * bits
    for j in range(bits):  # bit j of every element; distinct bits, so adding is or-ing
        p = pos + j
        out.index_add_(0, p // 8, ((flat >> j) & 1) << (p % 8))
    return out.to(torch.uint8)


def _unit_order(w_dtype) -> torch.Tensor:
    """[32, 32]: the row-major index (k * 64 + n) in a 16 x 64 packing unit of code l of
    lane t (unit_layout: the B-fragment registers of eight m16n8k16 atoms side by side
    along n, 3- and 4-bit integers paired)."""
    unit = unit_layout(w_dtype)
    order = torch.empty(32, 32, dtype=torch.int64)
    for t in range(32):
        for l in range(32):
            k, n = unit.coords(t, l)
            order[t, l] = k * UNIT_N + n
    return order


def prepack(codes: torch.Tensor, w_dtype) -> torch.Tensor:
    """The [k, n] weight codes laid out for MatmulA16Wx: uint8 [cdiv(k, 16), cdiv(n, 64),
    32, 4 * bits], unit (i, j) covering rows 16i.. and columns 64j.., lane t's 32 codes in
    unit_layout's order, bit-packed as `pack_weights` packs. Rows and columns past the
    matrix hold code 0 (a finite value in every type; the kernel multiplies it by zero
    activations or drops its outputs)."""
    k, n = codes.shape
    ku, nu = cdiv(k, UNIT_K), cdiv(n, UNIT_N)
    padded = torch.zeros(ku * UNIT_K, nu * UNIT_N, dtype=torch.int64, device=codes.device)
    padded[:k, :n] = codes.to(torch.int64)
    units = padded.view(ku, UNIT_K, nu, UNIT_N).permute(0, 2, 1, 3).reshape(ku, nu, UNIT_K * UNIT_N)
    ordered = units[:, :, _unit_order(w_dtype).to(codes.device).flatten()]
    return pack_weights(ordered, w_dtype).view(ku, nu, 32, unit_bytes(w_dtype))


class _CodeValues(tilus.Script):
    """values[c] = the float32 value of code c of `dtype` (the codec the kernels use)."""

    def __init__(self, dtype):
        super().__init__()
        self.dtype, self.n = dtype, 1 << dtype.bits

    def __call__(self, codes: void_p, values: ~float32):
        self.attrs.blocks = 1
        self.attrs.warps = 1
        g = self.global_view(codes, dtype=self.dtype, shape=[self.n])
        o = self.global_view(values, dtype=float32, shape=[self.n])
        self.store_global(o, self.cast(self.load_global(g, offsets=[0], shape=[self.n]), dtype=float32),
                          offsets=[0])


def code_values(w_dtype) -> torch.Tensor:
    """The value of every code of w_dtype, as float32 (computed on the CPU)."""
    n = 1 << w_dtype.bits
    values = torch.empty(n, dtype=torch.float32)
    _CodeValues(w_dtype)(pack_weights(torch.arange(n), w_dtype), values)
    return values


def dequantize(codes, w_dtype, scales, zeros, group_size, a_dtype) -> torch.Tensor:
    """The reference weights: (value(w) - z) * s, [k, n], computed in a_dtype one
    operation at a time (each rounds once), as the kernel does."""
    t = {float16: torch.float16, bfloat16: torch.bfloat16}[a_dtype]
    values = code_values(w_dtype).to(codes.device)[codes.long()].to(t)
    s = scales.repeat_interleave(group_size, dim=0)[: codes.shape[0]]
    if zeros is not None:
        values = values - zeros.repeat_interleave(group_size, dim=0)[: codes.shape[0]]
    return values * s


def random_weights(k, n, w_dtype, group_size, a_dtype, has_zero, device, seed=0):
    """Random codes, scales (and zero points) of a plausible magnitude: the products stay
    about 1/sqrt(k), so a k-long dot product of unit activations stays near 1."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    t = {float16: torch.float16, bfloat16: torch.bfloat16}[a_dtype]
    values = code_values(w_dtype)
    finite = torch.nonzero(torch.isfinite(values)).flatten()  # no NaN/inf codes (FP8)
    codes = finite[torch.randint(0, finite.numel(), (k, n), generator=gen)]
    top = float(values[finite].abs().max())
    groups = cdiv(k, group_size)
    scales = ((torch.rand(groups, n, generator=gen) + 0.5) / (top * math.sqrt(k))).to(t)
    zeros = None
    if has_zero:
        zeros = torch.randint(0, 1 << min(w_dtype.bits, 4), (groups, n), generator=gen).to(t)
    codes = codes.to(device)
    scales = scales.to(device)
    zeros = zeros.to(device) if zeros is not None else None
    return codes, scales, zeros


# From this many rows on (prefill), on Hopper or in the CPU interpreter, QuantizedLinear
# runs examples/matmul_a16wx_hopper.py (the weights as wgmma's register operand,
# dequantised beside the tensor cores); for 5- to 7-bit floats from
# TWO_PASS_WIDE_FLOATS_FROM_M rows it dequantises the weights once per call and runs the
# warp-specialised matmul (examples/matmul_warp_specialized.py).
PREFILL_M = 512
TWO_PASS_WIDE_FLOATS_FROM_M = 2048  # QuantizedLinear.fused_prefill


class QuantizedLinear:
    """y = x @ dequant(W) with W kept packed. Up to `prefill_m` rows the fused kernel
    `kernel` (MatmulA16Wx, autotuned); from there on, where the Hopper kernels run,
    MatmulA16WxHopper (`hopper`) over a second packing of W (`packed_hopper`: bits / 8
    bytes a weight more, made only where that kernel can run), or (`fused_prefill`) W
    dequantised into a [n, k] scratch tensor per call (DequantizeWeights) and the
    warp-specialised matmul."""

    def __init__(self, codes, w_dtype, scales, zeros=None, group_size=128, a_dtype=float16,
                 prefill_m=PREFILL_M):
        if codes.dim() != 2:
            raise ValueError(f"codes must be a [k, n] matrix, got shape {tuple(codes.shape)}")
        self.k, self.n = codes.shape
        self.w_dtype, self.group_size, self.a_dtype = w_dtype, group_size, a_dtype
        t = dtype_to_torch(a_dtype)
        groups = (cdiv(self.k, group_size), self.n)
        if tuple(scales.shape) != groups or scales.dtype != t or scales.device != codes.device:
            raise ValueError(f"scales must be {t} [{groups[0]}, {groups[1]}] (one row per group of {group_size} "
                             f"along k) on {codes.device}, got {scales.dtype} {list(scales.shape)} on {scales.device}")
        if zeros is not None:
            if tuple(zeros.shape) != groups or zeros.device != codes.device:
                raise ValueError(f"zeros must be [{groups[0]}, {groups[1]}] like scales, on {codes.device}, "
                                 f"got {list(zeros.shape)} on {zeros.device}")
            if zeros.is_floating_point():
                if zeros.dtype != t:
                    raise ValueError(f"zeros must be integers or {t} (the activation type), got {zeros.dtype}")
            else:  # integer zero points: exact in the activation type?
                limit = 2048 if a_dtype == float16 else 256
                if bool((zeros.abs() > limit).any()):
                    raise ValueError(f"integer zeros must lie within +-{limit} (exact in {t}), "
                                     f"got {int(zeros.abs().max())}")
        self.packed = prepack(codes, w_dtype)
        self.scales = scales.contiguous()
        # zero points that are integers 0-255 (as quantisers make them) go to the fused
        # kernel as uint8 codes, which its conversion folds in (MatmulA16Wx, zero_dtype);
        # the other kernels take them in the activation type
        self.zero_codes = None
        if zeros is not None:
            integral = not zeros.is_floating_point() or bool((zeros == zeros.round()).all())
            if integral and bool(((zeros >= 0) & (zeros <= 255)).all()):
                self.zero_codes = zeros.to(torch.uint8).contiguous()
            zeros = zeros.to(t)
        self.zeros = zeros.contiguous() if zeros is not None else self.scales  # unread then
        self.kernel = MatmulA16Wx(a_dtype, w_dtype, group_size, zeros is not None,
                                  zero_dtype=uint8 if self.zero_codes is not None else None)
        self.dequantizer = DequantizeWeights(a_dtype, w_dtype, group_size, zeros is not None)
        self.hopper = self.packed_hopper = None
        if group_size % 32 == 0 and _runs_hopper_kernels(codes.device):
            self.hopper = _hopper_a16wx().MatmulA16WxHopper(a_dtype, w_dtype, group_size, zeros is not None)
            self.packed_hopper = _hopper_a16wx().prepack_hopper(codes, w_dtype)
        self.prefill_m = prefill_m

    def uses_prefill_path(self, x: torch.Tensor) -> bool:
        if x.shape[0] < self.prefill_m or self.k % 8 or self.n % 8:  # TMA: 16-byte rows
            return False
        return _runs_hopper_kernels(x.device)

    def fused_prefill(self, m: int) -> bool:
        """Whether a prefill call of m rows runs MatmulA16WxHopper (else dequantise +
        matmul): for groups of 32, 64, 128, ..., except for 5- to 7-bit floats (the longest
        conversion) from TWO_PASS_WIDE_FLOATS_FROM_M rows. Measured on an H200 (2026-11-28,
        one-off scripts .diag/a16path.py, a16db.py and g32.py, not kept; five weight types,
        two or three weight shapes): 1.1-1.6x the two-pass path at m = 512-2048 (groups of 32: 0.85-0.96x
        cuBLAS fused against 0.73-0.76x two-pass at m = 1024), ahead or tied at 4096 and 8192,
        but float6_e3m2 0.84-0.86x cuBLAS at m = 4096 against 0.91-0.93x two-pass (groups
        of 32: 0.95x against 0.98x at 4096 x 4096)."""
        if self.hopper is None:
            return False
        wide_float = self.w_dtype.is_float and 5 <= self.w_dtype.bits <= 7
        return not (wide_float and m >= TWO_PASS_WIDE_FLOATS_FROM_M)

    def dequantized_t(self, device) -> torch.Tensor:
        """dequant(W)^T [n, k] in the activation type, computed on the device."""
        w_t = torch.empty(self.n, self.k, dtype=self.scales.dtype, device=device)
        self.dequantizer(self.n, self.k, self.packed, self.scales, self.zeros, w_t)
        return w_t

    def __call__(self, x: torch.Tensor, out: torch.Tensor = None) -> torch.Tensor:
        self._check_operands(x, out)
        m = x.shape[0]
        if out is None:
            out = torch.empty(m, self.n, dtype=x.dtype, device=x.device)
        if self.uses_prefill_path(x):
            if self.fused_prefill(m):
                self.hopper(m, self.n, self.k, x, self.packed_hopper, self.scales, self.zeros, out)
                return out
            return _hopper_matmul().matmul(x, self.dequantized_t(x.device), 1.0, out)
        self.kernel(m, self.n, self.k, x, self.packed, self.scales, self.kernel_zeros, out)
        return out

    def _check_operands(self, x: torch.Tensor, out) -> None:
        """x [m, k] and out [m, n], contiguous, in the activation type, on the weights'
        device: the kernels take raw pointers and would misread anything else."""
        t, device = dtype_to_torch(self.a_dtype), self.packed.device
        if x.dim() != 2 or x.shape[1] != self.k or x.dtype != t or x.device != device or not x.is_contiguous():
            raise ValueError(f"x must be a contiguous {t} [m, {self.k}] tensor on {device}, got "
                             f"{'' if x.is_contiguous() else 'a non-contiguous '}{x.dtype} {list(x.shape)} on {x.device}")
        if out is not None:
            check_tensor(out, "out", (x.shape[0], self.n), t, device)

    @property
    def kernel_zeros(self) -> torch.Tensor:
        """The zero points as `kernel` takes them."""
        return self.zero_codes if self.zero_codes is not None else self.zeros

    def describe(self, x: torch.Tensor, out: torch.Tensor = None) -> str:
        """How a call with x runs: the kernel and its configuration."""
        if out is None:
            out = torch.empty(x.shape[0], self.n, dtype=x.dtype, device=x.device)
        if self.uses_prefill_path(x):
            if not self.fused_prefill(x.shape[0]):
                return "dequantize + matmul_warp_specialized"
            config = self.hopper.chosen_config(x.shape[0], self.n, self.k, x, self.packed_hopper,
                                               self.scales, self.zeros, out)
            return f"MatmulA16WxHopper {config}"
        return str(self.kernel.chosen_config(x.shape[0], self.n, self.k, x, self.packed, self.scales,
                                             self.kernel_zeros, out))


def _runs_hopper_kernels(device: torch.device) -> bool:
    """Whether the Hopper kernels (TMA, wgmma) run on `device`: an sm_90 GPU, or the CPU
    interpreter."""
    return device.type == "cpu" or torch.cuda.get_device_capability(device) == (9, 0)


def _hopper_a16wx():
    """examples/matmul_a16wx_hopper.py, imported beside this file."""
    _hopper_matmul()  # puts this folder on sys.path
    import matmul_a16wx_hopper

    return matmul_a16wx_hopper


def _hopper_matmul():
    """examples/matmul_warp_specialized.py, imported beside this file."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import matmul_warp_specialized

    return matmul_warp_specialized


def main(device: str = "cpu"):
    if device == "cuda":
        cases = [(1, 4096, 4096), (16, 14336, 4096), (4096, 4096, 4096)]
    else:
        cases = [(1, 200, 256), (19, 72, 136)]
    for w_dtype, group, has_zero in [(tilus.uint4b, 128, True), (tilus.int4b, 64, False),
                                     (tilus.float8_e4m3, 128, False), (tilus.int3b, 32, False)]:
        for m, n, k in cases:
            codes, scales, zeros = random_weights(k, n, w_dtype, group, float16, has_zero, device)
            layer = QuantizedLinear(codes, w_dtype, scales, zeros, group)
            x = torch.randn(m, k, dtype=torch.float16, device=device)
            y = layer(x)
            ref = (x.float() @ dequantize(codes, w_dtype, scales, zeros, group, float16).float()).half()
            torch.testing.assert_close(y, ref, rtol=2e-2, atol=2e-2)
            line = f"a16w{w_dtype.name} g{group} {m}x{n}x{k} on {device}: ok"
            if device == "cuda":
                deq = dequantize(codes, w_dtype, scales, zeros, group, float16)
                t_torch = benchmark_func(lambda: torch.matmul(x, deq), warmup=5, repeat=50)
                t_tilus = benchmark_func(lambda: layer(x, y), warmup=5, repeat=50)
                line += f"  cuBLAS fp16 {t_torch * 1e3:.1f} us  tilus {t_tilus * 1e3:.1f} us"
            print(line)


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
