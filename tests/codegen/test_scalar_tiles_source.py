"""The CUDA of rank-0 stores, shared .item()/.item_ptr() and multi-element .tolist()
compiles with NVRTC for sm_80 and sm_90a, and lowers as intended: a rank-0 store is one
guarded scalar store by one thread, item_ptr is the element's address in the shared
allocation, tolist reads the tile through shared memory once."""

import pytest
import torch

from tests.codegen.nvrtc_compile import kernel_source, require_nvrtc
from tests.interp.test_scalar_tiles import RankZeroStores, SharedItemPtr, ToList

require_nvrtc()

ARCHS = ["sm_80", "sm_90a"]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n,warps", [(37, 4), (128, 1), (300, 8)])
def test_rank_zero_stores_compile(arch, n, warps):
    src = kernel_source(RankZeroStores(n, warps), (torch.zeros(n), torch.zeros(3, n + 2), 1, 1), arch)
    # each rank-0 store writes its one element from one thread, no vector
    assert "store_global_vec" not in src


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("via", ["compare", "write"])
def test_shared_item_ptr_compiles(arch, via):
    src = kernel_source(SharedItemPtr(via), (torch.zeros(3, dtype=torch.int32), 1, 2), arch)
    assert "s_1_ptr = s + (((s_1_index0 * 6) + s_1_index1));" in src  # &s[a, b], row-major 4x6


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m,n,warps,shared,exchange", [
    (2, 3, 4, False, False),  # 6 elements: the default layout gives every thread all of them
    (5, 33, 4, False, True),  # spread over the threads: one exchange through shared memory
    (5, 33, 2, True, True),
    (1, 1, 4, False, False),
])
def test_tolist_compiles(arch, m, n, warps, shared, exchange):
    src = kernel_source(ToList(m, n, warps, shared), (torch.zeros(m * n), torch.zeros(m * n)), arch)
    assert ("tolist: every thread reads" in src) == exchange
    if exchange:
        assert src.count("__syncthreads") >= 2
