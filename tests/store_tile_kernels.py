"""Scripts that store register tiles at runtime offsets, for the interior-tile path of
store_global (csrc/codegen/emit_memory.cc: a tile wholly inside its tensor is stored
without per-element tests, one at an edge keeps them): the codegen test reads the source,
the interpreter and GPU tests run both paths against torch (run_add_one, run_rows), the
outputs poisoned first."""

import torch

import tilus
from tilus import float16, float32, int32, uint4b, void_p
from tilus.utils import cdiv


class AddOneTiles(tilus.Script):
    """y[rows, cols] = x + 1 in block_m x block_n tiles (float32 or float16)."""

    def __init__(self, dtype=float32, block_m=16, block_n=32, warps=4):
        super().__init__()
        self.dtype, self.block_m, self.block_n, self.warps = dtype, block_m, block_n, warps

    def __call__(self, rows: int32, cols: int32, x_ptr: void_p, y_ptr: void_p):
        gx, gy, offsets = self.tile_of_block(rows, cols, x_ptr, y_ptr)
        x = self.load_global(gx, offsets=offsets, shape=[self.block_m, self.block_n])
        self.store_global(gy, x + 1.0, offsets=offsets)

    def tile_of_block(self, rows: int32, cols: int32, x_ptr: void_p, y_ptr: void_p):
        """One block a tile: the grid, the two [rows, cols] views and this block's tile offsets."""
        self.attrs.blocks = [cdiv(rows, self.block_m), cdiv(cols, self.block_n)]
        self.attrs.warps = self.warps
        gx = self.global_view(x_ptr, dtype=self.dtype, shape=[rows, cols])
        gy = self.global_view(y_ptr, dtype=self.dtype, shape=[rows, cols])
        return gx, gy, [self.blockIdx.x * self.block_m, self.blockIdx.y * self.block_n]


class RowOfTiles(tilus.Script):
    """y[r, :] = x[r, :] * 2 for each row r, a 1-D tile per block stored into a 2-D tensor
    (the row index is a bound of its own)."""

    def __init__(self, block_n=64, warps=2):
        super().__init__()
        self.block_n, self.warps = block_n, warps

    def __call__(self, rows: int32, cols: int32, x_ptr: ~float16, y_ptr: ~float16):
        self.attrs.blocks = [rows, cdiv(cols, self.block_n)]
        self.attrs.warps = self.warps
        gx = self.global_view(x_ptr, dtype=float16, shape=[rows, cols])
        gy = self.global_view(y_ptr, dtype=float16, shape=[rows, cols])
        x = self.load_global(gx, offsets=[self.blockIdx.x, self.blockIdx.y * self.block_n],
                             shape=[self.block_n], dims=[1])
        self.store_global(gy, x * 2.0, offsets=[self.blockIdx.x, self.blockIdx.y * self.block_n],
                          dims=[1])


def run_add_one(device, rows, cols, dtype):
    x = torch.randn(rows, cols, device=device).to(torch.float32 if dtype == float32 else torch.float16)
    y = torch.full_like(x, float("nan"))
    AddOneTiles(dtype)(rows, cols, x, y)
    torch.testing.assert_close(y, x + 1, rtol=0, atol=0)


def run_rows(device, rows, cols):
    x = torch.randn(rows, cols, device=device, dtype=torch.float16)
    y = torch.full_like(x, float("nan"))
    RowOfTiles()(rows, cols, x, y)
    torch.testing.assert_close(y, x * 2, rtol=0, atol=0)


class CopyAsyncTiles(AddOneTiles):
    """y[rows, cols] = x + 1 through shared memory: each block_m x block_n tile copied in
    with cp.async (whole tiles untested, edge tiles with a source size a chunk; emit_copy_async),
    then loaded and stored. `dtype` may be a packed one (uint4b: emit_copy_async_packed),
    which is copied as is (y = x)."""

    def __init__(self, dtype=float16, block_m=16, block_n=64, warps=4):
        super().__init__(dtype, block_m, block_n, warps)

    def __call__(self, rows: int32, cols: int32, x_ptr: void_p, y_ptr: void_p):
        gx, gy, offsets = self.tile_of_block(rows, cols, x_ptr, y_ptr)
        staged = self.shared_tensor(dtype=self.dtype, shape=[self.block_m, self.block_n])
        self.copy_async(gx, staged, offsets=offsets)
        self.copy_async_commit_group()
        self.copy_async_wait_group(0)
        self.sync()
        x = self.load_shared(staged)
        self.store_global(gy, x if self.dtype.is_subbyte() else x + 1.0, offsets=offsets)


def run_copy_async(device, rows, cols, dtype):
    """CopyAsyncTiles against torch, y poisoned first (float16, float32, or uint4b codes:
    the [rows, cols] tensor is a stream of rows * cols codes, two a byte, so cols even)."""
    if dtype == uint4b:
        assert cols % 2 == 0
        x = torch.randint(0, 256, (rows * cols // 2,), dtype=torch.uint8, device=device)
        y = torch.full_like(x, 0xAB)
        CopyAsyncTiles(uint4b)(rows, cols, x, y)
        torch.testing.assert_close(y, x, rtol=0, atol=0)
        return
    x = torch.randn(rows, cols, device=device).to(torch.float32 if dtype == float32 else torch.float16)
    y = torch.full_like(x, float("nan"))
    CopyAsyncTiles(dtype)(rows, cols, x, y)
    torch.testing.assert_close(y, x + 1, rtol=0, atol=0)
