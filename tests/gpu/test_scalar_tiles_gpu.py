"""Rank-0 stores, shared .item()/.item_ptr() and multi-element .tolist() on the GPU
against torch: fresh random data, odd sizes, outputs poisoned (NaN / -7)."""

import pytest
import torch

from tests.interp.test_scalar_tiles import SharedItemPtr, rank_zero_reference, run_rank_zero, run_tolist

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n,i,j", [(37, 5, 2), (1, 0, 0), (128, 127, 1), (300, 3, 0), (1000, 999, 2)])
@pytest.mark.parametrize("warps", [1, 4, 8])
def test_rank_zero_tiles_store_into_one_element(n, i, j, warps):
    x, y = run_rank_zero(n, i, j, warps, device="cuda")
    torch.testing.assert_close(y, rank_zero_reference(x, i, j), rtol=1e-4, atol=1e-4, equal_nan=True)


@pytest.mark.parametrize("m,n", [(1, 1), (2, 3), (3, 5), (1, 7), (4, 8), (5, 33)])
@pytest.mark.parametrize("warps", [1, 4])
@pytest.mark.parametrize("shared", [False, True])
def test_tolist_gives_every_element_in_row_major_order(m, n, warps, shared):
    x, y = run_tolist(m, n, warps, shared, device="cuda")
    torch.testing.assert_close(y, x * 3 + torch.arange(m * n, dtype=torch.float32))


@pytest.mark.parametrize("a,b,same", [(1, 2, 1), (2, 1, 0), (0, 0, 0), (3, 5, 0)])
def test_shared_item_ptr_is_the_elements_address(a, b, same):
    # written through a generic pointer into shared memory, read back with load_shared
    y = torch.full((3,), -7, dtype=torch.int32, device="cuda")
    SharedItemPtr("write")(y, a, b)
    assert y.cpu().tolist() == [same, 1, a * 10 + b]
