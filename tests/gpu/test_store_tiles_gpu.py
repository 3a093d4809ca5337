"""store_global's interior and edge paths on CUDA (tests/codegen/test_store_tiles_source.py
reads the source): sizes that are and are not multiples of the tile, outputs poisoned, every
element compared with torch."""

import pytest

from tests.store_tile_kernels import run_add_one, run_rows
from tilus import float16, float32

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("rows,cols", [(64, 128), (37, 70), (16, 33), (1, 1), (65, 97)])
@pytest.mark.parametrize("dtype", [float32, float16])
def test_tiles_at_and_inside_the_edges(rows, cols, dtype):
    run_add_one("cuda", rows, cols, dtype)


@pytest.mark.parametrize("rows,cols", [(5, 150), (3, 128), (7, 8)])
def test_row_tiles(rows, cols):
    run_rows("cuda", rows, cols)
