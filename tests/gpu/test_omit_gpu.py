"""tilus.option.debug.omit on the GPU: builds without their products compute the
accumulators' initial values, builds without their loads still run to the end (every
mbarrier wait completes), and the full build after them is the right one again. The
generated code is checked in tests/codegen/test_omit_source.py."""

import math

import pytest
import torch

import tilus
from tests.operands import matmul_operands
from tilus import _C

pytestmark = pytest.mark.gpu

HOPPER = _C.runtime.cuda_available() and _C.runtime.arch_string() == "sm_90a"
needs_hopper = pytest.mark.skipif(not HOPPER, reason="TMA and wgmma need an sm_90a GPU")


def _v5(example):
    return example("matmul_v5_splitk").MatmulV5(num_warps=4, block_m=128, block_n=128, block_k=32, num_stages=3,
                                                split_k_factor=1)


def test_seed_matmul_without_products_then_without_loads_then_whole(reset_build_debug_options, example):
    m, n, k = 1000, 1040, 528
    a, b = matmul_operands(m, n, k, torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    tilus.option.debug.omit("mma")
    _v5(example)(m, n, k, a, b, c)
    assert bool((c == 0).all())  # the accumulator's initial value, stored everywhere
    tilus.option.debug.omit("loads")
    c.fill_(float("nan"))
    _v5(example)(m, n, k, a, b, c)
    torch.cuda.synchronize()  # ran to the end: every copy wait completed without its copies
    tilus.option.debug.omit(None)
    _v5(example)(m, n, k, a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-2)


@needs_hopper
@pytest.mark.parametrize("cluster_m, block_m, k_boxes", [(1, 128, 1), (2, 128, 1), (1, 64, 2)])
def test_warp_specialised_matmul_parts(reset_build_debug_options, example, cluster_m, block_m, k_boxes):
    """Explicit TMA loads on mbarriers with transaction counts (multicast in clusters):
    without the loads the barriers complete on their arrivals alone."""
    ex = example("matmul_warp_specialized")
    m, n, k = 300, 1032, 1040
    a = torch.randn(m, k, device="cuda").half()
    b = (torch.randn(n, k, device="cuda") / math.sqrt(k)).half()
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")

    def kernel():
        return ex.MatmulWarpSpecialized(block_m=block_m, block_n=128, stages=4, group_m=8, cluster_m=cluster_m,
                                        epilogue="tma", k_boxes=k_boxes, num_blocks=6)

    tilus.option.debug.omit("mma")
    kernel()(m, n, k, a, b, c, 0.5)
    assert bool((c == 0).all())
    tilus.option.debug.omit("loads")
    kernel()(m, n, k, a, b, c, 0.5)
    torch.cuda.synchronize()
    tilus.option.debug.omit(None)
    kernel()(m, n, k, a, b, c, 0.5)
    torch.testing.assert_close(c.float(), (a.float() @ b.float().T) * 0.5, rtol=2e-2, atol=2e-2)
