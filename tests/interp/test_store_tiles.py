"""The interior/edge tile-store scripts in the interpreter (the CUDA twin is
tests/gpu/test_store_tiles_gpu.py): poisoned outputs, every element compared."""

import pytest
import torch

from tests.store_tile_kernels import AddOneTiles, RowOfTiles
from tilus import float16, float32


@pytest.mark.parametrize("rows,cols", [(64, 128), (37, 70), (1, 1)])
@pytest.mark.parametrize("dtype", [float32, float16])
def test_tiles_at_and_inside_the_edges(rows, cols, dtype):
    x = torch.randn(rows, cols).to(torch.float32 if dtype == float32 else torch.float16)
    y = torch.full_like(x, float("nan"))
    AddOneTiles(dtype)(rows, cols, x, y)
    torch.testing.assert_close(y, x + 1, rtol=0, atol=0)


def test_row_tiles():
    x = torch.randn(5, 150, dtype=torch.float16)
    y = torch.full_like(x, float("nan"))
    RowOfTiles()(5, 150, x, y)
    torch.testing.assert_close(y, x * 2, rtol=0, atol=0)
