"""cp.async tile copies on CUDA, whole tiles (no size test) and edge tiles (a source size a
chunk) side by side (tests/codegen/test_copy_async_tiles_source.py reads the source):
sizes that are and are not multiples of the tile, outputs poisoned, every element compared
with torch; with TMA lowering off (on sm_90a the copies then stay cp.async) and on."""

import pytest

import tilus
from tests.store_tile_kernels import run_copy_async
from tilus import float16, float32, uint4b

pytestmark = pytest.mark.gpu


@pytest.fixture(params=[False, True], ids=["cp.async", "tma-where-it-can"])
def copy_tma(request):
    tilus.option.codegen(copy_tma=request.param)
    yield request.param
    tilus.option.reset_codegen()


@pytest.mark.parametrize("rows,cols", [(64, 128), (37, 72), (16, 40), (1, 8), (65, 200)])
@pytest.mark.parametrize("dtype", [float16, float32])
def test_tiles_at_and_inside_the_edges(copy_tma, rows, cols, dtype):
    run_copy_async("cuda", rows, cols, dtype)


@pytest.mark.parametrize("rows,cols", [(64, 128), (37, 72), (3, 34)])
def test_packed_tiles(copy_tma, rows, cols):
    run_copy_async("cuda", rows, cols, uint4b)
