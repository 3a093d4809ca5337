"""A16Wx prefill matmul for Hopper (sm_90a) with the dequantisation in the main loop:
C[m, n] = A[m, k] @ dequant(W)[k, n], the weights kept packed in global memory.

examples/matmul_a16wx.py multiplies low-precision weights for any m; from a few hundred
rows on, its fused kernel was slower than dequantising the whole weight into a scratch
tensor and running the fp16 warp-specialised matmul (the dequantisation in its main loop
holds the tensor cores back). This kernel is that warp-specialised matmul with the
weights as wgmma's register operand, so the conversion runs beside the tensor cores
instead of before them:

    C^T [n, m] = dequant(W)^T [n, k] @ A^T [k, m]

* warpgroup 0 is the producer: one thread loads each k-step (64 columns of k) with TMA:
  the two [128, 64] halves of the A tile (the wgmma's B operand, K-major, 128-byte
  swizzle), the packed weight tile (128 rows of W^T x 64 k, ``prepack_hopper``'s order)
  and the group's scale (and zero-point) row into a ring of ``stages`` slots.
* warpgroups 1 and 2 are the consumers, 64 rows of W^T each: each thread reads its
  4 * bits bytes of the packed tile with one shared-memory read, ``view``s them as the
  weight type in wgmma's A-fragment layout (3- and 4-bit integers paired, as the A16Wx packing
  pairs them, so the cast converts a code pair per lop3), converts, subtracts
  the zero point and multiplies by the scale in registers, and issues the wgmma with A
  from registers. While one warpgroup converts, the other's wgmma runs.
* the accumulator is two [128, 128] halves (one per half of the A tile); each is staged
  transposed in shared memory and leaves with a TMA store.

Weights: any Tilus 0.2 type of 1 to 8 bits (float8, int8/uint8, 4-bit, 3-bit, 6-bit ...),
group size a multiple of 32 (one scale row per k-step, two for groups of 32), optional zero
points, float16 or bfloat16 activations. TMA needs 16-byte rows: k a multiple of 8, n of 8.

    python examples/matmul_a16wx_hopper.py          # CPU interpreter, small sizes
    python examples/matmul_a16wx_hopper.py --cuda   # GPU: checked against torch, timed beside cuBLAS
"""

import os
import sys

import torch

import tilus
from tilus import bfloat16, float16, float32, int32, uint8, uint32, void_p
from tilus.layout import local, register_layout, spatial
from tilus.utils import benchmark_func, cdiv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul_a16wx import dequantize, pack_weights, pairs_codes, random_weights  # noqa: E402
from matmul_warp_specialized import TmaStoreEpilogue, multiprocessor_count  # noqa: E402

__all__ = ["MatmulA16WxHopper", "prepack_hopper", "TILE_N", "TILE_K"]

TILE_N, TILE_K = 128, 64  # a packed weight tile: 128 rows of W^T (two warpgroups) x one k-step


def fragment_layout(paired: bool):
    """Who holds which weight of a [TILE_N, TILE_K] tile of W^T: wgmma's A fragments of
    the two consumer warpgroups (rows = warpgroup 2 x warp 4 x half 2 x lane // 4 8,
    columns = k16 step 4 x half 2 x lane % 4 x element 2), each thread's 32 codes in its
    registers' order (k step, half of k, half of the rows, element), or with ``paired``
    (3- and 4-bit integers) the element outermost in each k step: codes j and j + 4 of
    each eight (nibbles j and j + 4 of a 32-bit word of 4-bit codes) are then one f16x2
    of the fragment (docs/low_precision.md)."""
    local = [4, 7, 5, 2] if paired else [4, 5, 2, 7]
    return register_layout([TILE_N, TILE_K], [2, 4, 2, 8, 4, 2, 4, 2], [0, 1, 3, 6], local)


def is_paired(w_dtype) -> bool:
    """Whether the codes go paired (codes j and j + 4 of each eight one f16x2): as the
    A16Wx packing pairs them, which this kernel's weights come from."""
    return pairs_codes(w_dtype)


def packed_rows(w_dtype) -> int:
    """A packed tile is [packed_rows, 32] bytes: 256 threads x 4 * bits bytes."""
    return 32 * w_dtype.bits


def _tile_order(w_dtype) -> torch.Tensor:
    """[256 * 32]: the row-major index (row * TILE_K + col) in a [TILE_N, TILE_K] tile of
    W^T of code l of thread t, at t * 32 + l."""
    layout = fragment_layout(is_paired(w_dtype))
    order = torch.empty(256, 32, dtype=torch.int64)
    for t in range(256):
        for l in range(32):
            row, col = layout.coords(t, l)
            order[t, l] = row * TILE_K + col
    return order.flatten()


def prepack_hopper(codes: torch.Tensor, w_dtype) -> torch.Tensor:
    """The [k, n] weight codes laid out for MatmulA16WxHopper: uint8 [cdiv(k, 64),
    cdiv(n, 128), 32 * bits, 32]; tile (i, j) holds rows 128j.. of W^T (columns of W)
    and its columns 64i.. (rows of W), thread t's 32 codes (fragment_layout's order)
    bit-packed at bytes [4 * bits * t, 4 * bits * (t + 1)). Codes past the matrix are 0 (a
    finite value in every type, multiplied by zero-filled activations or dropped)."""
    k, n = codes.shape
    kt, nt = cdiv(k, TILE_K), cdiv(n, TILE_N)
    padded = torch.zeros(kt * TILE_K, nt * TILE_N, dtype=torch.int64, device=codes.device)
    padded[:k, :n] = codes.to(torch.int64)
    # [kt, nt, TILE_N, TILE_K]: tile (i, j) of W^T
    tiles = padded.view(kt, TILE_K, nt, TILE_N).permute(0, 2, 3, 1).reshape(kt, nt, TILE_N * TILE_K)
    ordered = tiles[:, :, _tile_order(w_dtype).to(codes.device)]
    return pack_weights(ordered, w_dtype).view(kt, nt, packed_rows(w_dtype), 32)


# block_m 128 (one wgmma per k-step) is not offered: ptxas serialises its wgmmas (the
# converted registers are written inside what it takes for the pipeline stage)
@tilus.autotune("block_m, stages", [(256, 4), (256, 3), (256, 5)])
@tilus.autotune("group_m", [8, 16])
class MatmulA16WxHopper(TmaStoreEpilogue, tilus.Script):
    """c = a @ dequant(w): a [m, k] (a_dtype), w from `prepack_hopper`, scales (and zeros
    when has_zero) [cdiv(k, group_size), n] (a_dtype), c [m, n] (a_dtype)."""

    def __init__(self, a_dtype, w_dtype, group_size, has_zero, block_m, stages, group_m, num_blocks=None):
        super().__init__()
        if a_dtype not in (float16, bfloat16):
            raise ValueError(f"activations are float16 or bfloat16, got {a_dtype}")
        if not 1 <= w_dtype.bits <= 8:
            raise ValueError(f"weights of 1 to 8 bits, got {w_dtype}")
        if group_size % 32:
            raise ValueError(f"group_size must be a multiple of 32 (one or two scale rows per k-step of "
                             f"{TILE_K}), got {group_size}")
        if block_m % 128:
            raise ValueError(f"block_m must be a multiple of 128 (A is staged in halves of 128 rows), got {block_m}")
        self.a_dtype, self.w_dtype, self.group_size, self.has_zero = a_dtype, w_dtype, group_size, has_zero
        self.block_m, self.stages, self.group_m = block_m, stages, group_m
        self.halves = block_m // 128
        self.scale_rows = max(1, TILE_K // group_size)  # groups of 32: two per k-step
        self.num_blocks = num_blocks or multiprocessor_count()
        self.view_layout = fragment_layout(is_paired(w_dtype))
        self.a_layout = fragment_layout(False)
        self.thread_bytes = 4 * w_dtype.bits
        self.raw_layout = spatial(256, 1) * local(1, self.thread_bytes)  # thread t: its bytes, in order
        # groups of 32: the [TILE_N, 2] scales each thread's fragment rows need (the A
        # fragment's rows and k-step halves; replicated over the 4 lanes of a row)
        self.scale_layout = register_layout([TILE_N, 2], [2, 4, 2, 8, 2], [0, 1, 3, -4], [4, 2])

    def tile_of(self, index: int32, rows: int32, cols: int32):
        """(row, column) in tiles of output tile ``index``, numbered in bands of group_m
        tile rows, column by column inside a band (neighbours share A and W in L2)."""
        band_size = self.group_m * cols
        band = index // band_size
        first = band * self.group_m
        band_rows = min(rows - first, self.group_m)
        in_band = index - band * band_size
        return first + in_band % band_rows, in_band // band_rows

    def __call__(self, m_size: int32, n_size: int32, k_size: int32, a_ptr: void_p, w_ptr: void_p,
                 scale_ptr: void_p, zero_ptr: void_p, c_ptr: void_p):
        bm, bn, bk, stages, halves = self.block_m, TILE_N, TILE_K, self.stages, self.halves
        tiles_m = cdiv(m_size, bm)
        tiles_n = cdiv(n_size, bn)
        num_tiles = tiles_m * tiles_n
        steps = cdiv(k_size, bk)
        blocks = min(num_tiles, self.num_blocks)
        self.attrs.blocks = [blocks]
        self.attrs.warps = 12

        groups = cdiv(k_size, self.group_size)
        ga = self.global_view(a_ptr, dtype=self.a_dtype, shape=[m_size, k_size])
        gw = self.global_view(w_ptr, dtype=uint8, shape=[steps, tiles_n, packed_rows(self.w_dtype), 32])
        gs = self.global_view(scale_ptr, dtype=self.a_dtype, shape=[groups, n_size])
        gz = self.global_view(zero_ptr, dtype=self.a_dtype, shape=[groups, n_size])
        gc = self.global_view(c_ptr, dtype=self.a_dtype, shape=[m_size, n_size])
        sa = self.shared_tensor(dtype=self.a_dtype, shape=[stages, halves, 128, bk])
        sw = self.shared_tensor(dtype=uint8, shape=[stages, packed_rows(self.w_dtype), 32])
        rows = self.scale_rows
        ss = self.shared_tensor(dtype=self.a_dtype, shape=[stages, rows, bn])
        if self.has_zero:
            sz = self.shared_tensor(dtype=self.a_dtype, shape=[stages, rows, bn])
        sc = self.shared_tensor(dtype=self.a_dtype, shape=[128, bn])
        full = self.mbarrier.alloc(counts=[1] * stages)
        empty = self.mbarrier.alloc(counts=[2] * stages)
        slot_bytes = (bm * bk + rows * bn * (2 if self.has_zero else 1)) * self.a_dtype.nbytes + \
            packed_rows(self.w_dtype) * 32

        with self.warp_group(warp_begin=0, num_warps=4):  # producer
            self.setmaxnreg(40, "dec")
            with self.single_thread():
                stage: int32 = 0
                phase: uint32 = self.mbarrier.producer_initial_phase
                for tile in range(self.blockIdx.x, num_tiles, blocks):
                    tm, tn = self.tile_of(tile, tiles_m, tiles_n)
                    for ki in range(steps):
                        self.mbarrier.wait(empty[stage], phase=phase)
                        self.mbarrier.arrive_and_expect_tx(full[stage], slot_bytes)
                        for h in range(halves):
                            self.tma.global_to_shared(src=ga, dst=sa[stage, h], offsets=[tm * bm + h * 128, ki * bk],
                                                      mbarrier=full[stage])
                        self.tma.global_to_shared(src=gw, dst=sw[stage], offsets=[ki, tn, 0, 0], dims=[2, 3],
                                                  mbarrier=full[stage])
                        g = ki * bk // self.group_size
                        self.tma.global_to_shared(src=gs, dst=ss[stage], offsets=[g, tn * bn], mbarrier=full[stage])
                        if self.has_zero:
                            self.tma.global_to_shared(src=gz, dst=sz[stage], offsets=[g, tn * bn],
                                                      mbarrier=full[stage])
                        stage = (stage + 1) % stages
                        if stage == 0:
                            phase ^= 1

        with self.warp_group(warp_begin=4, num_warps=8):  # two consumer warpgroups
            self.setmaxnreg(232, "inc")
            stage: int32 = 0
            phase: uint32 = self.mbarrier.consumer_initial_phase
            for tile in range(self.blockIdx.x, num_tiles, blocks):
                tm, tn = self.tile_of(tile, tiles_m, tiles_n)
                acc = self.register_tensor(dtype=float32, shape=[bn, 128], init=0.0)
                if halves == 2:
                    acc_hi = self.register_tensor(dtype=float32, shape=[bn, 128], init=0.0)
                # Two register buffers for the converted weights, a and b, one k-step each in
                # turn: the tensor cores read a step's registers until its group retires, so
                # step j + 2 may write them only after the wait_group(1) of step j + 1, while
                # step j + 1 converts into the other buffer beside step j's wgmma. (One
                # buffer written again behind wait_group(1) races: ptxas does not keep the
                # registers for the running group. One buffer with wait_group(0) each step
                # is correct and 3-10% slower, H200.)
                for kk in range(0, steps, 2):
                    self.mbarrier.wait(full[stage], phase=phase)
                    wa = self.dequantize_tile(sw[stage], ss[stage], sz[stage] if self.has_zero else ss[stage])
                    self.wgmma.fence()
                    self.wgmma.mma(wa, sa[stage, 0].transpose(), acc)
                    if halves == 2:
                        self.wgmma.mma(wa, sa[stage, 1].transpose(), acc_hi)
                    self.wgmma.commit_group()
                    self.wgmma.wait_group(1)  # step kk - 1 (buffer b) retired
                    if kk > 0:
                        self.release(empty[(stage + stages - 1) % stages])
                    stage = (stage + 1) % stages
                    if stage == 0:
                        phase ^= 1
                    if kk + 1 < steps:
                        self.mbarrier.wait(full[stage], phase=phase)
                        wb = self.dequantize_tile(sw[stage], ss[stage], sz[stage] if self.has_zero else ss[stage])
                        self.wgmma.fence()
                        self.wgmma.mma(wb, sa[stage, 0].transpose(), acc)
                        if halves == 2:
                            self.wgmma.mma(wb, sa[stage, 1].transpose(), acc_hi)
                        self.wgmma.commit_group()
                        self.wgmma.wait_group(1)  # step kk (buffer a) retired
                        self.release(empty[(stage + stages - 1) % stages])
                        stage = (stage + 1) % stages
                        if stage == 0:
                            phase ^= 1
                self.wgmma.wait_group(0)
                if steps > 0:
                    self.release(empty[(stage + stages - 1) % stages])
                # C[m0 + i, n0 + j] = acc[j, i]: staged transposed, stored by TMA
                self.store_through_shared(sc, gc, self.transpose(acc), [tm * bm, tn * bn])
                if halves == 2:
                    self.store_through_shared(sc, gc, self.transpose(acc_hi), [tm * bm + 128, tn * bn])
            with self.single_thread():
                self.tma.wait_group(0)

    def dequantize_tile(self, packed_tile, scale_row, zero_row):
        """The [TILE_N, TILE_K] tile of dequant(W)^T in wgmma's A-fragment layout, from one
        slot: each thread reads its own 4 * bits bytes (one conflict-free read)."""
        raw = self.load_shared(self.reshape_shared(packed_tile, [256, self.thread_bytes]), layout=self.raw_layout)
        codes = self.view(raw, dtype=self.w_dtype, layout=self.view_layout)
        w = self.cast(codes, dtype=self.a_dtype)
        self.annotate_layout(w, self.a_layout)
        if self.scale_rows == 1:
            scale = self.load_shared(self.reshape_shared(scale_row, [TILE_N, 1]))
            if self.has_zero:
                return (w - self.load_shared(self.reshape_shared(zero_row, [TILE_N, 1]))) * scale
            return w * scale
        # groups of 32: k-steps 0-1 of the fragment take scale row 0, k-steps 2-3 row 1 (a
        # reshape that splits the fragment's k-step mode, so no register moves)
        r = self.scale_rows
        w3 = self.reshape(w, [TILE_N, r, TILE_K // r])
        scale = self.reshape(self.load_shared(self.transpose(scale_row), layout=self.scale_layout), [TILE_N, r, 1])
        if self.has_zero:
            zero = self.load_shared(self.transpose(zero_row), layout=self.scale_layout)
            w3 = w3 - self.reshape(zero, [TILE_N, r, 1])
        return self.reshape(w3 * scale, [TILE_N, TILE_K])

    def release(self, barrier):
        """Free a slot: one thread of each consumer warpgroup arrives (its wgmma.wait_group
        retired the warpgroup's reads of the slot)."""
        with self.thread_group(0, num_threads=128):
            with self.single_thread():
                self.mbarrier.arrive(barrier)
        with self.thread_group(128, num_threads=128):
            with self.single_thread():
                self.mbarrier.arrive(barrier)


def main(device: str = "cpu"):
    if device == "cuda":
        cases = [(4096, 4096, 4096), (1000, 4104, 4096), (4096, 14336, 4096)]
    else:
        cases = [(200, 136, 192), (130, 264, 136)]
    for w_dtype, group, has_zero in [(tilus.uint4b, 128, True), (tilus.int4b, 64, False),
                                     (tilus.float8_e4m3, 128, False), (tilus.int3b, 32, False)]:
        for m, n, k in cases:
            codes, scales, zeros = random_weights(k, n, w_dtype, group, float16, has_zero, device)
            packed = prepack_hopper(codes, w_dtype)
            kernel = MatmulA16WxHopper(float16, w_dtype, group, has_zero)
            x = torch.randn(m, k, dtype=torch.float16, device=device)
            y = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
            kernel(m, n, k, x, packed, scales, zeros if has_zero else scales, y)
            deq = dequantize(codes, w_dtype, scales, zeros, group, float16)
            ref = (x.float() @ deq.float()).half()
            torch.testing.assert_close(y, ref, rtol=2e-2, atol=2e-2)
            line = f"a16w{w_dtype.name} g{group} {m}x{n}x{k} on {device}: ok"
            if device == "cuda":
                t_torch = benchmark_func(lambda: torch.matmul(x, deq), warmup=5, repeat=50)
                t_tilus = benchmark_func(lambda: kernel(m, n, k, x, packed, scales, zeros if has_zero else scales, y),
                                         warmup=5, repeat=50)
                line += f"  cuBLAS fp16 {t_torch * 1e3:.1f} us  tilus {t_tilus * 1e3:.1f} us " \
                        f"({t_torch / t_tilus:.2f}x)"
            print(line, flush=True)


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
