"""The interior/edge tile-store scripts in the interpreter (the CUDA twin is
tests/gpu/test_store_tiles_gpu.py): poisoned outputs, every element compared."""

import pytest

from tests.store_tile_kernels import run_add_one, run_rows
from tilus import float16, float32


@pytest.mark.parametrize("rows,cols", [(64, 128), (37, 70), (1, 1)])
@pytest.mark.parametrize("dtype", [float32, float16])
def test_tiles_at_and_inside_the_edges(rows, cols, dtype):
    run_add_one("cpu", rows, cols, dtype)


def test_row_tiles():
    run_rows("cpu", 5, 150)
