"""store_global's interior and edge paths on CUDA (tests/codegen/test_store_tiles_source.py
reads the source): sizes that are and are not multiples of the tile, outputs poisoned, every
element compared with torch."""

import pytest
import torch

from tests.store_tile_kernels import AddOneTiles, RowOfTiles
from tilus import float16, float32

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("rows,cols", [(64, 128), (37, 70), (16, 33), (1, 1), (65, 97)])
@pytest.mark.parametrize("dtype", [float32, float16])
def test_tiles_at_and_inside_the_edges(rows, cols, dtype):
    torch_dtype = torch.float32 if dtype == float32 else torch.float16
    x = torch.randn(rows, cols, device="cuda").to(torch_dtype)
    y = torch.full_like(x, float("nan"))
    AddOneTiles(dtype)(rows, cols, x, y)
    torch.testing.assert_close(y, x + 1, rtol=0, atol=0)


@pytest.mark.parametrize("rows,cols", [(5, 150), (3, 128), (7, 8)])
def test_row_tiles(rows, cols):
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
    y = torch.full_like(x, float("nan"))
    RowOfTiles()(rows, cols, x, y)
    torch.testing.assert_close(y, x * 2, rtol=0, atol=0)
