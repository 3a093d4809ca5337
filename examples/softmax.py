"""Fused row softmax: y[i, :] = exp(x[i, :] - max(x[i, :])) / sum(exp(x[i, :] - max(x[i, :]))).

Memory-bound, so the kernel's job is to read x once and write y once. Each block owns
`block_m` rows and holds a `block_m x block_n` tile of them in registers:

* a row that fits one tile (n <= block_n: the wrapper's choice for rows of up to 4096
  elements, float32 8192) is loaded once, reduced (row max, then the sum of
  exponentials) and written from registers. The tile stays in the input dtype (half the
  registers of float32 for 16-bit inputs; its max is exact in any dtype) and, for 16-bit
  inputs, the exponentials are computed again for the output rather than kept;
* with `persistent`, one block per SM walks the rows (`row`, `row + grid * block_m`, ...)
  and issues the load of its next rows before the math of these: a row of 32768 halves
  fills the registers of a whole SM, so the one-block-per-row kernel left the SM's memory
  requests idle while it reduced and stored each row (4096 x 32768 fp16 on an H200: 1.99x
  the copy time; Triton's one-program-per-row kernel 1.39x, this 1.15x). Tuned: short rows
  are faster with many blocks an SM;
* with `staged` as well, the next rows land in shared memory by cp.async instead of in
  registers: a float32 row of 32768 fills half the register file (128 registers a thread
  at 16 warps), so a second one in registers spills, while shared memory holds it whole;
* longer rows take the general path: an online pass keeps a running max and a running
  sum rescaled whenever the max grows, then a second pass writes the result. With
  `row_tiles` (the wrapper's choice for rows of at most 128 KB: a 50257-word vocabulary
  in fp16 or bf16) the first pass also keeps the row in shared memory, so the second
  reads it there instead of from global memory: the row is read once, not twice. A
  kernel built for long rows (`long_rows`) has no one-tile path and walks a row in tiles
  of block_n / `long_split` columns (tuned): narrower tiles take fewer registers (40 a
  thread at 16 warps for 8192-wide fp16 tiles against 128 for 32768), so several blocks
  can share an SM where one did; with `prefetch` (tuned) the next tile loads while this
  one is reduced, instead of each tile's load, max and sum running one after the other;
  with `copy_rows` (rows kept in shared memory, one a block; the wrapper's default for
  rows longer than 4096 that fit 128 KB) the first pass issues the copies of all of a
  row's tiles at once (cp.async, one group a tile) and reduces each as it lands, every
  thread keeping a running max and sum over its own runs of a tile that the block meets
  once a row (not twice a tile): the whole row is in flight, where the walk had one
  tile at a time (H100, 4096 x 50257 fp16: 459 -> 294 us, torch 382, a copy 275); a
  persistent kernel copies the next row's tile t as soon as this row's tile t has been
  read for the result. Rows too long to keep (`streamed`, the wrapper's default for
  them) pass through a ring of tiles as large as the device allows: R - 1 copies in
  flight, the last R tiles kept for the second pass and the others read again through
  the same ring (H100, 2048 x 131071 fp16: 607 -> 420 us, torch 742, a copy 359;
  4096 x 50257 float32 697 -> 565, a copy 547). With `cluster_split` (sm_90; the
  wrapper's default there for the rows its ring would read again in part) such a row is
  kept by a cluster of 2, 4 or 8 blocks instead, each holding its part of the row in
  its own shared memory; the blocks combine their maxima and sums once, through
  distributed shared memory, so the row is read once however long it is (up to 8 parts;
  H100, 2048 x 131071: fp16 424 -> 404 us, float32 970 -> 760, 1024 x 262144 fp16 488
  -> 392, a copy 359 / 715 / 362);
* rows whose length is not a multiple of 16 (a 50257- or 32001-word vocabulary) start at
  a different offset in every 16-byte chunk, so stores at a row's own columns would go
  element by element. With `shifted` (one row a block; the wrapper's default for copied
  rows and rows wider than 16384, where that costs less than the single-element
  stores) each row is walked from its first element on a 16-byte boundary instead
  (views at that element, of one row each), every tile read and written in 16-byte
  vectors, and the few elements before it (`head`, fewer than 16 bytes) loaded and
  stored one by one.

Elements past the end of a row read as zero (load_global's padding); the mask turns them
into -inf so they add nothing to the sum. Arithmetic is float32 for every input dtype;
each row divides once (the reciprocal of its sum) and multiplies every element by it: an
IEEE division per element costs a dozen instructions and a slow-path branch, more than
the memory traffic leaves time for.

    python examples/softmax.py            # CPU tensors: the tilus interpreter, small sizes
    python examples/softmax.py --cuda     # GPU: checks against torch, then times it
"""

import sys

import torch

import tilus
from tilus import bfloat16, float16, float32, int32
from tilus.utils import benchmark_func, cdiv, check_tensor


# The shared memory a block keeps rows in (staged rows, or a long row between its passes).
SHARED_ROW_BYTES = 128 * 1024


class UnalignedRows:
    """What scripts over rows that are not 16-byte aligned share (Softmax here, the norms
    of examples/norms.py): each row walked from its first element on a 16-byte boundary."""

    def shifted_views(self, gx, m_size: int32, n_size: int32, row: int32):
        """Row `row` of gx (a [m_size, n_size] view of self.dtype, rows not 16-byte
        aligned) as two views of one row each: the row from its first element on a
        16-byte boundary, and the `head` before it (fewer elements than a 16-byte vector,
        and at most the row); and `head`. A row past the end has empty views. (The row
        stride is never used: 0, a multiple of every vector.)"""
        vector = 128 // self.dtype.nbits
        flat = self.global_view(~gx[0, 0], dtype=self.dtype, shape=[m_size * n_size])
        first = row * n_size
        start = (first + vector - 1) // vector * vector  # a multiple of the vector: aligned
        head = start - first
        head = head if head < n_size else n_size  # (rows shorter than a vector)
        inside = row < m_size
        rest = self.global_view(~flat[start], dtype=self.dtype, shape=[1, n_size - head if inside else 0],
                                strides=[0, 1])
        before = self.global_view(~flat[first], dtype=self.dtype, shape=[1, head if inside else 0], strides=[0, 1])
        return rest, before, head


@tilus.autotune("warps", [4, 8, 16, 32])
@tilus.autotune("block_m", [1, 2, 4])
@tilus.autotune("persistent", [False, True])
@tilus.autotune("staged", [False, True])
@tilus.autotune("long_split", [1, 2, 4])
@tilus.autotune("prefetch", [False, True])
class Softmax(UnalignedRows, tilus.Script):
    def __init__(self, dtype, block_n: int, block_m: int, warps: int, persistent: bool = False,
                 staged: bool = False, row_tiles: int = 0, long_rows: bool = False, long_split: int = 1,
                 prefetch: bool = False, shifted: bool = False, copy_rows: bool = False, streamed: bool = False,
                 cluster_split: int = 1):
        """`long_rows`: the calls' rows are longer than `block_n` (the wrapper knows). Their
        path walks a row in tiles of block_n / `long_split` columns (narrower tiles take
        fewer registers, so more blocks share an SM; tuned), with `prefetch` the next tile
        loading while this one is reduced (two tiles in registers; tuned). `row_tiles` > 0:
        such rows, at most `row_tiles` x block_n long, stay in shared memory between the
        two passes (0: read twice). `copy_rows` (one row a block, with `row_tiles`): the first pass
        issues the copies of all of a row's tiles to shared memory at once (cp.async, one
        group a tile) and reduces each as it lands, so that the whole row is in flight
        instead of one tile at a time. `streamed` (with copy_rows, one row a block): rows
        of any length pass through a ring of `row_tiles` tiles, which may be shorter than
        the row (streamed_rows_walk); the last row_tiles tiles stay there for the second
        pass, the others are read again. `cluster_split` C > 1 (with copy_rows, sm_90):
        each row is kept by a cluster of C blocks, `row_tiles` tiles each (split_row),
        which meet once through each other's shared memory."""
        super().__init__()
        # at most 64 elements a thread (a 32768-wide row over 16 or 32 warps); a kernel for
        # long rows holds only tiles of block_n / long_split (it has no one-tile path)
        tile = block_m * block_n // long_split
        if tile > 64 * 32 * warps or tile < 32 * warps:
            raise ValueError("tile too large for registers, or too small for the threads")
        if (long_split > 1 or prefetch) and not long_rows:
            raise ValueError("long_split, prefetch: the tiles of rows longer than block_n (long_rows)")
        if prefetch and tile * dtype.nbits // 8 > 64 * 32 * warps:  # (float32: 1024 x 32 spills 400+ bytes)
            raise ValueError("prefetch: two tiles of more than 64 bytes a thread")
        if staged and (not persistent or long_rows or block_m * block_n * dtype.nbits // 8 > SHARED_ROW_BYTES):
            raise ValueError("staged: the persistent kernel's next rows of one tile, at most 128 KB of shared memory")
        if copy_rows and (not row_tiles or prefetch or block_m != 1 or block_n // long_split % (128 // dtype.nbits)):
            raise ValueError("copy_rows: one row a block kept in shared memory (row_tiles), loaded by cp.async "
                             "(no prefetch)")
        if streamed and (not copy_rows or row_tiles * long_split < 2):  # (the ring's tiles)
            raise ValueError("streamed: copy_rows over a ring of two tiles or more")
        if cluster_split != 1 and (cluster_split not in CLUSTER_SPLITS or not copy_rows or streamed or persistent):
            raise ValueError("cluster_split: 2, 4 or 8 blocks a row, each keeping its part (copy_rows, "
                             "not streamed, one row a cluster: not persistent)")
        if shifted and block_m != 1:
            raise ValueError("shifted: one row a block (block_m 1)")
        if not streamed and row_tiles * block_m * block_n * dtype.nbits // 8 > SHARED_ROW_BYTES:
            raise ValueError("row_tiles: the rows kept in shared memory take more than 128 KB")
        self.dtype, self.block_n, self.block_m, self.warps = dtype, block_n, block_m, warps
        self.persistent, self.staged, self.row_tiles, self.long_rows = persistent, staged, row_tiles, long_rows
        self.long_tile = block_n // long_split  # the long-row paths' tile width
        self.prefetch, self.shifted, self.copy_rows, self.streamed = prefetch, shifted, copy_rows, streamed
        self.cluster_split = cluster_split
        self.resident_tiles = list(range(row_tiles * block_n // self.long_tile))  # (tiles of a kept row)

    def __call__(self, m_size: int32, n_size: int32, grid: int32, x_ptr: tilus.void_p, y_ptr: tilus.void_p):
        """`grid`: the number of blocks of a persistent kernel (one an SM), else unused."""
        bm, bn = self.block_m, self.block_n
        self.attrs.blocks = [grid] if self.persistent else [cdiv(m_size, bm) * self.cluster_split]
        if self.cluster_split > 1:
            self.attrs.cluster_blocks = [self.cluster_split]
        self.attrs.warps = self.warps
        row = self.blockIdx.x * bm
        gx = self.global_view(x_ptr, dtype=self.dtype, shape=[m_size, n_size])
        gy = self.global_view(y_ptr, dtype=self.dtype, shape=[m_size, n_size])
        if self.long_rows:  # (a Python bool: the one-tile path is not compiled in)
            self.long_rows_walk(gx, gy, m_size, n_size, grid, row)
        elif self.shifted:  # (a Python bool: the aligned walk is not compiled in)
            if n_size <= bn:
                self.shifted_one_tile_rows(gx, gy, m_size, n_size, grid, row)
            else:
                self.long_rows_walk(gx, gy, m_size, n_size, grid, row)
        elif n_size <= bn:
            cols = self.register_tensor(dtype=int32, shape=[bm, bn], init=lambda i, j: j)
            if self.persistent and self.staged:
                following_rows = self.shared_tensor(dtype=self.dtype, shape=[bm, bn])
                self.copy_async(src=gx, dst=following_rows, offsets=[row, 0])
                self.copy_async_commit_group()
                for first in range(row, m_size, grid * bm):
                    self.copy_async_wait_all()
                    self.sync()
                    x = self.load_shared(following_rows)
                    self.sync()  # every thread holds its part before the next rows land there
                    self.copy_async(src=gx, dst=following_rows, offsets=[first + grid * bm, 0])
                    self.copy_async_commit_group()
                    self.softmax_tile(x, cols, n_size, gy, first)
                self.copy_async_wait_all()
                self.free_shared(following_rows)
            elif self.persistent:
                following = self.load_global(gx, offsets=[row, 0], shape=[bm, bn])
                for first in range(row, m_size, grid * bm):
                    x = following
                    # in flight while this tile is reduced and written (rows past the end read 0)
                    following = self.load_global(gx, offsets=[first + grid * bm, 0], shape=[bm, bn])
                    self.softmax_tile(x, cols, n_size, gy, first)
            else:
                self.softmax_tile(self.load_global(gx, offsets=[row, 0], shape=[bm, bn]), cols, n_size, gy, row)
        else:
            self.long_rows_walk(gx, gy, m_size, n_size, grid, row)

    def long_rows_walk(self, gx, gy, m_size: int32, n_size: int32, grid: int32, row: int32):
        """Rows longer than one tile: the block's rows (with `persistent`, every grid x
        block_m-th row block from `row` on), each kept in shared memory between its two
        passes (`row_tiles`) or read twice."""
        bm, bn, lt = self.block_m, self.block_n, self.long_tile
        cols = self.register_tensor(dtype=int32, shape=[bm, lt], init=lambda i, j: j)
        resident = None
        if self.row_tiles:
            resident = self.shared_tensor(dtype=self.dtype, shape=[self.row_tiles * bn // lt, bm, lt])
        if self.streamed:
            self.streamed_rows_walk(gx, gy, m_size, n_size, grid, row, resident)
        elif self.cluster_split > 1:
            self.split_row(gx, gy, m_size, n_size, resident)
        elif self.copy_rows:
            self.copied_rows_walk(gx, gy, m_size, n_size, grid, row, resident)
        elif self.persistent:
            for first in range(row, m_size, grid * bm):
                self.long_rows_at(gx, gy, cols, m_size, n_size, first, resident)
        else:
            self.long_rows_at(gx, gy, cols, m_size, n_size, row, resident)
        if self.row_tiles:
            self.free_shared(resident)

    def long_rows_at(self, gx, gy, cols, m_size: int32, n_size: int32, row: int32, resident):
        """The block's rows at `row`: their running max and sum, then the result."""
        if self.shifted:
            self.shifted_row(gx, gy, cols, m_size, n_size, row, resident)
        else:
            run_max, run_sum = self.first_pass(gx, cols, n_size, row, resident)
            inv_sum = 1.0 / run_sum
            self.second_pass(gx, gy, n_size, row, resident, run_max, inv_sum)

    def shifted_row(self, gx, gy, cols, m_size: int32, n_size: int32, row: int32, resident):
        """Row `row` (block_m = 1) of a tensor whose rows are not 16-byte aligned (n not a
        multiple of a vector): the passes walk it from its first element on a 16-byte
        boundary, so that every tile is read and written in 16-byte vectors, and the few
        elements before it (`head`) go element by element. Stores of single elements
        were what held such rows back (H100, 4096 x 50257 fp16: benchmarks/README.md)."""
        xs, xh, head = self.shifted_views(gx, m_size, n_size, row)
        ys, yh, head = self.shifted_views(gy, m_size, n_size, row)
        run_max, run_sum = self.first_pass(xs, cols, n_size - head, 0, resident)
        x_head, run_max, run_sum = self.head_step(xh, head, run_max, run_sum)
        inv_sum = 1.0 / run_sum
        self.second_pass(xs, ys, n_size - head, 0, resident, run_max, inv_sum)
        self.store_head(yh, x_head, run_max, inv_sum)

    def head_step(self, xh, head: int32, run_max, run_sum):
        """A shifted row's head (`head` elements at xh, fewer than a vector) loaded and
        folded into the running max and sum, last: its elements may all be masked, which
        a first step cannot be. Returns the head too, for store_head."""
        vector = 128 // self.dtype.nbits
        head_cols = self.register_tensor(dtype=int32, shape=[1, vector], init=lambda i, j: j)
        x_head = self.load_global(xh, offsets=[0, 0], shape=[1, vector])
        run_max, run_sum = self.online_step(x_head, head_cols, 0, head, run_max, run_sum)
        return x_head, run_max, run_sum

    def store_head(self, yh, x_head, run_max, inv_sum):
        """Writes the result of a shifted row's head (head_step) to yh."""
        y_head = self.exp(x_head.to(float32) - run_max) * inv_sum
        self.store_global(yh, y_head.to(self.dtype), offsets=[0, 0])

    def shifted_one_tile_rows(self, gx, gy, m_size: int32, n_size: int32, grid: int32, row: int32):
        """Rows of one tile not 16-byte aligned (`shifted`, block_m = 1), each from its
        16-byte boundary (shifted_views), walked as the aligned rows are: one a block, or
        with `persistent` the next row's load (to registers, or to shared memory by
        cp.async with `staged`) issued before this row's math."""
        bn, vector = self.block_n, 128 // self.dtype.nbits
        cols = self.register_tensor(dtype=int32, shape=[1, bn], init=lambda i, j: j)
        head_cols = self.register_tensor(dtype=int32, shape=[1, vector], init=lambda i, j: j)
        if self.persistent:
            xs, xh, head = self.shifted_views(gx, m_size, n_size, row)
            following_head = self.load_global(xh, offsets=[0, 0], shape=[1, vector])
            if self.staged:
                following_rows = self.shared_tensor(dtype=self.dtype, shape=[1, bn])
                self.copy_async(src=xs, dst=following_rows, offsets=[0, 0])
                self.copy_async_commit_group()
            else:
                following = self.load_global(xs, offsets=[0, 0], shape=[1, bn])
            for first in range(row, m_size, grid):
                x_head = following_head
                next_xs, next_xh, next_head = self.shifted_views(gx, m_size, n_size, first + grid)
                following_head = self.load_global(next_xh, offsets=[0, 0], shape=[1, vector])
                if self.staged:
                    self.copy_async_wait_all()
                    self.sync()
                    x = self.load_shared(following_rows)
                    self.sync()  # every thread holds its part before the next row lands there
                    self.copy_async(src=next_xs, dst=following_rows, offsets=[0, 0])
                    self.copy_async_commit_group()
                else:
                    x = following
                    following = self.load_global(next_xs, offsets=[0, 0], shape=[1, bn])
                ys, yh, head = self.shifted_views(gy, m_size, n_size, first)
                self.softmax_shifted_tile(x, cols, n_size - head, ys, x_head, head_cols, head, yh)
            if self.staged:
                self.copy_async_wait_all()
                self.free_shared(following_rows)
        else:
            xs, xh, head = self.shifted_views(gx, m_size, n_size, row)
            ys, yh, head = self.shifted_views(gy, m_size, n_size, row)
            x = self.load_global(xs, offsets=[0, 0], shape=[1, bn])
            x_head = self.load_global(xh, offsets=[0, 0], shape=[1, vector])
            self.softmax_shifted_tile(x, cols, n_size - head, ys, x_head, head_cols, head, yh)

    def softmax_shifted_tile(self, x, cols, length: int32, ys, x_head, head_cols, head: int32, yh):
        """softmax_tile for a row in two parts: `x` ([1, block_n], `length` elements, to
        ys) and `x_head` ([1, vector], `head` elements, to yh)."""
        x = self.where(cols < length, x, float("-inf"))
        x_head = self.where(head_cols < head, x_head, float("-inf"))
        row_max = self.maximum(self.max(x, dim=1, keepdim=True), self.max(x_head, dim=1, keepdim=True)).to(float32)
        if self.dtype == float32:
            e, e_head = self.exp(x - row_max), self.exp(x_head - row_max)
            inv_sum = 1.0 / (self.sum(e, dim=1, keepdim=True) + self.sum(e_head, dim=1, keepdim=True))
            y, y_head = e * inv_sum, e_head * inv_sum
        else:  # (the exponentials computed twice, as in softmax_tile)
            inv_sum = 1.0 / (self.sum(self.exp(x.to(float32) - row_max), dim=1, keepdim=True) +
                             self.sum(self.exp(x_head.to(float32) - row_max), dim=1, keepdim=True))
            y = self.exp(x.to(float32) - row_max) * inv_sum
            y_head = self.exp(x_head.to(float32) - row_max) * inv_sum
        self.store_global(ys, y.to(self.dtype), offsets=[0, 0])
        self.store_global(yh, y_head.to(self.dtype), offsets=[0, 0])

    def first_pass(self, gx, cols, n_size: int32, row: int32, resident):
        """The online pass over rows of n_size at `row`: the running max and the rescaled
        running sum, each tile left in `resident` (shared memory) with `row_tiles`."""
        bm, lt = self.block_m, self.long_tile
        run_max = self.register_tensor(dtype=float32, shape=[bm, 1], init=float("-inf"))
        run_sum = self.register_tensor(dtype=float32, shape=[bm, 1], init=0.0)
        following = self.first_tile(gx, row)
        if self.row_tiles:
            for t in range(cdiv(n_size, lt)):
                x, following = self.tile_at(gx, row, t * lt, following)
                self.store_shared(resident[t], x)
                run_max, run_sum = self.online_step(x, cols, t * lt, n_size, run_max, run_sum)
        else:
            for col in range(0, n_size, lt):
                x, following = self.tile_at(gx, row, col, following)
                run_max, run_sum = self.online_step(x, cols, col, n_size, run_max, run_sum)
        return run_max, run_sum

    def copied_rows_walk(self, gx, gy, m_size: int32, n_size: int32, grid: int32, row: int32, resident):
        """`copy_rows` (one row a block): the copies of all of a row's tiles to `resident`
        are issued at once (cp.async, one group a tile) and each tile is reduced as it
        lands (reduce_copied), so that the whole row is in flight rather than one tile.
        With `persistent`, the next row's tile t is copied as soon as every thread has
        read this row's tile t for the result: the next row loads while this one is
        written."""
        xs, x_row, length, xh, head = self.row_parts(gx, m_size, n_size, row)
        self.copy_row_tiles(xs, x_row, length, resident)
        if self.persistent:
            for first in range(row, m_size, grid):
                self.copied_row(gx, gy, m_size, n_size, first, first + grid, resident)
            self.copy_async_wait_all()  # (the groups of the rows past the end: empty)
        else:
            self.copied_row(gx, gy, m_size, n_size, row, m_size, resident)

    def copied_row(self, gx, gy, m_size: int32, n_size: int32, row: int32, next_row: int32, resident):
        """Row `row`, whose copies to `resident` were issued: its max and sum, then the
        result; with `persistent`, the copies of `next_row` issued tile by tile."""
        lt = self.long_tile
        xs, x_row, length, xh, head = self.row_parts(gx, m_size, n_size, row)
        ys, y_row, length, yh, head = self.row_parts(gy, m_size, n_size, row)
        run_max, run_sum = self.reduce_copied(length, resident)
        if self.shifted:
            x_head, run_max, run_sum = self.head_step(xh, head, run_max, run_sum)
        inv_sum = 1.0 / run_sum
        next_xs, next_x_row, next_length, next_xh, next_head = self.row_parts(gx, m_size, n_size, next_row)
        for t in self.resident_tiles:
            if t * lt < length:
                y = self.exp(self.load_shared(resident[t]).to(float32) - run_max) * inv_sum
                if self.persistent:
                    self.sync()  # every thread read tile t: the next row's may land there
                    self.copy_tile(next_xs, next_x_row, next_length, t, resident[t])
                self.store_global(ys, y.to(self.dtype), offsets=[y_row, t * lt])
            elif self.persistent:
                self.copy_tile(next_xs, next_x_row, next_length, t, resident[t])
            if self.persistent:
                self.copy_async_commit_group()
        if self.shifted:
            self.store_head(yh, x_head, run_max, inv_sum)

    def row_parts(self, g, m_size: int32, n_size: int32, row: int32):
        """(view, row in it, length, head view, head) for row `row` of g: with `shifted`
        the row from its 16-byte boundary as a view of one row (shifted_views) and the
        head before it; else g itself. A row past the end has length 0."""
        if self.shifted:
            rest, before, head = self.shifted_views(g, m_size, n_size, row)
            return rest, 0, (n_size - head if row < m_size else 0), before, head
        return g, row, (n_size if row < m_size else 0), None, 0

    def copy_row_tiles(self, view, row: int32, length: int32, resident, tiles=None, begin=0):
        """Issues the copies of a row's tiles (`tiles`, a Python list: unrolled; default
        all the kept row's) to `resident`, one cp.async group a tile (committed whether or
        not the row reaches the tile: reduce_copied counts them); tile t starts at column
        begin + t * tile."""
        for t in self.resident_tiles if tiles is None else tiles:
            self.copy_tile(view, row, length, t, resident[t], begin)
            self.copy_async_commit_group()

    def copy_tile(self, view, row: int32, length: int32, t, dst, begin=0):
        """Issues the copy of tile t (from column begin + t * tile) of a row of `length`
        elements to `dst` (a tile of shared memory), if the row reaches it."""
        if begin + t * self.long_tile < length:
            self.copy_async(src=view, dst=dst, offsets=[row, begin + t * self.long_tile])

    def split_row(self, gx, gy, m_size: int32, n_size: int32, resident):
        """`cluster_split` C: row blockIdx.x // C, kept by the C blocks of a cluster, block
        r the columns [r P, (r + 1) P) (P: row_tiles tiles) in its shared memory, copied
        all at once and reduced as they land (reduce_copied). The blocks then meet once:
        each stores its max and sum into slot r of every block's `maxima` and `sums`
        (distributed shared memory), and after a cluster barrier each combines the C
        slots as one row's partials (combine_partials), so a row too long for one block's
        shared memory is still read once, where a ring re-reads all but its last tiles
        (streamed). A shifted row's head is rank 0's."""
        c, lt = self.cluster_split, self.long_tile
        part = len(self.resident_tiles) * lt
        row = self.blockIdx.x // c
        rank: int32 = self.cluster.blockRank
        maxima = self.shared_tensor(dtype=float32, shape=[c, 1, 1])
        sums = self.shared_tensor(dtype=float32, shape=[c, 1, 1])
        self.cluster.sync()  # every block has allocated its slots before any peer stores there
        xs, x_row, length, xh, head = self.row_parts(gx, m_size, n_size, row)
        ys, y_row, length, yh, head = self.row_parts(gy, m_size, n_size, row)
        begin = rank * part
        mine = min(max(length - begin, 0), part)  # (this block's elements)
        self.copy_row_tiles(xs, x_row, length, resident, begin=begin)
        run_max, run_sum = self.reduce_copied(mine, resident)
        if self.shifted:
            owned_head: int32 = 0
            if rank == 0:
                owned_head = head
            x_head, run_max, run_sum = self.head_step(xh, owned_head, run_max, run_sum)
        for peer in range(c):
            self.cluster.store_shared(maxima[rank], run_max, target_rank=peer)
            self.cluster.store_shared(sums[rank], run_sum, target_rank=peer)
        self.cluster.sync()  # every block's max and sum landed in every block
        row_max, row_sum = self.combine_partials(self.load_shared(self.reshape_shared(maxima, [c, 1])),
                                                 self.load_shared(self.reshape_shared(sums, [c, 1])))
        inv_sum = 1.0 / row_sum
        for t in self.resident_tiles:
            if t * lt < mine:
                y = self.exp(self.load_shared(resident[t]).to(float32) - row_max) * inv_sum
                self.store_global(ys, y.to(self.dtype), offsets=[y_row, begin + t * lt])
        if self.shifted:
            if rank == 0:
                self.store_head(yh, x_head, row_max, inv_sum)
        self.free_shared(maxima)
        self.free_shared(sums)

    def reduce_copied(self, length: int32, resident):
        """The max and sum of exponentials of a row of `length` elements whose tiles are
        landing in `resident` (copy_row_tiles), each tile reduced as it lands."""
        cols, part_max, part_sum = self.view_partials()
        for t in self.resident_tiles:
            self.copy_async_wait_group(len(self.resident_tiles) - 1 - t)
            self.sync()  # tile t landed, whichever thread copied it
            if t * self.long_tile < length:
                part_max, part_sum = self.fold_tile(resident[t], cols, length - t * self.long_tile,
                                                    part_max, part_sum)
        return self.combine_partials(part_max, part_sum)

    def view_partials(self):
        """The column indices of a tile read as rows of one 16-byte vector ([tile / vector,
        vector]; layout inference gives each row to one or two threads), and a running max
        and sum for each row of that view: kept per view row, they need the block only
        once a row (combine_partials), not twice a tile."""
        vector = 128 // self.dtype.nbits
        rows = self.long_tile // vector
        cols = self.register_tensor(dtype=int32, shape=[rows, vector], init=lambda i, j: i * vector + j)
        # (a finite floor, not -inf: a view row that the row does not reach in a tile
        # rescales by exp(floor - floor) = 1, where -inf - -inf would make it NaN)
        part_max = self.register_tensor(dtype=float32, shape=[rows, 1], init=-3.0e38)
        part_sum = self.register_tensor(dtype=float32, shape=[rows, 1], init=0.0)
        return cols, part_max, part_sum

    def fold_tile(self, tile, cols, bound: int32, part_max, part_sum):
        """The view rows' running max and sum after the tile landed in shared memory
        (`tile`, [1, tile]), of which the first `bound` elements belong to the row.
        (The bound, not the columns, moves from tile to tile: cols + t * tile for every t
        would be hoisted out of a persistent kernel's row loop, 7 tiles' worth.)"""
        vector = 128 // self.dtype.nbits
        x = self.load_shared(self.reshape_shared(tile, [self.long_tile // vector, vector]))
        return self.online_step(x, cols, 0, bound, part_max, part_sum)

    def combine_partials(self, part_max, part_sum):
        """The row's max and sum of exponentials from the view rows' (view_partials)."""
        run_max = self.max(part_max, dim=0, keepdim=True)
        run_sum = self.sum(part_sum * self.exp(part_max - run_max), dim=0, keepdim=True)
        return run_max, run_sum

    def streamed_rows_walk(self, gx, gy, m_size: int32, n_size: int32, grid: int32, row: int32, ring):
        """`streamed` (one row a block): rows of any length through a ring of R tiles in
        shared memory (streamed_row). The first row's first R - 1 tiles are copied here;
        with `persistent` every row copies the next one's while it is written, so the
        ring does not drain between rows (tuned; on the H100 one row a block was as fast
        or faster: benchmarks/README.md)."""
        xs, x_row, length, xh, head = self.row_parts(gx, m_size, n_size, row)
        self.copy_row_tiles(xs, x_row, length, ring, self.resident_tiles[:-1])
        base: int32 = 0
        if self.persistent:
            for first in range(row, m_size, grid):
                base = self.streamed_row(gx, gy, m_size, n_size, first, first + grid, ring, base)
        else:
            self.streamed_row(gx, gy, m_size, n_size, row, m_size, ring, base)
        self.copy_async_wait_all()  # (the copies of rows past the end: none)

    def streamed_row(self, gx, gy, m_size: int32, n_size: int32, row: int32, next_row: int32, ring,
                     base: int32):
        """Row `row` through the ring, its tile t in slot (base + t) % R, the first R - 1
        copies issued. The first pass keeps R - 1 copies in flight: the slot of tile
        t - 1 takes tile t + R - 1 once every thread has passed the barrier of tile t
        (one barrier a tile). The ring then holds the row's last R tiles; the second pass
        writes them first, refilling each freed slot with one of the tiles before them
        (read again) and then with the next row's first tiles (`next_row`; none past the
        end). A row of n elements reads n + max(0, n - R tiles) elements, all of it R - 1
        tiles ahead, where the walk read 2n one tile at a time. Returns the next row's
        base. Every tile's cp.async group is committed R - 2 groups before the wait that
        needs it, in either pass and across rows."""
        lt, slots = self.long_tile, len(self.resident_tiles)
        xs, x_row, length, xh, head = self.row_parts(gx, m_size, n_size, row)
        ys, y_row, length, yh, head = self.row_parts(gy, m_size, n_size, row)
        next_xs, next_x_row, next_length, next_xh, next_head = self.row_parts(gx, m_size, n_size, next_row)
        tiles = (length + lt - 1) // lt
        cols, part_max, part_sum = self.view_partials()
        for t in range(tiles):
            self.copy_async_wait_group(slots - 2)
            self.sync()  # tile t landed, and every thread is done with tile t - 1's slot
            part_max, part_sum = self.fold_tile(ring[(base + t) % slots], cols, length - t * lt, part_max, part_sum)
            refill = t + slots - 1
            self.copy_tile(xs, x_row, length, refill, ring[(base + refill) % slots])
            self.copy_async_commit_group()
        run_max, run_sum = self.combine_partials(part_max, part_sum)
        if self.shifted:
            x_head, run_max, run_sum = self.head_step(xh, head, run_max, run_sum)
        inv_sum = 1.0 / run_sum
        # item j of the second pass reads slot (base + kept_from + j) % R: tile kept_from + j
        # for j < R (the kept tiles), else tile j - R, copied there at item j - R + 1
        kept_from: int32 = 0
        if tiles > slots:
            kept_from = tiles - slots
        following = base + 2 * kept_from  # (the next row's tile t goes to slot following + t)
        for j in range(tiles):
            self.copy_async_wait_group(slots - 2)
            self.sync()  # item j's tile landed, and item j - 1's slot is free
            tile = j - slots
            if j < slots:
                tile = kept_from + j
            y = self.exp(self.load_shared(ring[(base + kept_from + j) % slots]).to(float32) - run_max) * inv_sum
            if j >= 1:
                freed = j - 1
                slot = ring[(base + kept_from + freed) % slots]
                if freed < kept_from:  # tile `freed` again, for item freed + R
                    self.copy_tile(xs, x_row, length, freed, slot)
                else:
                    self.copy_tile(next_xs, next_x_row, next_length, freed - kept_from, slot)
            self.copy_async_commit_group()
            self.store_global(ys, y.to(self.dtype), offsets=[y_row, tile * lt])
        self.sync()  # every thread read the last item's slot
        rest: int32 = tiles - 1  # (rows of fewer than R tiles: the rest of the next row's first R - 1)
        if rest < 0:
            rest = 0
        for t in range(rest, slots - 1):  # (a runtime loop: unrolled, nvcc hoisted its addresses, 235 registers)
            self.copy_tile(next_xs, next_x_row, next_length, t, ring[(following + t) % slots])
            self.copy_async_commit_group()
        if self.shifted:
            self.store_head(yh, x_head, run_max, inv_sum)
        return following % slots

    def second_pass(self, gx, gy, n_size: int32, row: int32, resident, run_max, inv_sum):
        """Writes exp(x - run_max) * inv_sum for rows of n_size at `row`: x read from
        `resident` (`row_tiles`) or again from global memory."""
        lt = self.long_tile
        if self.row_tiles:
            self.sync()  # the second pass's layout need not be the first's
            for t in range(cdiv(n_size, lt)):
                y = self.exp(self.load_shared(resident[t]).to(float32) - run_max) * inv_sum
                self.store_global(gy, y.to(self.dtype), offsets=[row, t * lt])
            self.sync()  # read before the next rows overwrite it
        else:
            following = self.first_tile(gx, row)
            for col in range(0, n_size, lt):
                x, following = self.tile_at(gx, row, col, following)
                y = self.exp(x.to(float32) - run_max) * inv_sum
                self.store_global(gy, y.to(self.dtype), offsets=[row, col])

    def first_tile(self, gx, row: int32):
        """With `prefetch`, the load of a row's first tile, issued ahead (tile_at); else None."""
        if self.prefetch:
            return self.load_global(gx, offsets=[row, 0], shape=[self.block_m, self.long_tile])
        return None

    def tile_at(self, gx, row: int32, col: int32, following):
        """The tile of columns [col, col + tile) and what `following` holds next: with
        `prefetch` the tile loaded ahead, and the next one's load issued now, in flight
        while this one is reduced; else a load of this tile."""
        bm, lt = self.block_m, self.long_tile
        if self.prefetch:
            return following, self.load_global(gx, offsets=[row, col + lt], shape=[bm, lt])
        return self.load_global(gx, offsets=[row, col], shape=[bm, lt]), following

    def online_step(self, x, cols, col: int32, n_size: int32, run_max, run_sum):
        """The running max and rescaled running sum of exponentials after the tile `x`
        (input dtype) of columns [col, col + tile): elements past the row add nothing."""
        x = self.where(cols + col < n_size, x.to(float32), float("-inf"))
        new_max = self.maximum(run_max, self.max(x, dim=1, keepdim=True))
        run_sum = run_sum * self.exp(run_max - new_max) + self.sum(self.exp(x - new_max), dim=1, keepdim=True)
        return new_max, run_sum

    def softmax_tile(self, x, cols, n_size: int32, gy, row: int32):
        """Writes the softmax of the rows in the tile `x` (input dtype) at `row`."""
        x = self.where(cols < n_size, x, float("-inf"))
        row_max = self.max(x, dim=1, keepdim=True).to(float32)
        if self.dtype == float32:
            # the exponentials take x's registers: computing them once is free
            e = self.exp(x - row_max)
            y = e * (1.0 / self.sum(e, dim=1, keepdim=True))  # one division a row
        else:
            # float32 exponentials of a 16-bit tile would double its registers: computed twice
            inv_sum = 1.0 / self.sum(self.exp(x.to(float32) - row_max), dim=1, keepdim=True)
            y = self.exp(x.to(float32) - row_max) * inv_sum
        self.store_global(gy, y.to(self.dtype), offsets=[row, 0])


_TORCH_TO_TILUS = {torch.float16: float16, torch.bfloat16: bfloat16, torch.float32: float32}
_SCRIPTS = {}


# The tile width of copied rows (`copy_rows`): narrower tiles leave less of a row's last
# tile empty (a 50257-word fp16 row takes 13 tiles, 104 KB: two 16-warp blocks an SM,
# where 8192-wide tiles' 112 KB leave one). H100, 4096 x 50257 fp16, tuned: 2048 318 us,
# 4096 294, 8192 310; x 20001: 119 / 119 / 127 (benchmarks/README.md).
COPIED_TILE = 4096


def _copies_rows(n: int, element_size: int, limit: int = SHARED_ROW_BYTES) -> bool:
    """Whether the wrapper copies rows of n elements by default (`copy_rows`): rows longer
    than a COPIED_TILE tile whose copy fits `limit` bytes (_keep_limit), but float32 rows
    of 8192 or fewer elements (one-tile kernels are as fast there: 4096 x 8191 fp32 95 us
    against 96; 16-bit rows of 8191 57.5 -> 53 us, H100)."""
    return (n > COPIED_TILE and _row_copy_fits(n, COPIED_TILE, element_size, limit)
            and (element_size == 2 or n > 8192))


def _streams_rows(n: int, element_size: int, limit: int = SHARED_ROW_BYTES) -> bool:
    """Whether the wrapper streams rows of n elements through a ring of tiles in shared
    memory by default (`streamed`): rows too long to keep there whole (_copies_rows)."""
    return n > COPIED_TILE and not _row_copy_fits(n, COPIED_TILE, element_size, limit)


def _keep_limit(device: torch.device) -> int:
    """The bytes of a row a block keeps in shared memory on `device`: SHARED_ROW_BYTES, or
    less where a block may not have that much (_block_shared_bytes; 99 KB parts such as
    sm_86 and sm_89: 83 KB)."""
    if device.type != "cuda":
        return SHARED_ROW_BYTES
    return min(SHARED_ROW_BYTES, _block_shared_bytes(device)[0])


def _block_shared_bytes(device: torch.device):
    """(the shared memory a block alone on an SM of `device` may keep rows in, and one of
    two blocks an SM): the device's limits less room for the reductions' scratch and the
    per-block reserve (H100: 211 KB and 105 KB)."""
    if device not in _SHARED_BYTES:
        props = torch.cuda.get_device_properties(device)
        optin = getattr(props, "shared_memory_per_block_optin", 0) or props.shared_memory_per_block
        per_sm = getattr(props, "shared_memory_per_multiprocessor", 0) or optin
        _SHARED_BYTES[device] = (optin - 16 * 1024, per_sm // 2 - 9 * 1024)
    return _SHARED_BYTES[device]


_SHARED_BYTES = {}


def _stream_ring(device: torch.device, n: int, element_size: int):
    """(tile width, ring tiles) for rows of n elements streamed through shared memory: as
    many tiles as the shared memory a block may take on `device` holds (less 16 KB for the
    reductions' scratch and the per-block reserve; H100: 13 tiles of 16 KB), but for
    16-bit rows of at most 19 COPIED_TILE tiles as many as one of two blocks an SM holds
    (H100: 13 of 8 KB). A block alone on its SM stalls it at each tile's barrier, so it
    takes 16-bit tiles of 8192 (H100, 1 block an SM: 2048 x 131071 fp16 420 us against 452
    over 4096-wide tiles; 4096 x 90000 533 against 558; float32 keeps 4096: 952 against
    965 at 2048 x 131071); two blocks an SM hide the barriers but read more again, which
    pays up to about 19 tiles (4096 x 65537 fp16, 17 tiles: 406 us in the 2-block ring,
    427 alone; 4096 x 90000, 22 tiles: 599 against 533). The interpreter: SHARED_ROW_BYTES'
    worth of COPIED_TILE tiles."""
    if device.type != "cuda":
        return COPIED_TILE, max(2, SHARED_ROW_BYTES // (COPIED_TILE * element_size))
    alone, shared = _block_shared_bytes(device)
    tile_bytes = COPIED_TILE * element_size
    if element_size == 2 and cdiv(n, COPIED_TILE) <= 19 and shared // tile_bytes >= 2:
        return COPIED_TILE, shared // tile_bytes
    tile = 2 * COPIED_TILE if element_size == 2 else COPIED_TILE
    return tile, max(2, alone // (tile * element_size))


# Cluster sizes a row may be split over (`cluster_split`): 8 is the portable maximum.
CLUSTER_SPLITS = (2, 4, 8)


def _cluster_split(device: torch.device, n: int, element_size: int):
    """(blocks a row, COPIED_TILE tiles a block) for rows of n elements too long for one
    block's shared memory (_streams_rows), kept by a cluster of blocks instead: the fewest
    blocks whose parts fit one of two blocks an SM (_block_shared_bytes; H100: 105 KB, so
    fp16 rows of up to 8 x 13 tiles, 425984 elements). None where clusters cannot run
    (before sm_90, the interpreter) or the row is longer than that."""
    if device.type != "cuda" or torch.cuda.get_device_capability(device)[0] < 9:
        return None
    tiles = cdiv(n, COPIED_TILE)
    per_block = _block_shared_bytes(device)[1] // (COPIED_TILE * element_size)
    for blocks in CLUSTER_SPLITS:
        if cdiv(tiles, blocks) <= per_block:
            return blocks, cdiv(tiles, blocks)
    return None


def _row_copy_fits(n: int, block_n: int, element_size: int, limit: int = SHARED_ROW_BYTES) -> bool:
    """Whether a row of n elements, in whole tiles of block_n, fits the shared memory a
    block may keep rows in (`limit`: SHARED_ROW_BYTES, or _keep_limit of the device)."""
    return cdiv(n, block_n) * block_n * element_size <= limit


def softmax(x: torch.Tensor, out: torch.Tensor = None, block_n: int = None,
            persistent: bool = None, staged: bool = None, shifted: bool = None,
            copy_rows: bool = None, cluster_split: int = None) -> torch.Tensor:
    """Row softmax of a contiguous 2-D fp16/bf16/fp32 tensor. Rows that fit 128 KB of
    shared memory (less where the device gives a block less: _keep_limit) and are longer
    than COPIED_TILE (16-bit rows of 4097 to 65536 elements, float32 rows of 8193 to
    32768) are copied there by cp.async, all of a row's tiles at once (`copy_rows`, one
    row a block, over COPIED_TILE-wide tiles); longer rows stream through a ring of tiles
    as large as the device lets a block have (`streamed`, _stream_ring: the last tiles
    stay for the second pass, the others are read again), or, on sm_90 where the ring
    would read part of the row again, are kept by a cluster of 2-8 blocks (_cluster_split:
    read once; H100, 2048 x 131071: fp16 0.404 against 0.424 ms, float32 0.760 against
    0.970). cluster_split=True asks for the cluster wherever it can run, False (or 1) for
    the ring, C for C blocks a row.
    Shorter rows, and every row with copy_rows=False, take a tile of the row length
    rounded up to a power of two (at most 32768; longer rows loop, over 8192-wide tiles
    where a 16-bit row's copy fits shared memory, and are otherwise read twice).
    `block_n` fixes the tile width (then
    rows are copied only with copy_rows=True, where they are kept in shared memory);
    `persistent` and `staged` fix those choices (default: tuned), `shifted` walks rows
    not a multiple of 16, with tiles of 128 or more, from their 16-byte boundary
    (default: copied rows, and rows wider than 16384 elements but float32 rows wider than
    32768). `out` must be x's twin (shape, dtype, device, contiguous); tensors of more
    than 2^31 - 1 elements run in slices of rows."""
    if x.dim() != 2 or not x.is_contiguous() or x.dtype not in _TORCH_TO_TILUS:
        raise ValueError("softmax: x must be a contiguous 2-D float16/bfloat16/float32 tensor")
    m, n = x.shape
    out = torch.empty_like(x) if out is None else out
    check_tensor(out, "out", x.shape, x.dtype, x.device, "softmax")
    streamed, limit, blocks_a_row = False, _keep_limit(x.device), 1
    if block_n is None and copy_rows is not False and _copies_rows(n, x.element_size(), limit):
        block_n, copy_rows = COPIED_TILE, True
    elif block_n is None and copy_rows is not False and _streams_rows(n, x.element_size(), limit):
        stream = _stream_ring(x.device, n, x.element_size())
        split = None
        # by default a cluster keeps the rows the ring would read again in part (all but
        # float32 rows of at most 13 tiles on the H100, which its ring holds whole)
        if cluster_split is True or (cluster_split is None and stream[0] * stream[1] < n):
            split = _cluster_split(x.device, n, x.element_size())
        elif cluster_split and cluster_split > 1:
            split = cluster_split, cdiv(cdiv(n, COPIED_TILE), cluster_split)
        if split is not None:
            block_n, (blocks_a_row, ring), copy_rows = COPIED_TILE, split, True
        else:
            (block_n, ring), copy_rows, streamed = stream, True, True
    if block_n is None:
        block_n = min(32768, max(32, 1 << (n - 1).bit_length()))
        if n > block_n and x.element_size() == 2 and _row_copy_fits(n, 8192, 2, limit):
            # (copy_rows=False) 16-bit rows longer than a tile whose copy fits shared memory
            # walk 8192-wide tiles: a 50257-word row's copy is then 112 KB, not 128 KB (two
            # blocks an SM at 8 warps or fewer: the reductions' scratch grows with the warps)
            # (H100, tuned: 4096 x 50257 fp16 522 -> 503 us, x 50272 420 -> 350, x 40000
            # 318 -> 240; torch 386 / 402 / 379). Rows read twice (longer) keep 32768.
            block_n = 8192
    # rows longer than a tile that fit 128 KB of shared memory are read once, not twice
    long_rows = n > block_n
    if streamed or blocks_a_row > 1:
        row_tiles = ring
    else:
        row_tiles = cdiv(n, block_n) if long_rows and _row_copy_fits(n, block_n, x.element_size(), limit) else 0
    if long_rows and staged:
        staged = False  # (staging is for rows of one tile)
    copy_rows = bool(copy_rows) and row_tiles > 0
    # rows that are not 16-byte aligned (the kernels' aligned build wants multiples of 16
    # elements) may walk each row from its first 16-byte boundary: vector stores, not
    # single elements, but one row a block. By default where that wins (H100, tuned,
    # benchmarks/README.md): copied rows (one a block anyway), and rows wider than 16384
    # but float32 rows read twice (4096 x 20001 fp16 241 -> 178 us, x 50257 505 -> 463;
    # 4096 x 8191 fp32 96 both, 16001 186 -> 195, 50257 696 -> 718; narrower 16-bit rows
    # lose their rows a block: 8191 106 -> 129)
    if shifted is None:
        shifted = copy_rows or (n > 16384 and (n <= 32768 or x.element_size() == 2))
    shifted = bool(shifted) and n % 16 != 0 and block_n >= 128  # (a tile of one row for 4 warps at least)
    key = (x.dtype, block_n, persistent, staged, row_tiles, long_rows, shifted, copy_rows, streamed, blocks_a_row)
    if key not in _SCRIPTS:
        fixed = {name: value for name, value in (("persistent", persistent), ("staged", staged))
                 if value is not None}
        if shifted or copy_rows:
            fixed["block_m"] = 1
        if copy_rows:
            fixed.update(prefetch=False, copy_rows=True)
        if streamed:
            fixed["streamed"] = True
        if blocks_a_row > 1:
            fixed.update(cluster_split=blocks_a_row, persistent=False)
        _SCRIPTS[key] = Softmax(_TORCH_TO_TILUS[x.dtype], block_n, row_tiles=row_tiles, long_rows=long_rows,
                                shifted=shifted, **fixed)
    for rows, (x_part, out_part) in row_slices(x, out):
        _SCRIPTS[key](rows, n, _multiprocessors(x.device), x_part, out_part)
    return out


# The kernels index their views with 32-bit offsets (int32 sizes): a call takes at most
# this many elements, so larger tensors (32768 rows of a 131072-word vocabulary, say) are
# processed in slices of whole rows.
INT32_ELEMENTS = 2**31 - 1


def row_slices(*tensors: torch.Tensor):
    """(rows, tensors) for each kernel call over the 2-D `tensors` (all of one shape): the
    tensors whole when they fit one call, else slices of whole rows of at most
    INT32_ELEMENTS elements each, a multiple of 16 rows where a call takes 16 or more: a
    slice then starts 16-byte aligned whatever the row length, so it keeps the aligned
    build (and its rows' 16-byte boundaries) of a tensor that starts aligned."""
    m, n = tensors[0].shape
    if m * n <= INT32_ELEMENTS:
        return [(m, tensors)]
    if n > INT32_ELEMENTS:
        raise ValueError(f"rows of {n} elements: more than a kernel call indexes ({INT32_ELEMENTS})")
    rows = INT32_ELEMENTS // n
    if rows >= 16:
        rows -= rows % 16
    return [(min(m, first + rows) - first, tuple(t[first:first + rows] for t in tensors))
            for first in range(0, m, rows)]


def _multiprocessors(device: torch.device) -> int:
    """The persistent kernel's grid: one block per SM (a handful for the interpreter)."""
    if device.type != "cuda":
        return 3
    if device not in _SMS:
        _SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SMS[device]


_SMS = {}


def main(device: str):
    torch.manual_seed(0)
    shapes = [(37, 70), (5, 300), (3, 1000)] if device == "cpu" else [
        (1823, 781), (4096, 4096), (8192, 8192), (1024, 32768)]
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for m, n in shapes:
            x = (torch.randn(m, n, device=device) * 3).to(dtype)
            y = torch.full_like(x, float("nan"))
            softmax(x, y)
            expected = torch.softmax(x.float(), dim=1).to(dtype)
            torch.testing.assert_close(y, expected, atol=2e-3, rtol=2e-2)
            line = f"softmax {str(dtype)[6:]:8s} {m:5d} x {n:5d}: ok"
            if device == "cuda":
                t_tilus = benchmark_func(lambda: softmax(x, y))
                t_torch = benchmark_func(lambda: torch.softmax(x, dim=1))
                line += f"   tilus {t_tilus:.3f} ms   torch {t_torch:.3f} ms"
            print(line)
    if device == "cpu":  # the looping path for rows longer than one tile
        x = torch.randn(6, 100)
        torch.testing.assert_close(softmax(x, block_n=32), torch.softmax(x, dim=1))
        print("softmax, rows longer than the tile: ok")


if __name__ == "__main__":
    main("cuda" if "--cuda" in sys.argv else "cpu")
