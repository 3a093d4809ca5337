"""Scripts that store register tiles at runtime offsets, for the interior-tile path of
store_global (csrc/codegen/emit_memory.cc: a tile wholly inside its tensor is stored
without per-element tests, one at an edge keeps them): the codegen test reads the source,
the interpreter and GPU tests run both paths against torch (run_add_one, run_rows), the
outputs poisoned first."""

import torch

import tilus
from tilus import float16, float32, int32, void_p
from tilus.utils import cdiv


class AddOneTiles(tilus.Script):
    """y[rows, cols] = x + 1 in block_m x block_n tiles (float32 or float16)."""

    def __init__(self, dtype=float32, block_m=16, block_n=32, warps=4):
        super().__init__()
        self.dtype, self.block_m, self.block_n, self.warps = dtype, block_m, block_n, warps

    def __call__(self, rows: int32, cols: int32, x_ptr: void_p, y_ptr: void_p):
        self.attrs.blocks = [cdiv(rows, self.block_m), cdiv(cols, self.block_n)]
        self.attrs.warps = self.warps
        gx = self.global_view(x_ptr, dtype=self.dtype, shape=[rows, cols])
        gy = self.global_view(y_ptr, dtype=self.dtype, shape=[rows, cols])
        offsets = [self.blockIdx.x * self.block_m, self.blockIdx.y * self.block_n]
        x = self.load_global(gx, offsets=offsets, shape=[self.block_m, self.block_n])
        self.store_global(gy, x + 1.0, offsets=offsets)


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
