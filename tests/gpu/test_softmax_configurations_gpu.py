"""examples/softmax.py at fixed configurations on rows of unknown alignment (odd lengths:
each row starts at another misalignment), against torch on poisoned outputs. The tuned
tests (test_rowwise_examples_gpu.py) run one configuration a shape; here every path's
layouts meet: realigned loads in the passes that only reduce, single elements where a
pass stores, the row statistics broadcast between them (block_m rows a block)."""

import itertools

import pytest
import torch

import tilus

pytestmark = pytest.mark.gpu

_TILUS = {torch.float16: tilus.float16, torch.bfloat16: tilus.bfloat16, torch.float32: tilus.float32}


def _check(sm, make, m, n, dtype, skip_refused=True):
    """Runs every configuration `make()` yields on m x n rows against torch on a poisoned
    output; one the script refuses (ValueError) is skipped, or with skip_refused False
    fails the test. Shared with test_softmax_copy_rows_gpu.py."""
    x = (torch.randn(m, n, device="cuda") * 4).to(dtype)
    ref = torch.softmax(x.float(), dim=1).to(dtype)
    tol = dict(atol=1e-5, rtol=1e-4) if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    ran = 0
    for config in make():
        try:
            script = sm.Softmax(_TILUS[dtype], **config)
        except ValueError:
            if not skip_refused:
                raise
            continue  # (a tile the registers or shared memory cannot hold)
        y = torch.full_like(x, float("nan"))
        script(m, n, sm._multiprocessors(x.device), x, y)
        torch.testing.assert_close(y, ref, **tol, msg=lambda text: f"{config}: {text}")
        ran += 1
    assert ran > 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("block_m", [1, 2, 4])
def test_long_rows_every_path_gpu(example, dtype, block_m):
    sm = example("softmax")

    def configs():
        for persistent, split, prefetch, tiles in itertools.product([False, True], [1, 2], [False, True], [0, 3]):
            yield dict(block_n=4096, block_m=block_m, warps=8, persistent=persistent, staged=False,
                       row_tiles=tiles, long_rows=True, long_split=split, prefetch=prefetch)

    _check(sm, configs, 37, 9001, dtype)  # three tiles a row


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("block_m", [1, 2, 4])
def test_one_tile_rows_every_path_gpu(example, dtype, block_m):
    sm = example("softmax")

    def configs():
        for warps, (persistent, staged) in itertools.product([4, 8], [(False, False), (True, False), (True, True)]):
            yield dict(block_n=1024, block_m=block_m, warps=warps, persistent=persistent, staged=staged)

    _check(sm, configs, 301, 781, dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("n", [9001, 8200, 50257])
def test_long_rows_from_their_16_byte_boundary_gpu(example, dtype, n):
    """`shifted` (the wrapper's walk of long rows not a multiple of 16: vector loads and
    stores from each row's 16-byte boundary, the head element by element): rows of 9001
    start at every misalignment, rows of 8200 fp16 at 0 or 8 bytes."""
    sm = example("softmax")

    def configs():
        for persistent, split, prefetch, tiles in itertools.product([False, True], [1, 2], [False, True], [0, 3]):
            if tiles * 4096 < n:
                tiles = 0 if tiles == 0 else (n + 4095) // 4096
            yield dict(block_n=4096, block_m=1, warps=8, persistent=persistent, staged=False, row_tiles=tiles,
                       long_rows=True, long_split=split, prefetch=prefetch, shifted=True)

    _check(sm, configs, 37, n, dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("n", [781, 4104, 32001])
def test_one_tile_rows_from_their_16_byte_boundary_gpu(example, dtype, n):
    """`shifted` rows of one tile: one a block, or persistent with the next row in
    registers or (staged) in shared memory; rows of 781 and 32001 start at every
    misalignment, rows of 4104 fp16 at 0 or 8 bytes."""
    sm = example("softmax")
    block_n = 1 << (n - 1).bit_length()

    def configs():
        for warps, (persistent, staged) in itertools.product([8, 16], [(False, False), (True, False), (True, True)]):
            yield dict(block_n=block_n, block_m=1, warps=warps, persistent=persistent, staged=staged,
                       long_split=1, prefetch=False, shifted=True)

    _check(sm, configs, 301, n, dtype)
