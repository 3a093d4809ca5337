"""Persistent, warp-specialised Hopper matmul (sm_90a): C = (A @ B^T) * scale.

A is [m, k] and B is [n, k], both K-major (a Linear layer's weight, the layout FP8
tensor cores need); C is [m, n] float16 (bfloat16 for bfloat16 inputs). Inputs are
float16, bfloat16 or float8_e4m3.

One block per SM walks the output tiles ``blockIdx.x, blockIdx.x + gridDim.x, ...`` in
bands of ``group_m`` tile rows (neighbouring blocks share A and B tiles in L2). With
``cluster_m = 2`` the blocks run in clusters of two that take two tiles stacked along m:
both need the same B tile, so the two producers fetch B's k-tiles in turns, each copy
multicast into both blocks' shared memory (half the B traffic out of L2). With
``cluster_n = 2`` the two tiles sit side by side along n and share A the same way (at
m = 128 every block re-reads the whole of A; measured no faster, so not tuned). Its
threads are split by role and talk only through mbarriers:

* warpgroup 0 is the producer: it gives registers back (``setmaxnreg``) and one thread
  issues the TMA loads of the k-tiles of every tile into a ring of ``stages`` shared
  slots. ``full[s]`` completes when slot s has landed, ``empty[s]`` when the consumers
  are done reading it.
* warpgroups 1 and 2 are the consumers (warpgroup 1 alone when ``block_m`` is 64): they
  take the registers the producer gave back, each multiplies its half of the tile's rows
  with ``wgmma`` (one group in flight while the next slot is awaited), and releases a
  slot as soon as the group that read it retires.
* a ring slot holds ``k_boxes`` k-tiles of 128 bytes a row (the widest swizzled TMA box),
  each copied by its own TMA box; more than one puts more wgmma between two barrier waits
  of a consumer warpgroup, which is what a lone 64-row consumer warpgroup runs short of
  (see the tuning list).
* the epilogue goes through shared memory and leaves with a TMA store. The consumers wait
  for the previous tile's store only when they are about to overwrite its staging
  buffer, and the producer is already filling the next tile's slots meanwhile. With
  ``epilogue="tma_halves"`` the accumulator is held as two column halves (two wgmma per
  k16 step) that are staged one after the other in half the shared memory, which buys a
  fourth 128x256 stage (the ring is what bounds this kernel: a 48 KB stage takes about
  as long to land as one step's wgmma to run); ``"registers"`` stores from registers.
* with ``split_k > 1`` (shapes with few output tiles, m = 128) a work unit is a tile and
  one slice of k; each slice stores its fp32 partial tile in a plane of a workspace of
  its own and counts itself in (an acq_rel atomic), and the tile's last slice sums the
  planes and writes C; with ``split_reduce="atomics"`` (the default beyond 4 slices) the
  slices add into one plane with atomics instead, which the last slice leaves zeroed.

TMA zero-fills loads past the matrix edge and clips stores, so no tile is masked. TMA
needs 16-byte row strides: k a multiple of 8 (16 for float8), n of 8.

    python examples/matmul_warp_specialized.py          # CPU interpreter, small sizes
    python examples/matmul_warp_specialized.py --cuda   # GPU: fp16, bf16 and fp8 checked and timed
"""

import math
import sys

import torch

import tilus
from tilus import bfloat16, float16, float32, float8_e4m3, int32, uint32
from tilus.utils import benchmark_func, cdiv, check_same_device, check_tensor
from tilus.tuning.key import bucket


def multiprocessor_count() -> int:
    """One persistent block per SM on the current GPU (a handful for the interpreter)."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    return 4


class TmaStoreEpilogue:
    """The TMA-store epilogue of the warp-specialised kernels (this matmul, the Hopper
    flash attention): the consumers stage a finished tile in shared memory and one
    thread stores it with TMA (rows past the tensor are clipped)."""

    def store_through_shared(self, staging, dst, tile, offsets, dims=None):
        """Stage the register tile `tile`, converted to `staging`'s dtype, in `staging`
        and store it into `dst` at `offsets` (`dims`: which of dst's dimensions the tile
        spans); `staging` is overwritten only once the previous store has read it."""
        with self.single_thread():
            self.tma.wait_group(0, read=True)
        self.sync()
        self.store_shared(staging, tile.to(staging.dtype))
        self.fence.proxy_async()  # generic-proxy writes before the async-proxy read
        self.sync()
        with self.single_thread():
            self.tma.shared_to_global(staging, dst, offsets=offsets, dims=dims)
            self.tma.commit_group()


def tuning_key(m_size, n_size, k_size, *rest):
    """Which calls share a tuned configuration: m and k bucketed as every size is by
    default (tilus.tuning.key.bucket), n exact. The number of output tiles against the SMs
    decides between the tiles at m = 128, so sizes of one bucket need not share a winner:
    on an H100 (2026-12-06, benchmarks/README.md) 128x14336x4096 ran the 64 x 64 tile that
    won at 12288 (0.89x cuBLAS; the two shared a bucket then) where the 128 x 112 tile ran
    at 0.98x."""
    return (bucket(m_size), n_size, bucket(k_size))


@tilus.autotune_key(tuning_key)
@tilus.autotune("block_m, block_n, stages, epilogue, split_k, k_boxes", [
    (128, 256, 3, "tma", 1, 1), (128, 256, 4, "tma_halves", 1, 1), (128, 256, 4, "registers", 1, 1),
    (128, 128, 5, "tma", 1, 1), (256, 128, 3, "tma", 1, 1),
    # few output tiles (m = 128): the k range split over 2 to 8 blocks (see split_k), or
    # 64-column tiles (twice the tiles; measured 0.66-0.89x -> 0.78-0.93x cuBLAS on the
    # four m = 128 shapes of bench_hopper_matmul, H100)
    (128, 128, 6, "registers", 2, 1), (128, 128, 6, "registers", 4, 1), (128, 128, 6, "registers", 8, 1),
    (128, 64, 8, "tma", 1, 1), (128, 64, 8, "registers", 2, 1),
    # 112-column tiles: 128 tiles at n = 14336 and 110 at 12288 for 132 SMs (128-column
    # tiles leave 20-36 SMs idle): 0.94-0.96 -> 0.96-0.98x cuBLAS there (H200, m = 128)
    (128, 112, 6, "tma", 1, 1),
    # 64 x 64 tiles with one consumer warpgroup and two 128-byte k-tiles a slot: no split-K
    # at m = 128 (the shape of cuBLAS's kernel there); one k-tile a slot ran 5-20% slower
    # than the tuned tiles, two: 0.98x / 1.03x cuBLAS at 128x4096x4096 / 128x4096x14336
    # against 0.87x / 0.98x for the split 128 x 64 tile (H200, fixed configurations)
    (64, 64, 7, "registers", 1, 2)])
@tilus.autotune("group_m", [8, 16])
# Not tuned (measured no faster, H200 2026-11-29, benchmarks/README.md): clusters sharing A
# along n (cluster_n=2).
@tilus.autotune("cluster_m", [1, 2])
class MatmulWarpSpecialized(TmaStoreEpilogue, tilus.Script):
    def __init__(self, block_m, block_n, stages, group_m, cluster_m, epilogue="tma", split_k=1, dtype=float16,
                 num_blocks=None, split_reduce=None, cluster_n=1, k_boxes=1):
        super().__init__()
        if block_m != 64 and block_m % 128:
            raise ValueError("block_m must be 64 (one consumer warpgroup) or a multiple of 128 (two consumer "
                             "warpgroups of 64 rows or more)")
        if group_m % cluster_m:
            raise ValueError("group_m must be a multiple of cluster_m: a cluster's tiles share a band")
        if min(cluster_m, cluster_n) < 1 or min(cluster_m, cluster_n) > 1 or cluster_m * cluster_n > 8:
            raise ValueError(f"a cluster shares either B (cluster_m of up to 8) or A (cluster_n of up to 8), "
                             f"got cluster_m={cluster_m}, cluster_n={cluster_n}")
        self.block_m, self.block_n, self.stages, self.group_m = block_m, block_n, stages, group_m
        self.consumer_groups = 1 if block_m == 64 else 2
        if epilogue not in ("tma", "tma_halves", "registers"):
            raise ValueError(f"epilogue must be 'tma', 'tma_halves' or 'registers', got {epilogue!r}")
        if split_k > 1 and epilogue != "registers":
            raise ValueError("split_k > 1 reduces the partial tiles in global memory: epilogue='registers'")
        self.cluster_m, self.cluster_n, self.epilogue, self.split_k = cluster_m, cluster_n, epilogue, split_k
        self.cluster_size = cluster_m * cluster_n
        # how the slices' partial tiles meet (split_k > 1): "partials", each slice in a plane
        # of its own and the last one summing them, beats "atomics" into one zeroed plane by
        # 3-7% at 2 slices and ties at 4; at 8 the last slice's eight reads cost more than
        # the atomics (H200, the m = 128 shapes of bench_hopper_matmul, 2026-11-28)
        if split_reduce is None:
            split_reduce = "partials" if split_k <= 4 else "atomics"
        if split_reduce not in ("partials", "atomics"):
            raise ValueError(f"split_reduce must be 'partials' or 'atomics', got {split_reduce!r}")
        self.split_reduce = split_reduce
        # the accumulator is held as `halves` column halves (two wgmma per k16 step), so
        # that the TMA store can stage one half at a time in half the shared memory
        self.halves = 2 if epilogue == "tma_halves" else 1
        self.dtype = dtype
        self.out_dtype = bfloat16 if dtype == bfloat16 else float16
        self.box_k = 128 // dtype.nbytes  # 128-byte rows: the widest shared swizzle
        if k_boxes < 1:
            raise ValueError(f"k_boxes must be at least 1, got {k_boxes}")
        self.k_boxes = k_boxes
        self.block_k = self.box_k * k_boxes  # the k-step: one ring slot
        self.num_blocks = num_blocks or multiprocessor_count()

    def cluster_tile(self, index: int32, rows: int32, cols: int32):
        """The (row, column) of cluster tile ``index`` of a rows x cols grid (in cluster
        tiles of cluster_m x cluster_n tiles) numbered in bands of group_m / cluster_m
        rows, column by column inside a band."""
        group = self.group_m // self.cluster_m
        band_size = group * cols
        band = index // band_size
        first = band * group
        band_rows = min(rows - first, group)
        in_band = index - band * band_size
        return first + in_band % band_rows, in_band // band_rows

    def unit_origin(self, unit: int32, cluster_rows: int32, cluster_cols: int32, chunk: int32, k_size: int32,
                    rank: int32):
        """Work unit `unit` of this block (rank `rank` of its cluster): its tile's row and
        column in tiles, the tile's first row and column, and its slice [k_begin, k_end)."""
        row, col = self.cluster_tile(unit // self.split_k, cluster_rows, cluster_cols)
        tile_m = row * self.cluster_m + rank % self.cluster_m
        tile_n = col * self.cluster_n + rank // self.cluster_m
        k_begin = unit % self.split_k * chunk
        return (tile_m, tile_n, tile_m * self.block_m, tile_n * self.block_n, k_begin,
                min(k_begin + chunk, k_size))

    def __call__(self, m_size: int32, n_size: int32, k_size: int32, a_ptr: tilus.void_p,
                 b_ptr: tilus.void_p, c_ptr: tilus.void_p, scale: float32):
        bm, bn, bk, stages = self.block_m, self.block_n, self.block_k, self.stages
        box_k, kb = self.box_k, self.k_boxes
        cm, cn, cs = self.cluster_m, self.cluster_n, self.cluster_size
        # A cluster of cluster_m blocks takes cluster_m tiles stacked along m: they read
        # the same B tile, which the blocks fetch in turns with one multicast copy each
        # (cluster_n: tiles side by side along n, sharing A the same way).
        cluster_rows = cdiv(m_size, bm * cm)
        cluster_cols = cdiv(n_size, bn * cn)
        num_cluster_tiles = cluster_rows * cluster_cols
        # work units: a cluster tile and one of split_k slices of k (chunk elements each, whole k-steps)
        splits = self.split_k
        num_units = num_cluster_tiles * splits
        chunk = cdiv(cdiv(k_size, splits), bk) * bk
        clusters = min(num_units, self.num_blocks // cs)
        self.attrs.blocks = [clusters * cs]
        self.attrs.warps = 4 + 4 * self.consumer_groups
        if cs > 1:
            self.attrs.cluster_blocks = [cs]
        rank = self.blockIdx.x % cs

        ga = self.global_view(a_ptr, dtype=self.dtype, shape=[m_size, k_size])
        gb = self.global_view(b_ptr, dtype=self.dtype, shape=[n_size, k_size])
        gc = self.global_view(c_ptr, dtype=self.out_dtype, shape=[m_size, n_size])
        sa = self.shared_tensor(dtype=self.dtype, shape=[stages, kb, bm, box_k])
        hn = bn // self.halves
        sb = self.shared_tensor(dtype=self.dtype, shape=[stages, kb, self.halves, hn, box_k])
        if self.epilogue != "registers":
            sc = self.shared_tensor(dtype=self.out_dtype, shape=[bm, hn])
        # full[s]: this block's producer arrival plus the slot's bytes (its own copies and
        # the peers' multicast ones); empty[s]: each consumer warpgroup of every block of
        # the cluster (a multicast copy writes them all)
        full = self.mbarrier.alloc(counts=[1] * stages)
        empty = self.mbarrier.alloc(counts=[self.consumer_groups * cs] * stages)
        if cs > 1:
            self.cluster.sync()  # the peers' barriers are initialised before any arrival
        slot_bytes = (bm + bn) * bk * self.dtype.nbytes
        if splits > 1:
            # split-K: fp32 partial sums meet in a workspace (reduce_split); per tile a count
            # of the slices done, left zeroed by the tile's last slice
            if self.split_reduce == "atomics":
                workspace = self.global_tensor(dtype=float32, shape=[m_size, n_size], requires_clean=True)
            else:
                workspace = self.global_tensor(dtype=float32, shape=[splits, m_size, n_size])
            arrived = self.global_tensor(dtype=int32, shape=[cluster_rows * cm, cluster_cols * cn],
                                         requires_clean=True)

        with self.warp_group(warp_begin=0, num_warps=4):  # producer
            self.setmaxnreg(40, "dec")
            with self.single_thread():
                stage: int32 = 0
                phase: uint32 = self.mbarrier.producer_initial_phase
                for unit in range(self.blockIdx.x // cs, num_units, clusters):
                    _, _, m0, n0, k_begin, k_end = self.unit_origin(unit, cluster_rows, cluster_cols, chunk,
                                                                    k_size, rank)
                    for k0 in range(k_begin, k_end, bk):
                        self.mbarrier.wait(empty[stage], phase=phase)
                        self.mbarrier.arrive_and_expect_tx(full[stage], slot_bytes)
                        my_turn = k0 // bk % cs == rank  # the cluster's blocks take turns at the shared operand
                        for i in range(kb):  # B first: it comes from DRAM, A mostly from L2
                            for h in range(self.halves):
                                b_at = [n0 + h * hn, k0 + i * box_k]
                                if cm == 1:
                                    self.tma.global_to_shared(src=gb, dst=sb[stage, i, h], offsets=b_at,
                                                              mbarrier=full[stage])
                                elif my_turn:
                                    self.tma.global_to_shared(src=gb, dst=sb[stage, i, h], offsets=b_at,
                                                              mbarrier=full[stage], multicast_mask=(1 << cs) - 1)
                        for i in range(kb):
                            if cn == 1:
                                self.tma.global_to_shared(src=ga, dst=sa[stage, i], offsets=[m0, k0 + i * box_k],
                                                          mbarrier=full[stage])
                            elif my_turn:
                                self.tma.global_to_shared(src=ga, dst=sa[stage, i], offsets=[m0, k0 + i * box_k],
                                                          mbarrier=full[stage], multicast_mask=(1 << cs) - 1)
                        stage = (stage + 1) % stages
                        if stage == 0:
                            phase ^= 1

        with self.warp_group(warp_begin=4, num_warps=4 * self.consumer_groups):  # the consumer warpgroups
            self.setmaxnreg(232, "inc")
            stage: int32 = 0
            phase: uint32 = self.mbarrier.consumer_initial_phase
            for unit in range(self.blockIdx.x // cs, num_units, clusters):
                tile_m, tile_n, m0, n0, k_begin, k_end = self.unit_origin(unit, cluster_rows, cluster_cols, chunk,
                                                                          k_size, rank)
                steps = cdiv(k_end - k_begin, bk)
                acc = self.register_tensor(dtype=float32, shape=[bm, hn], init=0.0)
                if self.halves == 2:
                    acc_hi = self.register_tensor(dtype=float32, shape=[bm, hn], init=0.0)
                for ki in range(steps):
                    self.mbarrier.wait(full[stage], phase=phase)
                    self.wgmma.fence()
                    for i in range(kb):
                        self.wgmma.mma(sa[stage, i], sb[stage, i, 0].transpose(), acc)
                        if self.halves == 2:
                            self.wgmma.mma(sa[stage, i], sb[stage, i, 1].transpose(), acc_hi)
                    self.wgmma.commit_group()
                    self.wgmma.wait_group(1)  # the previous k-tile's group retired: free its slot
                    if ki > 0:
                        self.release(empty[(stage + stages - 1) % stages])
                    stage = (stage + 1) % stages
                    if stage == 0:
                        phase ^= 1
                self.wgmma.wait_group(0)
                if steps > 0:
                    self.release(empty[(stage + stages - 1) % stages])

                if splits > 1:
                    self.reduce_split(workspace, arrived, gc, acc * scale, m0, n0, tile_m, tile_n, unit % splits)
                elif self.epilogue == "registers":  # no staging tile, so one more stage fits
                    self.store_global(gc, (acc * scale).to(self.out_dtype), offsets=[m0, n0])
                else:
                    self.store_through_shared(sc, gc, acc * scale, [m0, n0])
                    if self.halves == 2:
                        self.store_through_shared(sc, gc, acc_hi * scale, [m0, n0 + hn])
            if self.epilogue != "registers":
                with self.single_thread():
                    self.tma.wait_group(0)
        if cs > 1:
            self.cluster.sync()  # no block leaves while a peer may still write to it

    def reduce_split(self, workspace, arrived, gc, part, m0, n0, tile_m, tile_n, k_slice):
        """Put one slice's fp32 partial tile into the workspace (no block waits for
        another) and count it in; the tile's last slice (the count it saw is split_k - 1)
        writes C from the sum and leaves the count zeroed. "partials": each slice stores
        into its own plane (plain stores, no two slices on one address) and the last sums
        the planes; nothing else needs zeroing, every call writes the planes before reading
        them. "atomics": the slices add into one plane, which the last leaves zeroed."""
        bm, bn = self.block_m, self.block_n
        if self.split_reduce == "partials":
            self.store_global(workspace, part, offsets=[k_slice, m0, n0], dims=[1, 2])
        else:
            self.atomic.global_add(workspace, part, offsets=[m0, n0])
        self.sync()
        one = self.register_tensor(dtype=int32, shape=[1, 1], init=1)
        seen = self.atomic.global_add(arrived, one, offsets=[tile_m, tile_n], sem="acq_rel")
        if seen.item() == self.split_k - 1:
            if self.split_reduce == "partials":
                tile = self.load_global(workspace, offsets=[0, m0, n0], shape=[bm, bn], dims=[1, 2])
                for s in range(1, self.split_k):
                    tile = tile + self.load_global(workspace, offsets=[s, m0, n0], shape=[bm, bn], dims=[1, 2])
                self.store_global(gc, tile.to(self.out_dtype), offsets=[m0, n0])
            else:
                tile = self.load_global(workspace, offsets=[m0, n0], shape=[bm, bn])
                self.store_global(gc, tile.to(self.out_dtype), offsets=[m0, n0])
                self.sync()  # every thread has read its part before any is zeroed
                self.store_global(workspace, self.register_tensor(dtype=float32, shape=[bm, bn], init=0.0),
                                  offsets=[m0, n0])
            self.store_global(arrived, self.register_tensor(dtype=int32, shape=[1, 1], init=0),
                              offsets=[tile_m, tile_n])

    def release(self, barrier):
        """Free a slot: one thread of each consumer warpgroup arrives on the slot's barrier
        in every block of the cluster (their producers refill it with copies that land in
        all of them). One arrival per warpgroup suffices: its wgmma.wait_group retired
        the warpgroup's reads of the slot."""
        with self.thread_group(0, num_threads=128):
            self.arrive_once(barrier)
        if self.consumer_groups == 2:
            with self.thread_group(128, num_threads=128):
                self.arrive_once(barrier)

    def arrive_once(self, barrier):
        """One thread of the current group arrives on `barrier` in every block of the cluster."""
        with self.single_thread():
            if self.cluster_size == 1:
                self.mbarrier.arrive(barrier)
            else:
                for r in range(self.cluster_size):
                    # cta scope: a cluster-scope release would wait for this thread's memory
                    # operations to reach the whole cluster, stalling the next wgmma issue
                    self.mbarrier.arrive_and_expect_tx_remote(barrier, 0, target_rank=r, scope="cta")


_TORCH_TO_TILUS = {torch.float16: float16, torch.bfloat16: bfloat16, torch.float8_e4m3fn: float8_e4m3}
_SCRIPTS = {}


def matmul(a: torch.Tensor, b: torch.Tensor, scale: float = 1.0, out: torch.Tensor = None) -> torch.Tensor:
    """(a @ b.T) * scale for contiguous a [m, k] and b [n, k] of one dtype (float16,
    bfloat16 or float8_e4m3fn); the result is bfloat16 for bfloat16 inputs, else float16."""
    if a.dtype not in _TORCH_TO_TILUS or b.dtype != a.dtype:
        raise TypeError(f"matmul: a and b must both be float16, bfloat16 or float8_e4m3fn, got "
                        f"{a.dtype} and {b.dtype}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"matmul: a [m, k] and b [n, k] expected, got {tuple(a.shape)} and {tuple(b.shape)}")
    if not (a.is_contiguous() and b.is_contiguous()):
        raise ValueError("matmul: a and b must be contiguous (row-major)")
    check_same_device("matmul", a=a, b=b)
    m, k = a.shape
    n = b.shape[0]
    if (k * a.element_size()) % 16 or (n * 2) % 16:
        raise ValueError(f"matmul: TMA needs 16-byte rows: k={k} and n={n} do not give them")
    out_dtype = torch.bfloat16 if a.dtype == torch.bfloat16 else torch.float16
    if out is None:
        out = torch.empty(m, n, dtype=out_dtype, device=a.device)
    else:  # written through a raw pointer by TMA stores
        check_tensor(out, "out", (m, n), out_dtype, a.device, "matmul")
    key = a.dtype
    if key not in _SCRIPTS:
        _SCRIPTS[key] = MatmulWarpSpecialized(dtype=_TORCH_TO_TILUS[a.dtype])
    _SCRIPTS[key](m, n, k, a, b, out, scale)
    return out


def _operands(m, n, k, dtype, device):
    a = (torch.rand(m, k, device=device) - 0.5) * math.sqrt(12.0)
    b = (torch.rand(n, k, device=device) - 0.5) * math.sqrt(12.0 / k)
    if dtype == torch.float8_e4m3fn:
        b = b * math.sqrt(k)  # keep fp8's few mantissa bits busy; the scale brings it back
    return a.to(dtype), b.to(dtype)


def main(device: str = "cpu"):
    shapes = [(4096, 4096, 4096), (8192, 8192, 8192)] if device == "cuda" else [(200, 264, 136)]
    dtypes = [torch.float16, torch.bfloat16, torch.float8_e4m3fn] if device == "cuda" else [torch.float16]
    for dtype in dtypes:
        for m, n, k in shapes:
            a, b = _operands(m, n, k, dtype, device)
            scale = 1.0 / math.sqrt(k) if dtype == torch.float8_e4m3fn else 1.0
            c = matmul(a, b, scale)
            ref = (a.float() @ b.float().T) * scale
            torch.testing.assert_close(c.float(), ref, rtol=2e-2, atol=2e-2)
            print(f"matmul warp-specialised {dtype} {m}x{n}x{k} on {device}: ok")
            if device != "cuda":
                continue
            if dtype == torch.float8_e4m3fn:
                one = torch.tensor(1.0, device=device)
                s = torch.tensor(scale, device=device)
                peer = lambda: torch._scaled_mm(a, b.T, scale_a=s, scale_b=one, out_dtype=torch.float16)  # noqa: E731
            else:
                peer = lambda: torch.matmul(a, b.T)  # noqa: E731
            for name, fn in [("torch", peer), ("tilus", lambda: matmul(a, b, scale, out=c))]:
                ms = benchmark_func(fn, warmup=5, repeat=20)
                print(f"  {name:6s} {ms:8.3f} ms  {2 * m * n * k / ms * 1e-9:8.1f} TFLOP/s")


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
